package strict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cpustat"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// TestStrictKernel runs the kernel tests in parallel, on one engine (which
// shares testEngine's compilation cache) whose staging dirs are in a
// t.TempDir that must be empty once they are all done.
func TestStrictKernel(t *testing.T) {
	dir := t.TempDir()
	e := New(Options{CacheDir: testEngine(t).opts.CacheDir, TempDir: dir})
	require.NoError(t, e.Warm(context.Background(), 0))
	t.Cleanup(func() {
		e.Close(context.Background())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "staging dirs left behind")
	})
	for _, tc := range []struct {
		name string
		test func(*testing.T, *Engine)
	}{
		{"State", testKernelState},
		{"Exception", testKernelException},
		{"Exit", testKernelExit},
		{"MemoryCap", testKernelMemoryCap},
		{"LeftFiles", testKernelLeftFiles},
		{"Timeout", testKernelTimeout},
		{"OutputKeptOnStop", testKernelOutputKeptOnStop},
		{"MemoryErrorTraceback", testKernelMemoryErrorTraceback},
		{"InterruptSleep", testKernelInterruptSleep},
		{"Tools", testKernelTools},
		{"Flush", testKernelFlush},
		{"Close", testKernelClose},
		{"OverWorkdir", testKernelOverWorkdir},
		{"StartFailure", testKernelStartFailure},
		{"Pool", testKernelPool},
		{"SuspendResume", testKernelSuspendResume},
		{"SuspendOpenFiles", testKernelSuspendOpenFiles},
		{"SuspendOverWorkdir", testKernelSuspendOverWorkdir},
		{"SmallImages", testKernelSmallImages},
		{"ImageRefused", testKernelImageRefused},
		{"Copy", testKernelCopy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, e)
		})
	}
}

func startKernel(t testing.TB, e *Engine, spec engine.KernelSpec, overWorkdir bool) *strictKernel {
	t.Helper()
	var project *ProjectOptions
	if overWorkdir {
		project = &ProjectOptions{}
	}
	k, err := e.StartKernel(context.Background(), spec, project)
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	return k.(*strictKernel)
}

var kernelEnv = []string{"PATH=/usr/bin", "PYTHONUTF8=1", "PYTHONIOENCODING=utf-8"}

// snapEnv is an environment whose kernels start from the snapshot (and can
// be suspended).
var snapEnv = append([]string{"PATH=/usr/bin"}, engine.BaseInject()...)

// cell runs code as the kernel's next cell through engine.Execute.
func cell(t testing.TB, k engine.Kernel, code string, mod func(*engine.Request)) (engine.Result, error) {
	t.Helper()
	req := engine.Request{
		Code:         code,
		Mode:         config.ModeStrict,
		Timeout:      30 * time.Second,
		MaxToolCalls: 50,
		Tools:        echoTools,
	}
	if mod != nil {
		mod(&req)
	}
	return engine.Execute(context.Background(), k, req)
}

