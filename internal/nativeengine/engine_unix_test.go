//go:build unix

package nativeengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// processGone reports whether pid has ended: it no longer exists, or it
// is a zombie waiting for a reaper that is not us.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return stat[i+2] == 'Z' || stat[i+2] == 'X'
}

func requireGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEngineFakeRoundtrip(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			rec := &callRecorder{}
			r := newFakeRun(t, "roundtrip", rec.tool)
			r.engine.Transport = tr
			r.job.Code = "# the script\nprint('hi')\n"
			r.job.Env = append(r.job.Env,
				"PYTHONPATH=/extra/lib",
				"HERMES_RPC_TOKEN=stale-token-from-the-parent",
				"HERMES_RPC_SOCKET=/stale/socket",
				"FAKE_INHERITED=yes")
			r.run(t, context.Background())
			require.NoError(t, r.err)
			require.Equal(t, engine.Outcome{ExitCode: 1}, r.outcome, "stderr: %s", r.stderr.String())

			var info struct {
				Args       []string `json:"args"`
				Cwd        string   `json:"cwd"`
				PythonPath string   `json:"pythonpath"`
				Socket     string   `json:"socket"`
				Token      string   `json:"token"`
				Inherited  string   `json:"inherited"`
				PgidIsPid  bool     `json:"pgid_is_pid"`
				Script     string   `json:"script"`
				DirMode    string   `json:"dirmode"`
				Files      []string `json:"files"`
			}
			out := r.stdout.String()
			line, _, _ := strings.Cut(out[strings.Index(out, "INFO ")+5:], "\n")
			require.NoError(t, json.Unmarshal([]byte(line), &info), out)

			require.Len(t, info.Args, 3)
			require.Equal(t, "-u", info.Args[0])
			dir := filepath.Dir(info.Args[1])
			require.Equal(t, filepath.Join(dir, engine.RunnerName), info.Args[1])
			require.Equal(t, filepath.Join(dir, engine.ScriptName), info.Args[2])
			require.Equal(t, r.engine.TempDir, filepath.Dir(dir))
			require.True(t, strings.HasPrefix(filepath.Base(dir), "hermes-project-"), dir)
			require.Equal(t, "700", info.DirMode)
			require.Subset(t, info.Files, []string{engine.RunnerName, engine.StubName, engine.ScriptName})
			require.Equal(t, r.job.Code, info.Script)
			wd, err := filepath.EvalSymlinks(r.job.Workdir)
			require.NoError(t, err)
			cwd, err := filepath.EvalSymlinks(info.Cwd)
			require.NoError(t, err)
			require.Equal(t, wd, cwd)
			require.Equal(t, dir+string(os.PathListSeparator)+"/extra/lib", info.PythonPath)
			require.NotEqual(t, "stale-token-from-the-parent", info.Token)
			require.Len(t, info.Token, 64)
			require.NotEqual(t, "/stale/socket", info.Socket)
			if tr == native.TransportTCP {
				require.True(t, strings.HasPrefix(info.Socket, "tcp://127.0.0.1:"), info.Socket)
			}
			require.Equal(t, "yes", info.Inherited)
			require.True(t, info.PgidIsPid, "the child leads its own process group")

			require.Contains(t, out, `CALL {"args":{"path":"hello.txt"},"tool":"read_file"}`)
			require.Contains(t, out, `EXIT {"ok":true}`)
			n, log := r.job.Broker.Made()
			require.Equal(t, 1, n)
			require.Equal(t, "read_file", log[0].Tool)
			require.Equal(t, &engine.ExitReport{Kind: "exception", Code: 1, Type: "RuntimeError", Message: "fake", Traceback: "Traceback: fake\n"}, r.job.Broker.Report())
			if tr == native.TransportUnix {
				require.NoFileExists(t, info.Socket)
			}
		})
	}
}

