package nativeengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// testKernel is a real-python kernel under test.
type testKernel struct {
	t       *testing.T
	engine  *Engine
	k       engine.Kernel
	workdir string
	// calls counts every tool call that reached the host, of any cell.
	calls atomic.Int64
}

// startRealKernel starts a kernel in python3 on transport tr, with a
// fresh session dir and private TempDir; the kernel is closed at cleanup
// and the TempDir checked to be empty.
func startRealKernel(t *testing.T, py, tr string) *testKernel {
	t.Helper()
	if tr == native.TransportUnix && runtime.GOOS == "windows" {
		t.Skip("python's AF_UNIX support on Windows varies")
	}
	tk := &testKernel{t: t, workdir: t.TempDir()}
	tk.engine = &Engine{Python: py, Transport: tr, TempDir: t.TempDir(), Grace: 500 * time.Millisecond}
	k, err := tk.engine.StartKernel(context.Background(), engine.KernelSpec{Env: pythonEnv(), Workdir: tk.workdir})
	require.NoError(t, err)
	tk.k = k
	t.Cleanup(func() {
		require.NoError(t, k.Close())
		requireEmptyDir(t, tk.engine.TempDir)
	})
	return tk
}

// tool answers read_file with the path it was asked for.
func (tk *testKernel) tool(_ context.Context, tool string, args json.RawMessage) map[string]any {
	tk.calls.Add(1)
	var a struct {
		Path string `json:"path"`
	}
	json.Unmarshal(args, &a)
	return map[string]any{"tool": tool, "path": a.Path}
}

// exec runs code as the next cell through engine.Execute.
func (tk *testKernel) exec(ctx context.Context, code string, maxCalls int) engine.Result {
	tk.t.Helper()
	res, err := engine.Execute(ctx, tk.k, engine.Request{
		Code:         code,
		Mode:         config.ModeProject,
		Workdir:      tk.workdir,
		MaxToolCalls: maxCalls,
		Tools:        tk.tool,
	})
	require.NoError(tk.t, err)
	return res
}

// cellRun is one cell run directly with Kernel.Run.
type cellRun struct {
	outcome        engine.Outcome
	err            error
	stdout, stderr *syncBuffer
	broker         *engine.Broker
	elapsed        time.Duration
}

// run runs code as the next cell with Kernel.Run.
func (tk *testKernel) run(ctx context.Context, code string, stdout *syncBuffer) *cellRun {
	if stdout == nil {
		stdout = newSyncBuffer("")
	}
	r := &cellRun{stdout: stdout, stderr: newSyncBuffer(""), broker: engine.NewBroker(tk.tool, 100, nil)}
	start := time.Now()
	r.outcome, r.err = tk.k.Run(ctx, &engine.Job{Code: code, Stdout: r.stdout, Stderr: r.stderr, Broker: r.broker})
	r.elapsed = time.Since(start)
	return r
}

func requireSuccess(t *testing.T, res engine.Result) {
	t.Helper()
	require.Equal(t, config.StatusSuccess, res.Status, "%+v", res)
}