func okCell(t testing.TB, k engine.Kernel, code string) string {
	t.Helper()
	res, err := cell(t, k, code, nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	return res.Output
}

// requireGone checks that the kernel's instance has returned and its
// staging dir is removed.
func requireGone(t testing.TB, k *strictKernel) {
	t.Helper()
	select {
	case <-k.exited:
	default:
		t.Fatal("the kernel's instance is still running")
	}
	require.False(t, k.Alive())
	require.NoDirExists(t, k.staging)
}

func testKernelState(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	require.True(t, k.Alive())

	require.Equal(t, "", okCell(t, k, "x = 41\n"))
	require.Equal(t, "", okCell(t, k, "x += 1\n"))
	require.Equal(t, "42\n", okCell(t, k, "print(x)\n"))

	// Each cell's output is its own; what a cell leaves buffered is
	// flushed into its own result.
	require.Equal(t, "a\n", okCell(t, k, "import sys\nprint('a')\nsys.stderr.write('e')\n"))
	require.Equal(t, "b", okCell(t, k, "sys.stdout.write('b')\n"))
	require.Equal(t, "c\n", okCell(t, k, "print('c')\n"))

	// The kernel's __main__ is the cells' namespace; the sandbox is the
	// one-shot runs' (no host files, the scrubbed env), with the kernel
	// module staged.
	out := okCell(t, k, `import os, __main__
print(__name__, __main__.x, sorted(k for k in os.environ if k in ("PATH", "PYTHONUTF8", "HOME")))
print(sorted(os.listdir("/")), os.path.exists("/.hermes"))
def f(n):
    return n * 2
`)
	require.Equal(t, "__main__ 42 ['HOME', 'PATH', 'PYTHONUTF8']\n['__pycache__', '_hermes_kernel.py', '_hermes_runner.py', 'hermes_tools.py'] False\n", out)
	require.Equal(t, "84\n", okCell(t, k, "print(f(x))\n"))
	// The kernel loop runs from its cached bytecode.
	require.Contains(t, okCell(t, k, "import _hermes_kernel\nprint(_hermes_kernel.__cached__)\n"), "__pycache__/_hermes_kernel.")
	require.True(t, k.Alive())

	// Cells run one at a time; one whose context ends while it waits for
	// its turn never runs, and the kernel lives on. The first cell holds
	// the kernel in a tool call that returns only once the second has
	// timed out: events, not sleeps, order them.
	var wg sync.WaitGroup
	var first engine.Result
	running, release := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		first, _ = cell(t, k, "from hermes_tools import read_file\nread_file('hold')\nx = 'first'\nprint(x)\n", func(r *engine.Request) {
			r.Tools = func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				close(running)
				<-release
				return echoTools(ctx, tool, args)
			}
		})
	})
	<-running
	res, err := cell(t, k, "x = 'second'\n", func(r *engine.Request) { r.Timeout = 100 * time.Millisecond })
	close(release)
	require.NoError(t, err)
	require.Equal(t, config.StatusTimeout, res.Status)
	wg.Wait()
	require.Equal(t, "first\n", first.Output)
	require.True(t, k.Alive())
	require.Equal(t, "first\n", okCell(t, k, "print(x)\n"))
}

