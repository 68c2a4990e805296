package executor

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestResultMatchesTheEngines: the public Result (documented here) and the
// engine layer's carry the same fields, and a converted result marshals to
// the same JSON: a field added below and not here fails.
func TestResultMatchesTheEngines(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[Result](), reflect.TypeFor[engine.Result]()},
		{reflect.TypeFor[ToolCall](), reflect.TypeFor[engine.ToolCall]()},
		{reflect.TypeFor[KernelInfo](), reflect.TypeFor[engine.KernelInfo]()},
		{reflect.TypeFor[DiscardedFile](), reflect.TypeFor[engine.DiscardedFile]()},
	} {
		require.Equal(t, pair[1].NumField(), pair[0].NumField(), pair[0].Name())
		for i := range pair[0].NumField() {
			a, b := pair[0].Field(i), pair[1].Field(i)
			require.Equal(t, b.Name, a.Name, pair[0].Name())
			require.Equal(t, b.Tag, a.Tag, a.Name)
		}
	}
	code := 3
	full := engine.Result{Status: "error", Output: "o", ToolCallsMade: 2, DurationSeconds: 1.5, ExitCode: &code, Mode: "project",
		Sandbox: "wasm", StdoutTruncated: true, StdoutBytesCaptured: 1, StdoutBytesTotal: 2, StdoutBytesOmitted: 1,
		Error: "e", Hint: "h", Warning: "w", StdoutSpillPath: "/s", ToolCalls: []engine.ToolCall{{Tool: "terminal", DurationMS: 1, OK: true}},
		DiscardedFiles: []engine.DiscardedFile{{Path: "a", Size: 1}}, DiscardedFilesOmitted: 4, Blocked: true,
		Kernel: &engine.KernelInfo{Reused: true, ExecutionCount: 2, StateReset: true, Ended: true, Note: "n", WaitedSeconds: 0.5}}
	want, err := json.Marshal(full)
	require.NoError(t, err)
	got, err := json.Marshal(fromEngine(full))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}
