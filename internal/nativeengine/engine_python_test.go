package nativeengine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

func requireEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Empty(t, names, "left in %s", dir)
}

// pythonEnv is the child's environment: the test's, without PYTHON*
// variables that would change how the interpreter starts.
func pythonEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PYTHON") || strings.HasPrefix(kv, "HERMES_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

const threadedScript = `import os
import sys
import threading

from hermes_tools import read_file

import sessionmod
import extramod

print("path0", sys.path[0] == os.getcwd())
print("token", "HERMES_RPC_TOKEN" in os.environ)
print("mod", sessionmod.VALUE, extramod.VALUE)

mismatches = []
failures = []
barrier = threading.Barrier(8)


def worker(i):
    try:
        barrier.wait(timeout=10)
        for j in range(10):
            want = "t%d/c%d" % (i, j)
            r = read_file(want)
            if r.get("path") != want or r.get("echo") != want.upper():
                mismatches.append((want, r))
    except Exception as e:
        failures.append(repr(e))


threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print("mismatches", len(mismatches), mismatches[:3])
print("failures", failures)


def fail_at_the_end():
    raise ValueError("boom at the end")


fail_at_the_end()
`

func TestEngineRealPython(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			if tr == native.TransportUnix && runtime.GOOS == "windows" {
				t.Skip("python's AF_UNIX support on Windows varies")
			}
			t.Parallel()
			workdir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(workdir, "sessionmod.py"), []byte("VALUE = 42\n"), 0o600))
			extra := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(extra, "extramod.py"), []byte("VALUE = 'extra-ok'\n"), 0o600))

			var inFlight, maxInFlight atomic.Int64
			tools := func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for {
					m := maxInFlight.Load()
					if n <= m || maxInFlight.CompareAndSwap(m, n) {
						break
					}
				}
				var a struct {
					Path string `json:"path"`
				}
				if err := json.Unmarshal(args, &a); err != nil {
					return map[string]any{"error": err.Error()}
				}
				time.Sleep(5 * time.Millisecond) // a slow tool, so calls overlap in flight: not a wait
				return map[string]any{"path": a.Path, "echo": strings.ToUpper(a.Path)}
			}
			var stdout, stderr bytes.Buffer
			job := &engine.Job{
				Code:    threadedScript,
				Env:     pythonEnv("PYTHONPATH=" + extra),
				Workdir: workdir,
				Stdout:  &stdout,
				Stderr:  &stderr,
				Broker:  engine.NewBroker(tools, 100, nil),
			}
			e := &Engine{Python: py, Transport: tr, TempDir: t.TempDir()}
			out, err := e.Run(context.Background(), job)
			require.NoError(t, err)
			requireEmptyDir(t, e.TempDir)
			require.Equal(t, engine.Outcome{ExitCode: 1}, out, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())

			so := stdout.String()
			require.Contains(t, so, "path0 True\n")
			require.Contains(t, so, "token True\n")
			require.Contains(t, so, "mod 42 extra-ok\n")
			require.Contains(t, so, "mismatches 0 []\n")
			require.Contains(t, so, "failures []\n")

			n, log := job.Broker.Made()
			require.Equal(t, 80, n)
			require.Len(t, log, 80)
			for _, c := range log {
				require.Equal(t, "read_file", c.Tool)
				require.True(t, c.OK)
			}
			require.Greater(t, maxInFlight.Load(), int64(1), "calls from threads ran in parallel")

			rep := job.Broker.Report()
			require.NotNil(t, rep, "stderr: %s", stderr.String())
			require.Equal(t, "exception", rep.Kind)
			require.Equal(t, 1, rep.Code)
			require.Equal(t, "ValueError", rep.Type)
			require.Equal(t, "boom at the end", rep.Message)
			require.True(t, strings.HasPrefix(rep.Traceback, "Traceback (most recent call last):\n"), rep.Traceback)
			require.Contains(t, rep.Traceback, "script.py")
			require.Contains(t, rep.Traceback, "fail_at_the_end")
			require.True(t, strings.HasSuffix(rep.Traceback, "ValueError: boom at the end\n"), rep.Traceback)
			require.NotContains(t, rep.Traceback, engine.RunnerName, "the traceback starts at the script")
			require.Contains(t, stderr.String(), "ValueError: boom at the end")
		})
	}
}