func testKernelException(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "x = 1\n")
	res, err := cell(t, k, "print('before')\ndef g():\n    raise ValueError('boom')\ng()\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, 1, *res.ExitCode, "as in a one-shot run")
	require.Contains(t, res.Error, "Traceback (most recent call last):")
	require.Regexp(t, `File "<cell 2>", line 4, in <module>\n\s+g\(\)\n`, res.Error)
	require.Regexp(t, `File "<cell 2>", line 3, in g\n\s+raise ValueError\('boom'\)\n`, res.Error)
	require.True(t, strings.HasSuffix(res.Error, "ValueError: boom"), res.Error)
	require.NotContains(t, res.Error, "_hermes_kernel")
	require.True(t, strings.HasPrefix(res.Output, "before\n\n--- stderr ---\nTraceback"), res.Output)

	// The kernel and its state survive.
	require.True(t, k.Alive())
	require.Equal(t, "1\n", okCell(t, k, "print(x)\n"))

	// A syntax error and a NameError are errors of their cell only.
	res, err = cell(t, k, "print('unclosed'\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "SyntaxError")
	require.Contains(t, res.Error, `File "<cell 4>", line 1`)
	res, err = cell(t, k, "undefined_name\n", nil)
	require.NoError(t, err)
	require.Contains(t, res.Error, "NameError: name 'undefined_name' is not defined")
	require.Contains(t, res.Hint+res.Error, "undefined_name")
	require.Equal(t, "2\n", okCell(t, k, "x += 1\nprint(x)\n"))

	// A traceback through a function of an earlier cell shows its line,
	// and inspect its source: before linecache is loaded, once it is, and
	// after the cache is cleared.
	okCell(t, k, "def h():\n    raise KeyError('deep')\n")
	for i, setup := range []string{"", "import linecache\n", "linecache.clearcache()\n"} {
		if setup != "" {
			okCell(t, k, setup)
		}
		okCell(t, k, fmt.Sprintf("def f%d():\n    return 'f%d body'\n", i, i))
		res, err = cell(t, k, "h()\n", nil)
		require.NoError(t, err)
		require.Regexp(t, `File "<cell \d+>", line 2, in h\n\s+raise KeyError\('deep'\)\n`, res.Error, "round %d", i)
		require.Contains(t, okCell(t, k, fmt.Sprintf("import inspect\nprint(inspect.getsource(f%d))\n", i)), fmt.Sprintf("return 'f%d body'", i))
	}
}

// What a cell leaves in a stream's buffer is its output, however it
// replaced or reconfigured the interpreter's unbuffered streams.
func testKernelFlush(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	require.Equal(t, "held", okCell(t, k, "import io, sys\nsys.stdout.reconfigure(write_through=False)\nprint('held', end='')\n"))
	require.Equal(t, "still held", okCell(t, k, "print('still held', end='')\n"))
	require.Equal(t, "through\n", okCell(t, k, "sys.stdout.reconfigure(write_through=True)\nprint('through')\n"))
	require.Equal(t, "buffered\n", okCell(t, k, "sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, 'w', closefd=False)))\nprint('buffered')\n"))
	require.Equal(t, "back\n", okCell(t, k, "sys.stdout = sys.__stdout__\nprint('back')\n"))
	res, err := cell(t, k, "sys.stderr.reconfigure(write_through=False)\nsys.stderr.write('err held')\nraise SystemError('x')\n", nil)
	require.NoError(t, err)
	require.Contains(t, res.Output, "err held")
}

func testKernelExit(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "x = 1\n")
	res, err := cell(t, k, "import sys\nprint('bye')\nsys.exit(3)\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, "Script exited with code 3", res.Error)
	require.Equal(t, 3, *res.ExitCode)
	require.Equal(t, "bye\n", res.Output)
	requireGone(t, k)

	_, err = k.Run(context.Background(), &engine.Job{Code: "print(1)\n", Broker: engine.NewBroker(echoTools, 1, nil)})
	require.ErrorIs(t, err, engine.ErrKernelClosed)
	res, err = cell(t, k, "print(1)\n", nil)
	require.ErrorIs(t, err, engine.ErrKernelClosed)
	require.Equal(t, config.StatusError, res.Status)
	require.NoError(t, k.Close())

	// exit() and sys.exit(0) end the kernel too, with success.
	k = startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	res, err = cell(t, k, "exit()\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	requireGone(t, k)
}

func testKernelMemoryCap(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv, MemoryLimitMB: 64}, false)
	okCell(t, k, "x = 'kept'\n")
	res, err := cell(t, k, "y = bytearray(200 * 1024 * 1024)\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "MemoryError")
	require.Equal(t, "kept\n", okCell(t, k, "print(x)\n"))
}

func testKernelTimeout(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	start := time.Now()
	res, err := cell(t, k, "print('started', flush=True)\nwhile True:\n    pass\n", func(r *engine.Request) { r.Timeout = time.Second })
	require.NoError(t, err)
	// Stopped at its timeout, not left spinning (loose for a loaded machine).
	require.Less(t, time.Since(start), 30*time.Second)
	require.Equal(t, config.StatusTimeout, res.Status)
	require.Equal(t, "Cell timed out after 1s; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.", res.Error)
	require.Equal(t, "started\n\n\n⏰ Cell timed out after 1s; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.", res.Output)
	requireGone(t, k)
	_, err = cell(t, k, "print(1)\n", nil)
	require.ErrorIs(t, err, engine.ErrKernelClosed)
}

func testKernelInterruptSleep(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "import time\n")
	ctx, cancel := context.WithCancelCause(context.Background())
	// The cell makes a tool call just before it sleeps; the interrupt comes
	// 300 ms after that, not at a fixed time from the start, which a
	// loaded machine may not have reached. (Should the interrupt still
	// come before the sleep, the result is the same.)
	var mu sync.Mutex
	var cancelled time.Time
	tools := func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
		time.AfterFunc(300*time.Millisecond, func() {
			mu.Lock()
			cancelled = time.Now()
			mu.Unlock()
			cancel(&engine.InterruptError{Reason: "stop"})
		})
		return echoTools(ctx, tool, args)
	}
	res, err := engine.Execute(ctx, k, engine.Request{
		Code: "from hermes_tools import read_file\nprint('sleeping', flush=True)\nread_file('x')\ntime.sleep(60)\nprint('woke')\n", Mode: config.ModeStrict,
		Timeout: 2 * time.Minute, MaxToolCalls: 5, Tools: tools,
	})
	mu.Lock()
	took := time.Since(cancelled)
	mu.Unlock()
	require.NoError(t, err)
	t.Logf("interrupt during time.sleep(60) returned after %v", took)
	// Promptly, not after the sleep's 60 s: a second on a quiet machine,
	// ten allowed for a loaded one.
	require.Less(t, took, 10*time.Second, "an interrupted sleep returns promptly")
	require.Equal(t, config.StatusInterrupted, res.Status)
	require.Equal(t, "sleeping\n\n[execution interrupted — stop]", res.Output)
	requireGone(t, k)
}

