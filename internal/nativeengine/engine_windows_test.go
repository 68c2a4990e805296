package nativeengine

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// Project mode on Windows without a python: the engine starts this test
// binary as its child (fakepython_windows_test.go), which talks the tool
// channel over loopback TCP with its token, in a job object.

func TestEngineFakeRoundtripWindows(t *testing.T) {
	t.Parallel()
	rec := &callRecorder{}
	r := newFakeRun(t, "roundtrip", rec.tool)
	require.Equal(t, native.TransportTCP, r.engine.transport(), "loopback TCP is the Windows default")
	r.job.Env = append(r.job.Env,
		"HERMES_RPC_TOKEN=stale-token-from-the-parent",
		"HERMES_RPC_SOCKET=stale",
		"FAKE_INHERITED=yes")
	r.run(t, context.Background())
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{ExitCode: 1}, r.outcome, "stdout: %s\nstderr: %s", r.stdout.String(), r.stderr.String())

	var info struct {
		Args      []string `json:"args"`
		Socket    string   `json:"socket"`
		Token     string   `json:"token"`
		Inherited string   `json:"inherited"`
		InJob     bool     `json:"in_job"`
	}
	out := r.stdout.String()
	line, _, _ := strings.Cut(out[strings.Index(out, "INFO ")+5:], "\n")
	require.NoError(t, json.Unmarshal([]byte(line), &info), out)
	require.Len(t, info.Args, 3)
	require.Equal(t, "-u", info.Args[0])
	require.Equal(t, engine.RunnerName, filepath.Base(info.Args[1]))
	require.Equal(t, engine.ScriptName, filepath.Base(info.Args[2]))
	require.True(t, strings.HasPrefix(info.Socket, "tcp://127.0.0.1:"), info.Socket)
	require.Len(t, info.Token, 64)
	require.NotEqual(t, "stale-token-from-the-parent", info.Token)
	require.Equal(t, "yes", info.Inherited)
	require.True(t, info.InJob, "the child runs in a job object")

	require.Contains(t, out, `HELLO {"ok": true}`)
	require.Contains(t, out, `CALL {"args":{"path":"hello.txt"},"tool":"read_file"}`)
	require.Contains(t, out, `EXIT {"ok":true}`)
	require.EqualValues(t, 1, rec.n.Load())
	n, log := r.job.Broker.Made()
	require.Equal(t, 1, n)
	require.Equal(t, "read_file", log[0].Tool)
	require.Equal(t, &engine.ExitReport{Kind: "exception", Code: 1, Type: "RuntimeError", Message: "fake", Traceback: "Traceback: fake\n"}, r.job.Broker.Report())
}

func TestEngineFakeWrongTokenWindows(t *testing.T) {
	t.Parallel()
	rec := &callRecorder{}
	r := newFakeRun(t, "wrong-token", rec.tool)
	r.run(t, context.Background())
	require.NoError(t, r.err)
	require.Equal(t, engine.Outcome{ExitCode: 0}, r.outcome, "stdout: %s\nstderr: %s", r.stdout.String(), r.stderr.String())
	out := r.stdout.String()
	unauthorized, err := json.Marshal(map[string]string{"error": engine.ErrUnauthorized})
	require.NoError(t, err)
	for _, what := range []string{"BADHELLO", "BADCALL", "BADCALL2", "NOTOKEN"} {
		m := regexp.MustCompile(`(?m)^` + what + ` (.*)$`).FindStringSubmatch(out)
		require.NotNil(t, m, "%s in %s", what, out)
		require.JSONEq(t, string(unauthorized), m[1], what)
	}
	require.Contains(t, out, `HELLO {"ok": true}`, "the right token is taken")
	require.Zero(t, rec.n.Load(), "no call with a wrong token reached the tool")
	n, _ := r.job.Broker.Made()
	require.Zero(t, n)
}

// TestEngineFakeTimeoutKillsTreeWindows: the run's context ends (a
// timeout) while the child and two grandchildren sleep: the job object
// ends all three, and Run returns at once.
func TestEngineFakeTimeoutKillsTreeWindows(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, "tree", nil)
	r.stdout = newSyncBuffer(" ready\n")
	r.job.Stdout = r.stdout
	r.engine.Grace = 2 * time.Minute // no grace on Windows: the job is terminated at once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	handles := make(chan []windows.Handle, 1)
	cancelled := make(chan time.Time, 1)
	go func() {
		defer cancel()
		var hs []windows.Handle
		defer func() { handles <- hs }()
		select {
		case <-r.stdout.matched:
		case <-time.After(30 * time.Second):
			return
		}
		// Opened while they run (which keeps their pids from being
		// reused), before the timeout.
		m := regexp.MustCompile(`tree child=(\d+) grandchildren=(\d+),(\d+) ready`).FindStringSubmatch(r.stdout.String())
		if m == nil {
			return
		}
		for _, s := range m[1:] {
			pid, _ := strconv.Atoi(s)
			h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
			if err != nil {
				return
			}
			hs = append(hs, h)
		}
		cancelled <- time.Now()
	}()
	r.run(t, ctx)
	end := time.Now()
	hs := <-handles
	defer func() {
		for _, h := range hs {
			windows.CloseHandle(h)
		}
	}()
	require.Len(t, hs, 3, "the child and its two grandchildren reported; stdout: %s\nstderr: %s", r.stdout.String(), r.stderr.String())
	require.NoError(t, r.err)
	// Far below the 2-minute grace, loose for a loaded machine under wine.
	require.Less(t, end.Sub(<-cancelled), time.Minute, "Run returned at once, not after the grace")
	require.Equal(t, engine.Outcome{ExitCode: 1}, r.outcome, "the job's termination code")
	for i, h := range hs {
		ev, err := windows.WaitForSingleObject(h, 0)
		require.NoError(t, err)
		require.Equal(t, uint32(windows.WAIT_OBJECT_0), ev, "process %d of 3 still runs after Run returned", i+1)
		var code uint32
		require.NoError(t, windows.GetExitCodeProcess(h, &code))
		require.Equal(t, uint32(1), code, fmt.Sprintf("process %d of 3 was terminated with the job", i+1))
	}
	n, _ := r.job.Broker.Made()
	require.Zero(t, n)
}
