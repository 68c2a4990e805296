package executor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

func ExampleExecutor_Execute() {
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg})
	defer ex.Close(context.Background())

	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)

	res, err := ex.Execute(context.Background(), executor.Request{
		Mode:    "strict",
		Workdir: dir,
		Code: `from hermes_tools import read_file
r = read_file("notes.txt")
print(r["total_lines"], r["content"].splitlines()[1])
`,
	})
	fmt.Println(err, res.Status, res.ToolCallsMade)
	fmt.Print(res.Output)
	// Output:
	// <nil> success 1
	// 2 2|beta
}

func TestNormalizeMode(t *testing.T) {
	for in, want := range map[string]struct {
		mode string
		ok   bool
	}{
		"strict": {"strict", true}, " STRICT ": {"strict", true}, "Project": {"project", true},
		"": {"project", false}, "sandbox": {"project", false},
	} {
		mode, ok := executor.NormalizeMode(in)
		require.Equal(t, want.mode, mode, in)
		require.Equal(t, want.ok, ok, in)
	}
}

func TestExecuteRefusals(t *testing.T) {
	cfg := config.Default()
	var logs []string
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(), Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	defer ex.Close(context.Background())
	ctx := context.Background()

	res, err := ex.Execute(ctx, executor.Request{Code: "import sys\nprint(1)", Mode: "nonsense", Workdir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "project", res.Mode, "an unknown mode falls back to project")
	require.Contains(t, logs[0], `unknown mode "nonsense"`)

	for _, mode := range []string{"strict", "project"} {
		res, err = ex.Execute(ctx, executor.Request{Code: "print(1)", Mode: mode, Workdir: filepath.Join(t.TempDir(), "missing")})
		require.Error(t, err)
		require.Contains(t, err.Error(), "working dir")
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "working dir")
	}

	require.NoError(t, ex.Close(ctx))
	require.NoError(t, ex.Close(ctx), "Close is idempotent")
}