func testKernelTools(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "from hermes_tools import web_search, read_file\n")
	var mu sync.Mutex
	var seen []string
	tools := func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
		mu.Lock()
		seen = append(seen, tool+" "+string(args))
		mu.Unlock()
		return echoTools(ctx, tool, args)
	}
	code := "for i in range(3):\n    r = web_search('q%d' % i)\n    print(r.get('args', r).get('query', r.get('error')))\n"
	res, err := cell(t, k, code, func(r *engine.Request) { r.MaxToolCalls = 2; r.Tools = tools })
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "q0\nq1\nTool call limit reached (2). No more tool calls allowed in this execution.\n", res.Output)
	require.Equal(t, 2, res.ToolCallsMade)
	require.Len(t, seen, 2)

	// A fresh broker (and budget) for the next cell.
	res, err = cell(t, k, "print(read_file('a.txt')['args']['path'])\n", func(r *engine.Request) { r.MaxToolCalls = 2; r.Tools = tools })
	require.NoError(t, err)
	require.Equal(t, "a.txt\n", res.Output)
	require.Equal(t, 1, res.ToolCallsMade)
	require.Equal(t, "read_file", res.ToolCalls[0].Tool)
	require.Len(t, seen, 3)

	// An exception is reported to its own cell's broker only.
	res, err = cell(t, k, "raise KeyError('k')\n", nil)
	require.NoError(t, err)
	require.Contains(t, res.Error, "KeyError: 'k'")
	res, err = cell(t, k, "print('fine')\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
}

func testKernelClose(t *testing.T, e *Engine) {

	// Idle: the loop is told to end and the interpreter exits by itself.
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "x = 1\n")
	start := time.Now()
	require.NoError(t, k.Close())
	require.Less(t, time.Since(start), closeGrace, "an idle kernel ends without being killed")
	require.Equal(t, engine.Outcome{}, k.end, "the loop ended cleanly")
	requireGone(t, k)
	require.NoError(t, k.Close(), "Close is idempotent")
	_, err := k.Run(context.Background(), &engine.Job{Code: "print(1)\n", Broker: engine.NewBroker(echoTools, 1, nil)})
	require.ErrorIs(t, err, engine.ErrKernelClosed)

	// Running: the cell is stopped.
	k = startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	// Closed once the cell runs: it makes a tool call just before its
	// loop (a close before the cell started would refuse the cell).
	start = time.Now()
	res, err := cell(t, k, "from hermes_tools import read_file\nread_file('x')\nwhile True:\n    pass\n", func(r *engine.Request) {
		r.Tools = func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
			time.AfterFunc(300*time.Millisecond, func() { k.Close() })
			return echoTools(ctx, tool, args)
		}
	})
	require.NoError(t, err)
	// Stopped, not left spinning (loose for a loaded machine).
	require.Less(t, time.Since(start), 60*time.Second)
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, "The kernel was closed while this call was running.", res.Error)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { require.NoError(t, k.Close()) })
	}
	wg.Wait()
	requireGone(t, k)
}

