package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/gittree"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// TestEmbedProgram is an embedder's first five minutes: testdata/embed, a
// separate module, depends on this one through its module path and is
// built with `go run` alone, no `make assets`. The dependency is a copy of
// the files git tracks in this checkout (what the module proxy would
// serve), so the test proves the committed interpreter is enough. The
// program replaces web_search with its own handler and prints the result
// JSON of a strict script that calls it.
func TestEmbedProgram(t *testing.T) {
	t.Parallel()
	testenv.SkipUnderWine(t, "wine has no go command (nor git) to build the embedding program; it is built and run by this test on Linux")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH, so the embedding program cannot be built: install Go (https://go.dev/dl) or put it on PATH: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)

	// The module as published: the tracked files only (working-tree
	// contents), so an untracked or ignored build output cannot help.
	module := filepath.Join(t.TempDir(), "hermes-wasm-exec")
	copied, err := gittree.CopyTracked(root, module)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(module, "pyodide-assets", "dist", "python.wasm"), "the interpreter is a committed file")
	program := filepath.Join(module, "testdata", "embed")

	env := []string{}
	for _, kv := range os.Environ() {
		// The program's module is built as its own: no workspace, and no
		// GOFLAGS (-mod=mod would hide a stale go.sum).
		if !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOWORK=") && !strings.HasPrefix(kv, "HERMES_HOME=") &&
			!strings.HasPrefix(kv, "HERMES_WASM_INTERPRETER=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GOWORK=off", "HERMES_HOME="+t.TempDir())
	t.Logf("copied %d tracked files; building %s", copied, program)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "run", "-mod=readonly", ".")
	cmd.Dir = program
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if strings.Contains(stderr.String(), "go.mod") || strings.Contains(stderr.String(), "go.sum") {
		t.Fatalf("testdata/embed's module files are stale (the main module's requirements changed?): run `cd testdata/embed && go mod tidy`\n%s", stderr.String())
	}
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	var res engine.Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "strict", res.Mode)
	require.Equal(t, "1 Embedded result one for wasm sandboxes https://example.com/1\n2 Embedded result two for wasm sandboxes https://example.com/2\n", res.Output)
	require.Equal(t, 1, res.ToolCallsMade)
	require.Equal(t, []engine.ToolCall{{Tool: "web_search", DurationMS: res.ToolCalls[0].DurationMS, OK: true}}, res.ToolCalls)
	require.Contains(t, stderr.String(), `msg="execute done"`, "the program's slog logger got the event")
}