func TestEngineFakeDiesMidCall(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			var workdir string
			toolCtxErr := make(chan error, 1)
			var calls atomic.Int64
			r := newFakeRun(t, "dies-mid-call", func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				calls.Add(1)
				if err := os.WriteFile(filepath.Join(workdir, fakeMarker), nil, 0o600); err != nil {
					toolCtxErr <- err
					return map[string]any{"error": err.Error()}
				}
				select {
				case <-ctx.Done():
					toolCtxErr <- ctx.Err()
				case <-time.After(2 * time.Minute):
					toolCtxErr <- errors.New("the tool call was not cancelled")
				}
				return map[string]any{"output": "too late"}
			})
			workdir = r.job.Workdir
			r.engine.Transport = tr
			r.run(t, context.Background())
			require.NoError(t, r.err)
			require.Equal(t, engine.Outcome{ExitCode: 3}, r.outcome, "stdout: %s\nstderr: %s", r.stdout.String(), r.stderr.String())
			// Promptly: not after the tool call's 2 minutes (loose for a
			// loaded machine; the check below is the real proof).
			require.Less(t, r.elapsed, time.Minute, "Run returned promptly")
			require.Contains(t, r.stdout.String(), "call arrived, dying")
			// Run returned only after the server closed: the blocked call
			// was cancelled and its answer went to a closed connection.
			select {
			case err := <-toolCtxErr:
				require.ErrorIs(t, err, context.Canceled)
			default:
				t.Fatal("Run returned while the tool call was still running")
			}
			require.EqualValues(t, 1, calls.Load())
			n, _ := r.job.Broker.Made()
			require.Equal(t, 1, n)
			require.Nil(t, r.job.Broker.Report())
		})
	}
}

func TestEngineFakeGarbage(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			rec := &callRecorder{}
			r := newFakeRun(t, "garbage", rec.tool)
			r.engine.Transport = tr
			r.run(t, context.Background())
			require.NoError(t, r.err)
			require.Equal(t, engine.Outcome{ExitCode: 0}, r.outcome, "stderr: %s", r.stderr.String())
			require.Contains(t, r.stdout.String(), `got: {"error":"Malformed tool request: `)
			require.Contains(t, r.stdout.String(), "(err <nil>)")
			require.Zero(t, rec.n.Load())
			n, _ := r.job.Broker.Made()
			require.Zero(t, n)
			require.Nil(t, r.job.Broker.Report())
		})
	}
}

func TestEngineFakeNeverConnects(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "sleep", nil)
	r.engine.Grace = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.run(t, ctx)
	require.NoError(t, r.err)
	// Stopped at the context's end, not after the child's 60 s sleep
	// (the upper bound is loose for a loaded machine).
	require.Less(t, r.elapsed, 30*time.Second)
	require.GreaterOrEqual(t, r.elapsed, time.Second)
	require.Equal(t, -1, r.outcome.ExitCode)
	require.Contains(t, r.outcome.Crash, "signal 15")
	n, _ := r.job.Broker.Made()
	require.Zero(t, n)
	require.Nil(t, r.job.Broker.Report())
}

func TestEngineFakeIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "ignores-sigterm", nil)
	r.stdout = newSyncBuffer("pid=")
	r.job.Stdout = r.stdout
	r.engine.Grace = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	go func() {
		select {
		case <-r.stdout.matched:
		case <-time.After(2 * time.Minute):
		}
		cancelled <- time.Now()
		cancel()
	}()
	r.run(t, ctx)
	end := time.Now()
	require.NoError(t, r.err)
	after := end.Sub(<-cancelled)
	require.GreaterOrEqual(t, after, 900*time.Millisecond, "SIGKILL only after the grace period")
	// SIGKILL after the grace, not the child's 60 s sleep waited out (loose
	// for a loaded machine).
	require.Less(t, after, 30*time.Second)
	require.Equal(t, -1, r.outcome.ExitCode)
	require.Contains(t, r.outcome.Crash, "signal 9")

	var pid int
	_, err := fmt.Sscanf(r.stdout.String(), "pid=%d", &pid)
	require.NoError(t, err, r.stdout.String())
	requireGone(t, pid)
}

// pidsOf finds the "child=N grandchild=M" line of the grandchild
// behaviours (the grandchild's own output may come first).
func pidsOf(t *testing.T, out string) (child, grandchild int) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^child=(\d+) grandchild=(\d+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	child, _ = strconv.Atoi(m[1])
	grandchild, _ = strconv.Atoi(m[2])
	return child, grandchild
}

func TestEngineFakeGrandchildKilled(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "grandchild", nil)
	// The grandchild holds the output pipes: Run ends because it was
	// killed with the group, not because the drain timed out (a minute
	// here, so that a busy machine cannot blur the two).
	r.engine.drain = time.Minute
	r.run(t, context.Background())
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{ExitCode: 0}, r.outcome, "stderr: %s", r.stderr.String())
	require.Less(t, r.elapsed, 30*time.Second)
	child, grandchild := pidsOf(t, r.stdout.String())
	requireGone(t, child)
	requireGone(t, grandchild)
}

