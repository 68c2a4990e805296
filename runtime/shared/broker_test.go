package shared

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func okTool(_ context.Context, tool string, args json.RawMessage) map[string]any {
	switch tool {
	case "terminal":
		return map[string]any{"output": "", "exit_code": 0, "error": nil}
	case "patch":
		return map[string]any{"success": false, "error": "Could not find a match for old_string in the file"}
	case "read_file":
		panic("disk on fire")
	}
	return map[string]any{"tool": tool, "args": string(args)}
}

func decode(t *testing.T, line []byte) map[string]any {
	t.Helper()
	require.True(t, len(line) > 0 && line[len(line)-1] == '\n', "a response is one line")
	var m map[string]any
	require.NoError(t, json.Unmarshal(line, &m))
	return m
}

func TestBrokerBudgetAndLog(t *testing.T) {
	b := NewBroker(okTool, 2, nil)
	ctx := context.Background()
	require.Nil(t, decode(t, b.Serve(ctx, []byte(`{"tool":"terminal","args":{"command":"ls"}}`)))["error"])
	require.Equal(t, "Could not find a match for old_string in the file", decode(t, b.Serve(ctx, []byte(`{"tool":"patch","args":{}}`)))["error"])
	for range 3 {
		require.Equal(t, "Tool call limit reached (2). No more tool calls allowed in this execution.",
			decode(t, b.Serve(ctx, []byte(`{"tool":"terminal","args":{}}`)))["error"])
	}
	made, calls := b.Made()
	require.Equal(t, 2, made)
	require.Len(t, calls, 2)
	require.Equal(t, "terminal", calls[0].Tool)
	require.True(t, calls[0].OK)
	require.False(t, calls[1].OK)
}

func TestBrokerRefusals(t *testing.T) {
	b := NewBroker(okTool, 10, []string{"read_file", "web_search"})
	ctx := context.Background()
	for line, want := range map[string]string{
		`{"tool":"execute_code","args":{}}`:  "Unknown tool",
		`{"tool":"delegate_task","args":{}}`: "Unknown tool",
		`{"tool":"terminal","args":{}}`:      "Tool terminal is not enabled",
		`not json`:                           "Malformed tool request",
		`{"tool":"read_file","args":{}}`:     "Tool read_file failed internally: disk on fire",
		`{"tool": 5}`:                        "Malformed tool request",
		`{"op":"exit","exit":{"kind":"boom"`: "Malformed tool request",
	} {
		require.Contains(t, decode(t, b.Serve(ctx, []byte(line)))["error"], want, line)
	}
	made, _ := b.Made()
	require.Equal(t, 1, made, "refused calls do not count; the panicking call does")
	require.Nil(t, b.Report())
	require.Equal(t, true, decode(t, b.Serve(ctx, []byte(`{"op":"exit","exit":{"kind":"exception","type":"ValueError","message":"x","traceback":"tb"}}`)))["ok"])
	require.Equal(t, "ValueError", b.Report().Type)
}

func TestBrokerConcurrent(t *testing.T) {
	b := NewBroker(func(_ context.Context, tool string, args json.RawMessage) map[string]any {
		return map[string]any{"echo": string(args)}
	}, 1000, nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			args := strings.Repeat("x", i)
			res := b.Call(context.Background(), "web_search", json.RawMessage(`"`+args+`"`))
			require.Equal(t, `"`+args+`"`, res["echo"])
		})
	}
	wg.Wait()
	made, calls := b.Made()
	require.Equal(t, 50, made)
	require.Len(t, calls, 50)
}

func FuzzBrokerServe(f *testing.F) {
	for _, s := range []string{`{"tool":"terminal","args":{"command":"ls"}}`, `{"op":"exit","exit":{"kind":"ok"}}`, `{`, `[]`, `null`, `{"tool":null}`} {
		f.Add([]byte(s))
	}
	b := NewBroker(okTool, 1<<30, nil)
	f.Fuzz(func(t *testing.T, line []byte) {
		out := b.Serve(context.Background(), line)
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("response is not JSON: %q", out)
		}
	})
}

func TestStubSignatures(t *testing.T) {
	src := GenerateStub(StubOptions{HostCall: true})
	for _, sig := range []string{
		"def web_search(query: str, limit: int = 5) -> dict:",
		"def web_extract(urls: list, char_limit: int = None) -> dict:",
		"def read_file(path: str, offset: int = 1, limit: int = 500) -> dict:",
		"def write_file(path: str, content: str) -> dict:",
		`def search_files(pattern: str, target: str = "content", path: str = ".", file_glob: str = None, limit: int = 50, offset: int = 0, output_mode: str = "content", context: int = 0) -> dict:`,
		`def patch(path: str = None, old_string: str = None, new_string: str = None, replace_all: bool = False, mode: str = "replace", patch: str = None) -> dict:`,
		"def terminal(command: str, timeout: int = None, workdir: str = None) -> dict:",
		"def json_parse(text):",
		"def shell_quote(s):",
		"def retry(fn, max_attempts=3, delay=2):",
		"_roundtrip = _hermes_host.call",
	} {
		require.Contains(t, src, sig)
	}
	require.NotContains(t, src, "execute_code")
	require.NotContains(t, src, "delegate_task")
	require.Len(t, Signatures(), 7)
	for i, spec := range toolSpecs {
		require.Equal(t, ToolNames[i], spec.name, "stubs follow the whitelist")
	}
}

func TestHint(t *testing.T) {
	exc := func(typ, msg string) *ExitReport { return &ExitReport{Kind: "exception", Type: typ, Message: msg} }
	require.Contains(t, Hint(ModeStrict, exc("ImportError", "cannot import name 'delegate_task' from 'hermes_tools' (/hermes_tools.py)")), "hermes_tools has no delegate_task")
	require.Contains(t, Hint(ModeStrict, exc("ModuleNotFoundError", "No module named 'pandas'")), "strict mode")
	require.Contains(t, Hint(ModeProject, exc("ModuleNotFoundError", "No module named 'pandas'")), "not installed")
	require.Contains(t, Hint(ModeStrict, exc("TypeError", "the JSON object must be str, bytes or bytearray, not dict")), "return dicts")
	require.Contains(t, Hint(ModeStrict, exc("OSError", "[Errno 51] No space left on device")), "code_execution.disk_limit_mb")
	require.Empty(t, Hint(ModeProject, exc("OSError", "[Errno 28] No space left on device")), "project mode has no disk limit: a full host disk is not the config's doing")
	require.Contains(t, Hint(ModeStrict, exc("AttributeError", "'dict' object has no attribute 'split'")), "return dicts")
	require.Contains(t, Hint(ModeStrict, exc("EOFError", "EOF when reading a line")), "stdin is empty")
	require.Empty(t, Hint(ModeStrict, exc("ValueError", "bad")))
	require.Empty(t, Hint(ModeStrict, nil))
}

func TestMergeEnv(t *testing.T) {
	require.Equal(t, []string{"A=1", "C=3", "B=9", "D=4"}, MergeEnv([]string{"A=1", "B=2", "C=3"}, []string{"B=9", "D=4"}))
}