func testKernelOverWorkdir(t *testing.T, e *Engine) {
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "data.txt"), []byte("from the session dir\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(work, "sessionmod.py"), []byte("VALUE = 'session'\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(work, "hermes_tools.py"), []byte("raise ImportError('shadowed')\n"), 0o600))
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv, Workdir: work}, true)
	out := okCell(t, k, "import os, sys\nprint(open('data.txt').read(), end='')\nprint(sorted(os.listdir('.')), os.getcwd())\nprint(sys.path[:2])\n")
	// The session dir is the cwd, at its host path; the staged files are
	// mounted at /.hermes-lib, first on sys.path, then the session dir.
	guest := GuestPath(work)
	require.Equal(t, "from the session dir\n['data.txt', 'hermes_tools.py', 'sessionmod.py'] "+guest+"\n['/.hermes-lib', '"+guest+"']\n", out)
	// The session's modules import; its hermes_tools.py does not shadow
	// ours (the kernel would not even start).
	require.Equal(t, "session True\n", okCell(t, k, "import sessionmod, hermes_tools\nprint(sessionmod.VALUE, hermes_tools.__file__ == '/.hermes-lib/hermes_tools.py')\n"))
	okCell(t, k, "open('out.txt', 'w').write('written')\n")
	b, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "written", string(b))
	require.Equal(t, "echo\n", okCell(t, k, "from hermes_tools import terminal\nprint(terminal('echo')['args']['command'])\n"))
	require.NoError(t, k.Close())
	requireGone(t, k)
	// The session dir itself is left alone.
	_, err = os.Stat(filepath.Join(work, "data.txt"))
	require.NoError(t, err)

	_, err = e.StartKernel(context.Background(), engine.KernelSpec{}, &ProjectOptions{})
	require.Error(t, err)
}

func testKernelStartFailure(t *testing.T, e *Engine) {
	// A broken interpreter environment: the kernel exits before it asks
	// for a cell, and the error says why.
	_, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: []string{"PYTHONIOENCODING=no-such-codec"}}, nil)
	require.ErrorContains(t, err, "the kernel exited while starting")
	require.ErrorContains(t, err, "no-such-codec")

	// A start cancelled by its context stops the instance.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = e.StartKernel(ctx, engine.KernelSpec{Env: kernelEnv}, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestStrictKernelEngineClosed(t *testing.T) {
	e := New(Options{CacheDir: testEngine(t).opts.CacheDir, TempDir: t.TempDir()})
	k, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Close(context.Background()))
	// Close stops the idle kernel's instance before it returns (its
	// clean-up follows at once), and says why; the next cell does not run
	// (and does not pass for a success).
	sk := k.(*strictKernel)
	waitFor(t, time.Minute, "kernel cleaned up", func() bool { return !sk.Alive() })
	<-sk.exited
	requireGone(t, sk)
	require.Equal(t, "the interpreter was stopped: the strict engine was closed", sk.end.Crash)
	res, err := cell(t, k, "print(1)\n", nil)
	require.ErrorIs(t, err, engine.ErrKernelClosed)
	require.Equal(t, config.StatusError, res.Status)
	_, err = e.StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv}, nil)
	require.ErrorIs(t, err, ErrClosed)
}