func TestKernelRealPython(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			tk := startRealKernel(t, py, tr)
			require.True(t, tk.k.Alive())
			// A session module imports; a session hermes_tools.py does not
			// shadow ours.
			require.NoError(t, os.WriteFile(filepath.Join(tk.workdir, "sessionmod.py"), []byte("VALUE = 42\n"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(tk.workdir, "hermes_tools.py"), []byte("raise RuntimeError('shadowed')\n"), 0o600))
			cellN := 0
			next := func(ctx context.Context, code string, maxCalls int) engine.Result {
				cellN++
				return tk.exec(ctx, code, maxCalls)
			}

			// State persists across cells.
			res := next(context.Background(), "x = 20\nprint('set')\n", 0)
			requireSuccess(t, res)
			require.Equal(t, "set\n", res.Output)
			require.Equal(t, 0, *res.ExitCode)
			res = next(context.Background(), "x += 1\nprint(x * 2)\n", 0)
			requireSuccess(t, res)
			require.Equal(t, "42\n", res.Output)

			// Imports from the session dir; the tools are ours.
			res = next(context.Background(), "import sessionmod, os, sys\nfrom hermes_tools import read_file\nprint(sessionmod.VALUE, read_file('a.txt')['path'], sys.path[0] == os.getcwd())\n", 5)
			requireSuccess(t, res)
			require.Equal(t, "42 a.txt True\n", res.Output)
			require.Equal(t, 1, res.ToolCallsMade)

			// A cell's output, its subprocesses' included, lands in that
			// cell's result only; so does its stderr.
			r := tk.run(context.Background(), "import subprocess, sys\nprint('one')\nsubprocess.run([sys.executable, '-c', 'import sys; print(\"sub\"); print(\"sub-err\", file=sys.stderr)'])\nprint('e1', file=sys.stderr)\n", nil)
			cellN++
			require.NoError(t, r.err)
			require.Equal(t, engine.Outcome{}, r.outcome)
			require.Equal(t, "one\nsub\n", r.stdout.String())
			require.Equal(t, "sub-err\ne1\n", r.stderr.String())
			r = tk.run(context.Background(), "import sys\nprint('two')\nprint('e2', file=sys.stderr)\n", nil)
			cellN++
			require.NoError(t, r.err)
			require.Equal(t, "two\n", r.stdout.String())
			require.Equal(t, "e2\n", r.stderr.String())

			// What a background process prints between cells belongs to
			// no cell.
			// The background process prints once the file "go" exists.
			res = next(context.Background(), "import subprocess, sys\nbg = subprocess.Popen([sys.executable, '-c', 'import os, time\\nwhile not os.path.exists(\"go\"): time.sleep(0.01)\\nprint(\"late-bg\", flush=True)'])\nprint('started')\n", 0)
			requireSuccess(t, res)
			require.Equal(t, "started\n", res.Output)
			// Synchronise on the kernel having read (and dropped) the
			// background process's line, not on a time.
			router := tk.k.(*kernel).stdout
			router.mu.Lock()
			droppedBefore := router.dropped
			router.mu.Unlock()
			require.NoError(t, os.WriteFile(filepath.Join(tk.workdir, "go"), nil, 0o600))
			deadline := time.Now().Add(20 * time.Second)
			for {
				router.mu.Lock()
				dropped := router.dropped
				router.mu.Unlock()
				if dropped >= droppedBefore+len("late-bg\n") {
					break
				}
				require.True(t, time.Now().Before(deadline), "the background line never came through")
				time.Sleep(5 * time.Millisecond)
			}
			res = next(context.Background(), "bg.wait()\nprint('waited', bg.returncode)\n", 0)
			requireSuccess(t, res)
			require.Equal(t, "waited 0\n", res.Output)

			// An exception keeps the kernel and its state; the traceback
			// shows the cell and its source line.
			res = next(context.Background(), "def f():\n    raise ValueError('boom %d' % x)\n\nf()\n", 0)
			require.Equal(t, config.StatusError, res.Status)
			require.Contains(t, res.Error, fmt.Sprintf("File \"<cell %d>\", line 2, in f\n    raise ValueError('boom %%d' %% x)", cellN))
			require.Contains(t, res.Error, fmt.Sprintf("File \"<cell %d>\", line 4, in <module>\n    f()", cellN))
			require.True(t, strings.HasSuffix(res.Error, "ValueError: boom 21"), res.Error)
			require.NotContains(t, res.Error, engine.KernelName)
			require.Equal(t, 1, *res.ExitCode)
			require.Contains(t, res.Output, "--- stderr ---\nTraceback")
			require.True(t, tk.k.Alive())
			res = next(context.Background(), "print(x)\n", 0)
			requireSuccess(t, res)
			require.Equal(t, "21\n", res.Output)

			// Tool calls from four threads all reach this cell's broker.
			before := tk.calls.Load()
			res = next(context.Background(), `import threading
from hermes_tools import read_file
bad = []
def worker(i):
    for j in range(5):
        p = "t%d/c%d" % (i, j)
        if read_file(p).get("path") != p:
            bad.append(p)
ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print("bad", bad)
`, 100)
			requireSuccess(t, res)
			require.Equal(t, "bad []\n", res.Output)
			require.Equal(t, 20, res.ToolCallsMade)
			require.Len(t, res.ToolCalls, 20)
			require.EqualValues(t, 20, tk.calls.Load()-before)

			// The budget is per cell.
			budget := "from hermes_tools import read_file\nfor i in range(3):\n    print(read_file('b').get('error', 'ok'))\n"
			res = next(context.Background(), budget, 2)
			requireSuccess(t, res)
			require.Equal(t, "ok\nok\nTool call limit reached (2). No more tool calls allowed in this execution.\n", res.Output)
			require.Equal(t, 2, res.ToolCallsMade)
			res = next(context.Background(), budget, 2)
			requireSuccess(t, res)
			require.Equal(t, 2, res.ToolCallsMade)

			// A thread left running after its cell cannot call tools: it
			// gets the dispatcher's error, and nothing breaks.
			before = tk.calls.Load()
			res = next(context.Background(), `import threading, time
from hermes_tools import read_file
late = {}
def later():
    time.sleep(0.1)
    try:
        late["r"] = read_file("late.txt")
    except Exception as e:
        late["r"] = repr(e)
    open("late-done", "w").close()
threading.Thread(target=later, daemon=True).start()
print("left a thread")
`, 10)
			requireSuccess(t, res)
			require.Zero(t, res.ToolCallsMade)
			// The thread says (with a file) when its late call is done,
			// between cells.
			lateDone := filepath.Join(tk.workdir, "late-done")
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(lateDone); err == nil {
					break
				}
				require.True(t, time.Now().Before(deadline), "the thread's late call never ended")
			}
			res = next(context.Background(), "print(late['r'])\n", 10)
			requireSuccess(t, res)
			require.Contains(t, res.Output, "No call is running in this kernel")
			require.Zero(t, res.ToolCallsMade)
			require.Equal(t, before, tk.calls.Load())

			// A cell whose context is already done does not run, and the
			// kernel keeps its state.
			done, cancel := context.WithCancel(context.Background())
			cancel()
			r = tk.run(done, "x = 'changed'\n", nil)
			require.NoError(t, r.err)
			require.Equal(t, -1, r.outcome.ExitCode)
			require.True(t, tk.k.Alive())
			res = next(context.Background(), "print(x)\n", 0)
			requireSuccess(t, res)
			require.Equal(t, "21\n", res.Output)

			// sys.exit ends the kernel with its code.
			res = next(context.Background(), "import sys\nprint('bye')\nsys.exit(3)\n", 0)
			require.Equal(t, config.StatusError, res.Status)
			require.Equal(t, 3, *res.ExitCode)
			require.Equal(t, "Script exited with code 3", res.Error)
			require.Equal(t, "bye\n", res.Output[:4])
			require.False(t, tk.k.Alive())
			// Everything is released without Close.
			requireEmptyDir(t, tk.engine.TempDir)
			r = tk.run(context.Background(), "print(1)\n", nil)
			require.ErrorIs(t, r.err, engine.ErrKernelClosed)
			require.Empty(t, r.stdout.String())
		})
	}
}