func TestEngineFakeEscapedGrandchildDoesNotHang(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "escapes-group", nil)
	r.run(t, context.Background())
	child, grandchild := pidsOf(t, r.stdout.String())
	requireGone(t, child)
	if cgroup.Current().Used {
		// The run's cgroup still holds it: it is stopped with the tree
		// once the child exits, and the pipes it held close with it.
		requireGone(t, grandchild)
		require.NoError(t, r.err)
		require.Equal(t, engine.Outcome{ExitCode: 0}, r.outcome)
		// Not the grandchild's 60 s sleep (loose for a loaded machine).
		require.Less(t, r.elapsed, 30*time.Second)
		return
	}
	// Without cgroups, a process that left the group is not the engine's
	// to kill (it is this test's); Run stops waiting for the pipes after
	// drainTimeout.
	defer func() {
		syscall.Kill(grandchild, syscall.SIGKILL)
		requireGone(t, grandchild)
	}()
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{ExitCode: 0}, r.outcome)
	require.GreaterOrEqual(t, r.elapsed, drainTimeout)
	// Not the grandchild's 60 s sleep (loose for a loaded machine).
	require.Less(t, r.elapsed, 30*time.Second)
}

func TestEngineFakeFDLevelOutput(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "fd-output", nil)
	r.run(t, context.Background())
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{ExitCode: 0}, r.outcome, "stderr: %s", r.stderr.String())
	require.Equal(t, "from-grandchild\nfrom-child-stdout\n", r.stdout.String())
	require.Equal(t, "grandchild-stderr\nfrom-child-stderr\n", r.stderr.String())
}

func TestEngineFakeBigOutput(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "big-output", nil)
	r.run(t, context.Background())
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{ExitCode: 0}, r.outcome)
	require.Equal(t, strings.Repeat(strings.Repeat("o", 1023)+"\n", 4096), r.stdout.String())
	require.Equal(t, strings.Repeat(strings.Repeat("e", 1023)+"\n", 1024), r.stderr.String())
}

func TestEngineContextAlreadyDone(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "sleep", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.run(t, ctx)
	require.NoError(t, r.err)
	// Not the child's 60 s sleep (loose for a loaded machine).
	require.Less(t, r.elapsed, 30*time.Second)
	require.Equal(t, -1, r.outcome.ExitCode)
	require.NotEmpty(t, r.outcome.Crash)
}

func TestEngineMissingInterpreter(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "exit", nil)
	r.engine.Python = filepath.Join(t.TempDir(), "no-such-python")
	r.run(t, context.Background())
	require.Error(t, r.err)
	require.Contains(t, r.err.Error(), "starting")
	require.Contains(t, r.err.Error(), "no-such-python")
}

// TestEngineBadSetup: a run that cannot start says why.
func TestEngineBadSetup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		spoil      func(r *fakeRun)
	}{
		{"missing workdir", "starting", func(r *fakeRun) { r.job.Workdir = filepath.Join(r.job.Workdir, "gone") }},
		{"empty python", "no python interpreter", func(r *fakeRun) { r.engine.Python = "" }},
		{"bad transport", "carrier-pigeon", func(r *fakeRun) { r.engine.Transport = "carrier-pigeon" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newFakeRun(t, "exit", nil)
			tc.spoil(r)
			r.run(t, context.Background())
			require.Error(t, r.err)
			require.Contains(t, r.err.Error(), tc.want)
		})
	}
}

func TestEngineBadTempDir(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "exit", nil)
	r.engine.TempDir = filepath.Join(t.TempDir(), "missing")
	_, err := r.engine.Run(context.Background(), r.job)
	require.Error(t, err)
	require.Contains(t, err.Error(), "private dir")
}

// TestEngineRelativeTempDir runs with a relative Engine.TempDir: the child
// runs in another working dir, so every path it gets must be absolute. It
// changes the working dir, so it cannot run in parallel.
func TestEngineRelativeTempDir(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.Mkdir("rel-tmp", 0o700))
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			rec := &callRecorder{}
			r := newFakeRun(t, "roundtrip", rec.tool)
			r.engine.Transport = tr
			r.engine.TempDir = "rel-tmp"
			r.run(t, context.Background())
			require.NoError(t, r.err)
			require.Equal(t, engine.Outcome{ExitCode: 1}, r.outcome, "stdout: %s\nstderr: %s", r.stdout.String(), r.stderr.String())
			// The child, in another working dir, found the staged files
			// and the socket.
			require.Contains(t, r.stdout.String(), `"script":"print('the script')\n"`)
			require.Contains(t, r.stdout.String(), `CALL {"args":{"path":"hello.txt"},"tool":"read_file"}`)
			require.NotNil(t, r.job.Broker.Report())
		})
	}
}