// runRealPython runs code once in a real python3 with no tools, checks that
// the run leaves its private dir behind nothing, and returns what it gave.
func runRealPython(t *testing.T, py, code string) (out engine.Outcome, stdout, stderr *bytes.Buffer, job *engine.Job) {
	t.Helper()
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	job = &engine.Job{
		Code:    code,
		Env:     pythonEnv(),
		Workdir: t.TempDir(),
		Stdout:  stdout,
		Stderr:  stderr,
		Broker:  engine.NewBroker((&callRecorder{}).tool, 0, nil),
	}
	e := &Engine{Python: py, TempDir: t.TempDir()}
	out, err := e.Run(context.Background(), job)
	require.NoError(t, err)
	requireEmptyDir(t, e.TempDir)
	return out, stdout, stderr, job
}

func TestEngineRealPythonBigStdout(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	out, stdout, stderr, job := runRealPython(t, py, `import sys
chunk = b"0123456789abcdef" * 64
for i in range(1024):
    sys.stdout.buffer.write(chunk)
sys.stderr.write("done\n")
`)
	require.Equal(t, engine.Outcome{ExitCode: 0}, out, "stderr: %s", stderr.String())
	require.Equal(t, 1<<20, stdout.Len())
	require.True(t, bytes.Equal(bytes.Repeat([]byte("0123456789abcdef"), 1<<16), stdout.Bytes()))
	require.Equal(t, "done\n", stderr.String())
	require.Nil(t, job.Broker.Report(), "a normal end sends no report")
}

func TestEngineRealPythonSysExit(t *testing.T) {
	py := testenv.RealPython(t)
	t.Parallel()
	out, stdout, stderr, job := runRealPython(t, py, "import sys\nprint('bye')\nsys.exit(4)\n")
	require.Equal(t, engine.Outcome{ExitCode: 4}, out, "stderr: %s", stderr.String())
	require.Equal(t, "bye\n", stdout.String())
	require.Nil(t, job.Broker.Report())
}

// benchRun runs code in a real python3 with a broker whose tools answer at
// once, and fails b unless the script succeeds.
func benchRun(b *testing.B, e *Engine, code string, maxCalls int) {
	var out, errOut bytes.Buffer
	broker := engine.NewBroker(func(context.Context, string, json.RawMessage) map[string]any {
		return map[string]any{"ok": true}
	}, maxCalls, nil)
	o, err := e.Run(context.Background(), &engine.Job{
		Code: code, Env: pythonEnv(), Workdir: b.TempDir(),
		Stdout: &out, Stderr: &errOut, Broker: broker,
	})
	if err != nil || o.ExitCode != 0 {
		b.Fatalf("%v %+v %s", err, o, errOut.String())
	}
}

// BenchmarkProjectPrint1 is project mode's time to result for print(1):
// private dir, socket, python child (the interpreter itself, not a shim).
func BenchmarkProjectPrint1(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			e := &Engine{Python: testenv.RealPython(b), Transport: tr}
			for b.Loop() {
				benchRun(b, e, "print(1)\n", 0)
			}
		})
	}
}

// BenchmarkProjectToolRoundTrip is a thousand no-op tool calls per op.
func BenchmarkProjectToolRoundTrip(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			e := &Engine{Python: testenv.RealPython(b), Transport: tr}
			code := "from hermes_tools import web_search\nfor _ in range(1000):\n    web_search('x')\n"
			for b.Loop() {
				benchRun(b, e, code, 1000)
			}
		})
	}
}