// TestKernelRealPythonDiesDuringToolCall: the kernel dies (a thread calls
// os._exit) while its main thread waits in a tool call: Run returns the
// exit code at once and the blocked call is cancelled.
func TestKernelRealPythonDiesDuringToolCall(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	tk := startRealKernel(t, py, native.DefaultTransport())
	cancelled := make(chan error, 1)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	out, err := tk.k.Run(context.Background(), &engine.Job{
		Code:   "import os, threading\nfrom hermes_tools import terminal\nthreading.Timer(0.2, lambda: os._exit(4)).start()\nterminal('block')\n",
		Stdout: &stdout,
		Stderr: &stderr,
		Broker: engine.NewBroker(func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
			select {
			case <-ctx.Done():
				cancelled <- ctx.Err()
			case <-time.After(2 * time.Minute):
				cancelled <- errors.New("not cancelled")
			}
			return map[string]any{"output": "late"}
		}, 5, nil),
	})
	require.NoError(t, err)
	require.Equal(t, engine.Outcome{ExitCode: 4}, out, "stderr: %s", stderr.String())
	// At once, not after the tool call's 2 minutes (loose for a loaded
	// machine).
	require.Less(t, time.Since(start), 30*time.Second)
	require.ErrorIs(t, <-cancelled, context.Canceled)
	require.False(t, tk.k.Alive())
	requireEmptyDir(t, tk.engine.TempDir)
}