func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testKernelPool(t *testing.T, e *Engine) {
	// The pool of e.NewKernelPool, with its starts recorded.
	var startedMu sync.Mutex
	var started []engine.Kernel
	p := engine.NewKernelPool(2, func(ctx context.Context) (engine.Kernel, error) {
		k, err := e.StartKernel(ctx, engine.KernelSpec{Env: kernelEnv}, nil)
		if err == nil {
			startedMu.Lock()
			started = append(started, k)
			startedMu.Unlock()
		}
		return k, err
	}, func(err error) bool { return errors.Is(err, ErrClosed) })
	waitFor(t, time.Minute, "pool filled", func() bool { return p.Idle() == 2 })
	require.NoError(t, p.Err())

	k, fromPool, err := p.Get(context.Background())
	require.NoError(t, err)
	require.True(t, fromPool)
	start := time.Now()
	require.Equal(t, "1\n", okCell(t, k, "print(1)\n"))
	t.Logf("first cell of a pooled kernel: %v", time.Since(start))
	// The pool refills behind it.
	waitFor(t, time.Minute, "pool refilled", func() bool { return p.Idle() == 2 })

	// Pooled kernels are independent.
	k2, fromPool, err := p.Get(context.Background())
	require.NoError(t, err)
	require.True(t, fromPool)
	okCell(t, k, "x = 'one'\n")
	require.Contains(t, okCell(t, k2, "print(globals().get('x'))\n"), "None")
	require.NoError(t, k.Close())
	require.NoError(t, k2.Close())

	// Close closes the idle kernels and stops refilling.
	require.NotZero(t, p.Idle())
	p.Close()
	p.Close()
	startedMu.Lock()
	for _, s := range started {
		if s != k && s != k2 {
			requireGone(t, s.(*strictKernel))
		}
	}
	startedMu.Unlock()
	require.Equal(t, 0, p.Idle())
	_, _, err = p.Get(context.Background())
	require.ErrorIs(t, err, ErrPoolClosed)

	// An empty pool starts a kernel on demand.
	p = e.NewKernelPool(0, engine.KernelSpec{Env: kernelEnv})
	defer p.Close()
	k, fromPool, err = p.Get(context.Background())
	require.NoError(t, err)
	require.False(t, fromPool)
	require.Equal(t, "1\n", okCell(t, k, "print(1)\n"))
	require.NoError(t, k.Close())
}

// TestStrictKernelRSS reports the resident memory of an idle strict
// kernel: the process's RSS growth over 8 of them (goal: at most 30 MB
// each).
func TestStrictKernelRSS(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("Linux only: reads the resident memory from /proc/self/status, which " + goruntime.GOOS + " does not have; strict memory limits are tested on every platform (memory_test.go)")
	}
	e := testEngine(t)
	const n = 8
	// One kernel first, so one-time costs (bytecode, page cache of the
	// compiled code) are not counted.
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "print(1)\n")
	require.NoError(t, k.Close())
	settle := func() int64 {
		goruntime.GC()
		debug.FreeOSMemory()
		rss, ok := cpustat.RSS()
		require.True(t, ok)
		return rss
	}
	before := settle()
	kernels := make([]engine.Kernel, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range kernels {
		wg.Go(func() {
			kernels[i], errs[i] = e.StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv}, nil)
		})
	}
	wg.Wait()
	for i, k := range kernels {
		require.NoError(t, errs[i])
		t.Cleanup(func() { k.Close() })
	}
	after := settle()
	perKernel := float64(after-before) / n / (1 << 20)
	t.Logf("resident memory per idle strict kernel: %.1f MB (%d kernels: %d -> %d MB)", perKernel, n, before>>20, after>>20)
	require.Less(t, perKernel, 30.0)
	for _, k := range kernels {
		wg.Go(func() { k.Close() })
	}
	wg.Wait()
}

