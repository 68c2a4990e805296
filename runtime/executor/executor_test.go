package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
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

// An embedder's Config with an unknown mode runs scripts in the sandbox, with the warning, and
// describes execute_code as strict: a typo never drops the sandbox.
func TestConfigUnknownModeRunsStrict(t *testing.T) {
	cfg := config.Default()
	cfg.CodeExecution.Mode = "Stict"
	logs := &lockedLog{}
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(), Logger: logs.logger()})
	defer ex.Close(context.Background())
	res, err := ex.Execute(context.Background(), executor.Request{Code: "import sys\nprint(sys.platform)", Workdir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "strict", res.Mode)
	require.Equal(t, "wasi\n", res.Output)
	require.Contains(t, logs.String(), `level=WARN msg="unknown mode, falling back to strict" mode=Stict`)
	require.Equal(t, executor.ExecuteCodeSchema(cfg, "strict", nil), executor.ExecuteCodeSchema(cfg, "", nil))
}

func TestExecuteRefusals(t *testing.T) {
	cfg := config.Default()
	logs := &lockedLog{}
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(), Logger: logs.logger()})
	defer ex.Close(context.Background())
	ctx := context.Background()

	// An unknown mode runs in the sandbox, never without it.
	res, err := ex.Execute(ctx, executor.Request{Code: "import sys\nprint(sys.platform)", Mode: "stict", Workdir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "strict", res.Mode, "an unknown mode falls back to strict")
	require.Equal(t, "wasi\n", res.Output, "and the script ran in the sandbox")
	require.Contains(t, logs.String(), `level=WARN msg="unknown mode, falling back to strict" mode=stict`)

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

// modes are both execution modes; project mode runs the host's python
// (or, without one, the embedded interpreter over the working dir).
var modes = []string{"strict", "project"}

// newTestExecutor returns an executor in a private Hermes home whose
// web_search handler reports each call on called before answering.
func newTestExecutor(t *testing.T) (ex *executor.Executor, called chan string) {
	t.Helper()
	called = make(chan string, 16)
	cfg := config.Default()
	ex = executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(), Tools: map[string]executor.ToolHandler{
		"web_search": func(ctx context.Context, args json.RawMessage) map[string]any {
			called <- string(args)
			return map[string]any{"success": true, "data": map[string]any{"web": []any{}}}
		},
	}})
	t.Cleanup(func() { require.NoError(t, ex.Close(context.Background())) })
	return ex, called
}

// hermesToolList is a tool list as Hermes's enabled_tools holds it: the
// session's tools, most of which scripts cannot call.
var hermesToolList = []string{"terminal", "vision_analyze", "delegate_task", "browser_navigate", "web_search", "execute_code", "memory", "terminal"}

// TestToolSet: Request.Tools is intersected with the seven (unknown names
// are dropped silently), only the enabled tools can be imported from
// hermes_tools, and importing another fails with Python's ImportError and
// Hermes's hint. Both modes, one-shot and in a session kernel.
func TestToolSet(t *testing.T) {
	ex, called := newTestExecutor(t)
	ctx := context.Background()
	for _, mode := range modes {
		for _, session := range []string{"", "toolset-" + mode} {
			wd := t.TempDir()
			res, err := ex.Execute(ctx, executor.Request{Mode: mode, Workdir: wd, Session: session, Tools: hermesToolList,
				Code: "import hermes_tools\nfrom hermes_tools import terminal, web_search\n" +
					"print(sorted(n for n in ('web_search', 'web_extract', 'read_file', 'write_file', 'search_files', 'patch', 'terminal', 'execute_code', 'delegate_task') if hasattr(hermes_tools, n)))\n" +
					"print(terminal('echo hi')['output'].strip(), web_search('q')['success'])\n"})
			require.NoError(t, err)
			require.Equal(t, "success", res.Status, res.Output)
			require.Equal(t, "['terminal', 'web_search']\nhi True\n", res.Output, "mode %s session %q", mode, session)
			require.Equal(t, 2, res.ToolCallsMade)
			<-called

			res, err = ex.Execute(ctx, executor.Request{Mode: mode, Workdir: wd, Session: session, Tools: hermesToolList,
				Code: "print('before')\nfrom hermes_tools import read_file\n"})
			require.NoError(t, err)
			require.Equal(t, "error", res.Status)
			require.Equal(t, 1, *res.ExitCode)
			require.Contains(t, res.Error, "ImportError: cannot import name 'read_file' from 'hermes_tools' (")
			require.Equal(t, "'read_file' is not available inside the execute_code sandbox. Importable tools here: terminal, web_search. For anything else, use the normal tool call instead of execute_code.", res.Hint)
			require.True(t, strings.HasPrefix(res.Output, "before\n\n--- stderr ---\nTraceback"), res.Output)

			// A tool outside the set is refused even when called past the module.
			res, err = ex.Execute(ctx, executor.Request{Mode: mode, Workdir: wd, Session: session, Tools: []string{"vision_analyze"},
				Code: "import hermes_tools\nprint(hermes_tools._call('terminal', {'command': 'echo no'})['error'])\n"})
			require.NoError(t, err)
			require.Equal(t, "Tool 'terminal' is not available in execute_code. Available: none\n", res.Output, "a list with none of the seven enables none")
			require.Equal(t, 0, res.ToolCallsMade)
		}
	}
}