// TestKernelRealPythonRedirectedStdout: a cell that points fd 1 elsewhere
// (keeping the pipe open) hides its end mark; Run gives up on it after
// markWait, and the kernel goes on.
func TestKernelRealPythonRedirectedStdout(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	tk := startRealKernel(t, py, native.DefaultTransport())
	r := tk.run(context.Background(), "import os\nprint('before', flush=True)\nsaved = os.dup(1)\nos.dup2(os.open(os.devnull, os.O_WRONLY), 1)\nprint('hidden')\n", nil)
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{}, r.outcome)
	require.Equal(t, "before\n", r.stdout.String())
	require.GreaterOrEqual(t, r.elapsed, markWait)
	// Gave up after markWait rather than waiting for ever (loose for a
	// loaded machine, which took 3.4 s).
	require.Less(t, r.elapsed, markWait+30*time.Second)
	r = tk.run(context.Background(), "os.dup2(saved, 1)\nprint('back')\n", nil)
	require.NoError(t, r.err)
	require.Equal(t, "back\n", r.stdout.String())
	// The marks came through: Run did not wait markWait for them.
	require.Less(t, r.elapsed, markWait)
}

func TestKernelRealPythonClose(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			t.Run("idle", func(t *testing.T) {
				if tr != native.DefaultTransport() {
					t.Skip("the transport does not matter here; one run costs closeWait")
				}
				t.Parallel()
				tk := startRealKernel(t, py, tr)
				requireSuccess(t, tk.exec(context.Background(), "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\nprint(1)\n", 0))
				start := time.Now()
				require.NoError(t, tk.k.Close())
				// A non-daemon thread keeps python from exiting: it is
				// killed after closeWait, not waited for (loose for a
				// loaded machine).
				require.Less(t, time.Since(start), closeWait+30*time.Second)
				require.Contains(t, tk.k.(*kernel).child.result().Crash, "killed", "python was killed")
				require.False(t, tk.k.Alive())
				requireEmptyDir(t, tk.engine.TempDir)
				require.NoError(t, tk.k.Close(), "Close is idempotent")
				r := tk.run(context.Background(), "print(1)\n", nil)
				require.ErrorIs(t, r.err, engine.ErrKernelClosed)
			})
			t.Run("idle-quick", func(t *testing.T) {
				t.Parallel()
				tk := startRealKernel(t, py, tr)
				requireSuccess(t, tk.exec(context.Background(), "print(1)\n", 0))
				start := time.Now()
				require.NoError(t, tk.k.Close())
				// The loop ends by itself: python exits 0, not killed after
				// closeWait (its outcome says so, whatever the time a loaded
				// machine took).
				require.Equal(t, engine.Outcome{}, tk.k.(*kernel).child.result(), "the loop ends by itself")
				require.Less(t, time.Since(start), 30*time.Second)
				requireEmptyDir(t, tk.engine.TempDir)
			})
			t.Run("during-cell", func(t *testing.T) {
				t.Parallel()
				tk := startRealKernel(t, py, tr)
				out := newSyncBuffer("sleeping\n")
				ran := make(chan *cellRun, 1)
				go func() {
					ran <- tk.run(context.Background(), "import time\nprint('sleeping', flush=True)\ntime.sleep(600)\n", out)
				}()
				select {
				case <-out.matched:
				case <-time.After(2 * time.Minute):
					t.Fatal("the cell did not start")
				}
				start := time.Now()
				var wg sync.WaitGroup
				for range 3 {
					wg.Add(1)
					go func() { defer wg.Done(); require.NoError(t, tk.k.Close()) }()
				}
				wg.Wait()
				// Not the cell's 600 s sleep (a second on a quiet machine;
				// loose for a loaded one).
				require.Less(t, time.Since(start), 10*time.Second)
				r := <-ran
				require.NoError(t, r.err)
				require.Equal(t, -1, r.outcome.ExitCode)
				require.Contains(t, r.outcome.Crash, "closed")
				require.Equal(t, "sleeping\n", r.stdout.String())
				require.False(t, tk.k.Alive())
				requireEmptyDir(t, tk.engine.TempDir)
			})
		})
	}
}