func BenchmarkStrictKernelCell(b *testing.B) {
	e := testEngine(b)
	k, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv}, nil)
	require.NoError(b, err)
	defer k.Close()
	okCell(b, k, "print(1)\n")
	lat := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		start := time.Now()
		res, err := cell(b, k, "print(1)\n", nil)
		lat = append(lat, time.Since(start))
		if err != nil || res.Status != config.StatusSuccess {
			b.Fatal(err, res.Output)
		}
	}
	reportPercentiles(b, lat)
}

// BenchmarkStrictKernelThroughput is `hermes-wasm-exec bench`'s
// throughput row at the kernel level: 8 kernels, each running 200 cells of
// `n += 1` through engine.Execute (with its timeout) from its own
// goroutine, all at once. One op is the 1600 calls; calls/s is the rate.
func BenchmarkStrictKernelThroughput(b *testing.B) {
	e := testEngine(b)
	const sessions, calls = 8, 200
	kernels := make([]engine.Kernel, sessions)
	for i := range kernels {
		k, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv}, nil)
		require.NoError(b, err)
		defer k.Close()
		okCell(b, k, "n = 0\n")
		kernels[i] = k
	}
	testenv.Throughput(b, sessions, calls, func(i int) error {
		res, err := cell(b, kernels[i], "n += 1\n", nil)
		if err == nil && res.Status != config.StatusSuccess {
			err = errors.New(res.Output)
		}
		return err
	})
}

func BenchmarkStrictKernelFromPool(b *testing.B) {
	e := testEngine(b)
	p := e.NewKernelPool(1, engine.KernelSpec{Env: kernelEnv})
	defer p.Close()
	lat := make([]time.Duration, 0, 1024)
	for b.Loop() {
		b.StopTimer()
		waitFor(b, 30*time.Second, "pool warm", func() bool { return p.Idle() == 1 })
		b.StartTimer()
		start := time.Now()
		k, fromPool, err := p.Get(context.Background())
		if err != nil || !fromPool {
			b.Fatal(err, fromPool)
		}
		res, err := cell(b, k, "print(1)\n", nil)
		lat = append(lat, time.Since(start))
		if err != nil || res.Status != config.StatusSuccess {
			b.Fatal(err, res.Output)
		}
		b.StopTimer()
		k.Close()
		b.StartTimer()
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// closeDuringCompile signals on the engine's first progress line, which
// compile writes just before it builds the runtime on the shared
// compilation cache.
type closeDuringCompile struct {
	once    sync.Once
	started chan struct{}
}

func (w *closeDuringCompile) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	return len(p), nil
}

// Regression: `mcp --http` warms the interpreter in the background; a
// SIGTERM at that moment closed the engine, whose compilation cache
// wazero was still using (panic: assignment to entry in nil map). Close
// now waits for the compile, and the warm-up reports ErrClosed.
func TestStrictCloseDuringCompile(t *testing.T) {
	// A cache dir with the compiled code but without the "compiled"
	// marker: compile loads from the cache (fast) and still prints the
	// progress line first.
	src := testEngine(t).opts.CacheDir
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "wazero-") {
			require.NoError(t, os.CopyFS(filepath.Join(dir, e.Name()), os.DirFS(filepath.Join(src, e.Name()))))
		}
	}
	for range 3 {
		w := &closeDuringCompile{started: make(chan struct{})}
		e := New(Options{CacheDir: dir, TempDir: t.TempDir(), Progress: w})
		warmed := make(chan error, 1)
		go func() { warmed <- e.Warm(context.Background(), 0) }()
		<-w.started
		require.NoError(t, e.Close(context.Background()))
		err := <-warmed
		if err != nil {
			require.ErrorIs(t, err, ErrClosed)
		}
		_, err = e.StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv}, nil)
		require.ErrorIs(t, err, ErrClosed)
		// Remove the marker the compile may have written, so the next
		// round prints its line again.
		markers, _ := filepath.Glob(filepath.Join(dir, "compiled-*"))
		for _, m := range markers {
			require.NoError(t, os.Remove(m))
		}
	}
}