// kernelOf returns res's kernel object, failing when there is none.
func kernelOf(t *testing.T, res executor.Result) *executor.KernelInfo {
	t.Helper()
	require.NotNil(t, res.Kernel, res.Output)
	return res.Kernel
}

// TestToolSetKernelKey: the tool set is part of a session kernel's
// identity. A call with another tool set gets a new kernel (Hermes keys
// its kernels on the tool set too), with a note that says why the earlier
// variables are not there; the first kernel is kept for calls with its
// tool set; the same set spelled differently is the same kernel.
func TestToolSetKernelKey(t *testing.T) {
	ex, _ := newTestExecutor(t)
	ctx := context.Background()
	for _, mode := range modes {
		wd := t.TempDir()
		call := func(tools []string, code string) executor.Result {
			t.Helper()
			res, err := ex.Execute(ctx, executor.Request{Mode: mode, Workdir: wd, Session: "key-" + mode, Tools: tools, Code: code})
			require.NoError(t, err)
			return res
		}
		res := call(nil, "x = 1")
		require.Equal(t, "success", res.Status, res.Output)
		require.False(t, kernelOf(t, res).Reused)

		// All seven, in another order and with other names: the same set.
		res = call(append([]string{"clarify"}, "terminal", "patch", "search_files", "write_file", "read_file", "web_extract", "web_search"), "x += 1\nprint(x)")
		require.Equal(t, "2\n", res.Output)
		require.True(t, kernelOf(t, res).Reused)
		require.Empty(t, kernelOf(t, res).Note)

		res = call(hermesToolList, "print(x)")
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "NameError: name 'x' is not defined")
		k := kernelOf(t, res)
		require.False(t, k.Reused)
		require.Equal(t, 1, k.ExecutionCount)
		require.Equal(t, "A new kernel: this call's tool set differs from that of the session's existing kernel, so the variables and imports of the calls made there are not here. That kernel is kept for calls that match it.", k.Note)

		res = call(hermesToolList, "x = 'second'")
		require.True(t, kernelOf(t, res).Reused)
		require.Empty(t, kernelOf(t, res).Note)

		res = call(nil, "print(x)")
		require.Equal(t, "2\n", res.Output, "the first kernel was kept")
		require.True(t, kernelOf(t, res).Reused)
		require.Equal(t, 3, kernelOf(t, res).ExecutionCount)
	}
}

