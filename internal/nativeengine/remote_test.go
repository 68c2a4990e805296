//go:build linux

package nativeengine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// envBackend is an exec backend whose prefix is `env`: the remote path
// (relay, framing, marker kill) against this host's python3, where the
// test can look at processes and files. The target's TMPDIR is a private
// dir, checked to be empty at the end. The prefix passes its environment
// (the client's: PATH and TMPDIR here) on to the target.
func envBackend(t *testing.T) (backend.Backend, string) {
	t.Helper()
	testenv.RealPython(t)
	dir, tmp := t.TempDir(), t.TempDir()
	b, err := backend.NewExec(context.Background(), backend.ExecOptions{Prefix: []string{"env"}, Cwd: dir, ClientEnv: []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp}})
	require.NoError(t, err)
	t.Cleanup(func() {
		b.Close()
		requireEmptyDir(t, tmp)
	})
	return b, dir
}

const remoteScript = `
import os, subprocess, sys, threading
from hermes_tools import read_file
print("cwd", os.getcwd() == os.environ["EXPECT_CWD"])
print("path0", sys.path[0] == os.getcwd())
print("token", "HERMES_RPC_TOKEN" in os.environ)
results = []
def worker(i):
    results.append(read_file("f%d" % i)["path"])
ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print("calls", sorted(results) == ["f%d" % i for i in range(8)])
print("to stderr", file=sys.stderr)
subprocess.run(["sh", "-c", "echo from a subprocess; echo sub err >&2"])
raise ValueError("boom")
`

func echoPath(_ context.Context, _ string, args json.RawMessage) map[string]any {
	var a struct{ Path string }
	json.Unmarshal(args, &a)
	return map[string]any{"path": a.Path}
}

func TestRemoteRun(t *testing.T) {
	be, dir := envBackend(t)
	var stdout, stderr bytes.Buffer
	job := &engine.Job{Code: remoteScript, Env: []string{"EXPECT_CWD=" + dir, "PATH=/host/only"}, Stdout: &stdout, Stderr: &stderr,
		Broker: engine.NewBroker(echoPath, 100, nil)}
	e := &Engine{Backend: be}
	out, err := e.Run(context.Background(), job)
	require.NoError(t, err)
	assert.Equal(t, engine.Outcome{ExitCode: 1}, out, "stderr: %s", stderr.String())
	assert.Equal(t, "cwd True\npath0 True\ntoken True\ncalls True\nfrom a subprocess\n", stdout.String())
	assert.Contains(t, stderr.String(), "to stderr\nsub err\n")
	assert.Contains(t, stderr.String(), "ValueError: boom")
	n, _ := job.Broker.Made()
	assert.Equal(t, 8, n)
	rep := job.Broker.Report()
	require.NotNil(t, rep)
	assert.Equal(t, "ValueError", rep.Type)
}

func TestRemoteRunTimeoutKillsTree(t *testing.T) {
	be, dir := envBackend(t)
	stdout := newSyncBuffer("started")
	job := &engine.Job{Code: `import subprocess, os, time
p = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 300"], start_new_session=True)
open("pid.tmp", "w").write(str(p.pid)); os.rename("pid.tmp", "pid")
print("started", flush=True)
time.sleep(300)`, Stdout: stdout, Stderr: &bytes.Buffer{}, Broker: engine.NewBroker(echoPath, 0, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan engine.Outcome)
	e := &Engine{Backend: be, Grace: 500 * time.Millisecond}
	go func() {
		out, _ := e.Run(ctx, job)
		done <- out
	}()
	select {
	case <-stdout.matched:
	case <-time.After(60 * time.Second):
		t.Fatal("the script did not start")
	}
	data, err := os.ReadFile(filepath.Join(dir, "pid"))
	require.NoError(t, err)
	cancel()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(data)) + "/status")
	if err == nil {
		assert.Contains(t, string(status), "zombie", "the detached, TERM-ignoring process still runs")
	}
}

func TestRemoteMissingPython(t *testing.T) {
	be, _ := envBackend(t)
	e := &Engine{Backend: be, RemotePython: "python3-not-installed"}
	out, err := e.Run(context.Background(), &engine.Job{Code: "print(1)", Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Broker: engine.NewBroker(echoPath, 0, nil)})
	require.NoError(t, err)
	assert.Contains(t, out.Crash, "Project mode needs python3-not-installed in the exec backend (env)")
	assert.Contains(t, out.Crash, "code_execution.mode: strict")
}

func TestRemoteKernel(t *testing.T) {
	be, dir := envBackend(t)
	e := &Engine{Backend: be, Grace: 500 * time.Millisecond}
	k, err := e.StartKernel(context.Background(), engine.KernelSpec{Env: []string{"A=1"}})
	require.NoError(t, err)
	defer k.Close()
	tk := &testKernel{t: t, k: k, workdir: dir}
	res := tk.exec(context.Background(), "x = 41\nfrom hermes_tools import read_file\nprint(read_file('a')['path'])", 10)
	requireSuccess(t, res)
	assert.Equal(t, "a\n", res.Output)
	res = tk.exec(context.Background(), "import os\nprint(x + 1, os.environ['A'])", 10)
	requireSuccess(t, res)
	assert.Equal(t, "42 1\n", res.Output)
	// An interrupted cell ends the kernel.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res = tk.exec(ctx, "import time\ntime.sleep(60)", 10)
	assert.Equal(t, config.StatusInterrupted, res.Status)
	assert.False(t, k.Alive())
}

// A frame longer than the relay ever sends ends the stream rather than
// making the host allocate its length: a script in the target can write
// to the relay's stdout (/proc/<relay>/fd/1) and claim 4 GB.
func TestRemoteForgedFrameLength(t *testing.T) {
	be, _ := envBackend(t)
	var stdout, stderr bytes.Buffer
	job := &engine.Job{Code: `import os, struct
f = open("/proc/%d/fd/1" % os.getppid(), "wb", buffering=0)
f.write(struct.pack(">cII", b"o", 0, 0xFFFFFFF0))
`, Stdout: &stdout, Stderr: &stderr, Broker: engine.NewBroker(echoPath, 0, nil)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := (&Engine{Backend: be}).Run(context.Background(), job)
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "the host allocated the forged frame's length")
}