// TestKernelRealPythonInterrupt: cancelling a cell in time.sleep(60)
// returns within a second, the kernel is dead and nothing is left.
func TestKernelRealPythonInterrupt(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			tk := startRealKernel(t, py, tr)
			requireSuccess(t, tk.exec(context.Background(), "x = 1\n", 0))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			out := newSyncBuffer("sleeping\n")
			cancelled := make(chan time.Time, 1)
			go func() {
				select {
				case <-out.matched:
				case <-time.After(2 * time.Minute):
				}
				cancelled <- time.Now()
				cancel(&engine.InterruptError{Reason: "test"})
			}()
			r := tk.run(ctx, "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n", out)
			after := time.Since(<-cancelled)
			require.NoError(t, r.err)
			// Within a second on a quiet machine; ten, far from the
			// sleep's 60 s, allowed for a loaded one.
			require.Less(t, after, 10*time.Second, "Run returns promptly after the cancel")
			require.Equal(t, -1, r.outcome.ExitCode)
			require.NotEmpty(t, r.outcome.Crash)
			require.Equal(t, "sleeping\n", r.stdout.String())
			require.False(t, tk.k.Alive())
			requireEmptyDir(t, tk.engine.TempDir)
			r = tk.run(context.Background(), "print(x)\n", nil)
			require.ErrorIs(t, r.err, engine.ErrKernelClosed)
		})
	}
}

// BenchmarkProjectKernelCell is a warm kernel's time to result for
// print(1) through engine.Execute.
func BenchmarkProjectKernelCell(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			e := &Engine{Python: testenv.RealPython(b), Transport: tr}
			k, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: pythonEnv(), Workdir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			req := engine.Request{Code: "print(1)\n", Mode: config.ModeProject, Tools: (&callRecorder{}).tool}
			for b.Loop() {
				res, err := engine.Execute(context.Background(), k, req)
				if err != nil || res.Status != config.StatusSuccess || res.Output != "1\n" {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}

// TestKernelRealPythonLatency times 500 warm print(1) cells through
// engine.Execute and logs the percentiles (go test -v shows them).
func TestKernelRealPythonLatency(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			tk := startRealKernel(t, py, tr)
			req := engine.Request{Code: "print(1)\n", Mode: config.ModeProject, Tools: tk.tool}
			times := make([]time.Duration, 500)
			for i := range times {
				start := time.Now()
				res, err := engine.Execute(context.Background(), tk.k, req)
				times[i] = time.Since(start)
				require.NoError(t, err)
				require.Equal(t, "1\n", res.Output)
			}
			slices.Sort(times)
			pct := func(p float64) time.Duration { return times[int(p*float64(len(times)-1))] }
			t.Logf("%s: print(1) per call over %d calls: p50 %v, p90 %v, p99 %v, max %v", tr, len(times), pct(.5), pct(.9), pct(.99), times[len(times)-1])
			// The goal (1 ms) is BenchmarkProjectKernelCell's. This only
			// catches a wait per cell (a poll, markWait's 2 s), with a
			// margin for a loaded 2-core machine, where waking python and
			// the executor costs tens of milliseconds a call.
			require.Less(t, pct(.5), 250*time.Millisecond)
		})
	}
}