// TestResultTexts asserts, in both modes, the texts a model sees when a
// call times out, is interrupted, prints too much or fails with a long
// stderr: Hermes's texts (internal/engine/execute.go says where they come
// from), exit_code -1 on timeout and interrupt.
func TestResultTexts(t *testing.T) {
	ex, called := newTestExecutor(t)
	ctx := context.Background()
	for _, mode := range modes {
		t.Run(mode+" timeout", func(t *testing.T) {
			res, err := ex.Execute(ctx, executor.Request{Mode: mode, Workdir: t.TempDir(), Timeout: 2 * time.Second,
				Code: "print('started', flush=True)\nwhile True:\n    pass\n"})
			require.NoError(t, err)
			require.Equal(t, "timeout", res.Status)
			require.Equal(t, "Script timed out after 2s and was killed.", res.Error)
			require.Equal(t, "started\n\n\n⏰ Script timed out after 2s and was killed.", res.Output)
			require.Equal(t, -1, *res.ExitCode)
			require.Nil(t, res.Kernel)
		})
		t.Run(mode+" kernel timeout", func(t *testing.T) {
			// One working dir for both calls: the kernel the first starts
			// is the one the second's timeout kills (a kernel is per
			// session and working dir), so none is left running over a
			// TempDir (which Windows could not remove: a live kernel
			// holds its working dir open, as a process's cwd is).
			session, wd := "timeout-"+mode, t.TempDir()
			_, err := ex.Execute(ctx, executor.Request{Mode: mode, Workdir: wd, Session: session, Code: "x = 1"})
			require.NoError(t, err)
			res, err := ex.Execute(ctx, executor.Request{Mode: mode, Workdir: wd, Session: session, Timeout: 2 * time.Second,
				Code: "import sys\nprint('started', flush=True)\nwhile True:\n    pass\n"})
			require.NoError(t, err)
			require.Equal(t, "timeout", res.Status)
			require.Equal(t, "Cell timed out after 2s; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.", res.Error)
			require.Equal(t, "started\n\n\n⏰ Cell timed out after 2s; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.", res.Output)
			require.Equal(t, -1, *res.ExitCode)
			require.True(t, kernelOf(t, res).Ended)
			require.Equal(t, "The session's kernel was killed, so its state (variables, imports, loaded data) is lost; the next call starts a fresh kernel.", kernelOf(t, res).Note)
		})
		t.Run(mode+" interrupt", func(t *testing.T) {
			// One-shot: the call's context is cancelled with a reason.
			cctx, cancel := context.WithCancelCause(ctx)
			go func() {
				<-called // the script printed and flushed before it called
				cancel(&engine.InterruptError{Reason: "the user pressed stop"})
			}()
			res, err := ex.Execute(cctx, executor.Request{Mode: mode, Workdir: t.TempDir(),
				Code: "import time\nfrom hermes_tools import web_search\nprint('sleeping', flush=True)\nweb_search('go')\ntime.sleep(60)\n"})
			require.NoError(t, err)
			require.Equal(t, "interrupted", res.Status)
			require.Equal(t, "Execution interrupted: the user pressed stop", res.Error)
			require.Equal(t, "sleeping\n\n[execution interrupted — the user pressed stop]", res.Output)
			require.Equal(t, -1, *res.ExitCode)

			// A session kernel: Interrupt, with the default reason.
			session := "interrupt-" + mode
			interrupted := make(chan bool, 1)
			go func() {
				<-called
				interrupted <- ex.Interrupt(session, "")
			}()
			res, err = ex.Execute(ctx, executor.Request{Mode: mode, Workdir: t.TempDir(), Session: session,
				Code: "import time\nfrom hermes_tools import web_search\nprint('sleeping', flush=True)\nweb_search('go')\ntime.sleep(60)\n"})
			require.NoError(t, err)
			require.Equal(t, "interrupted", res.Status)
			require.Equal(t, "Interrupted; the session kernel was killed and its state was lost.", res.Error)
			require.True(t, <-interrupted)
			require.Equal(t, "sleeping\n\n[execution interrupted — user sent a new message]", res.Output)
			require.Equal(t, -1, *res.ExitCode)
			require.True(t, kernelOf(t, res).Ended)
		})
		t.Run(mode+" truncation and stderr", func(t *testing.T) {
			res, err := ex.Execute(ctx, executor.Request{Mode: mode, Workdir: t.TempDir(),
				Code: "import sys\nsys.stdout.write('x' * 60000)\nsys.stderr.write('first error\\n' + 'e' * 15000 + 'LAST')\nsys.exit(3)\n"})
			require.NoError(t, err)
			require.Equal(t, "error", res.Status)
			require.Equal(t, 3, *res.ExitCode)
			require.True(t, res.StdoutTruncated)
			require.NotEmpty(t, res.StdoutSpillPath)
			warning := res.Warning
			if mode == config.ModeProject && testenv.UnderWine() {
				// wine has no Windows CPython: project mode ran the
				// embedded interpreter and says so after the truncation
				// note (project mode with a python is tested on Linux).
				var fallback string
				warning, fallback, _ = strings.Cut(warning, " No usable python on this host")
				require.NotEmpty(t, fallback, res.Warning)
			}
			literal := `"` + res.StdoutSpillPath + `"` // the path as a Python literal
			if runtime.GOOS == "windows" {
				literal = `r"` + res.StdoutSpillPath + `"`
			}
			require.Equal(t, "execute_code stdout was truncated (head/tail shown); the script did run. FULL output saved to "+res.StdoutSpillPath+
				` — page it with read_file(path=`+literal+`, offset=...) instead of re-running.`, warning)
			// stderr: the head only, 10,000 bytes.
			_, stderr, ok := strings.Cut(res.Output, "\n--- stderr ---\n")
			require.True(t, ok, res.Output)
			require.Equal(t, "first error\n"+strings.Repeat("e", 10_000-len("first error\n"))+"\n\n... [OUTPUT TRUNCATED - 5,016 bytes omitted out of 15,016 total] ...", stderr)
		})
	}
}

// lockedLog collects an executor's log events as slog's text lines.
type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// logger is a text logger into l at every level.
func (l *lockedLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
