//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCtrlC interrupts a running script the way a user at a terminal does.
func TestCtrlC(t *testing.T) {
	forModes(t, allModes, ctrlC)
}

func ctrlC(t *testing.T, m runMode) {
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], append(append([]string{"run"}, m.args...), "-")...)
	cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "TMPDIR="+tmp, "HERMES_HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader("print('looping', flush=True)\nwhile True:\n    pass\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	time.Sleep(3 * time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, errb.String())
	require.Equal(t, 1, ee.ExitCode())
	var res result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.Equal(t, "interrupted", res.Status)
	require.True(t, strings.HasSuffix(res.Output, "[execution interrupted — interrupted by the user (Ctrl-C)]"), res.Output)
	left, _ := os.ReadDir(tmp)
	require.Empty(t, left)
}

// TestTimeoutKillsProcessTree: a script that ignores SIGTERM and starts a
// grandchild that ignores it too is gone, with its grandchild, within the
// timeout plus the 5 s grace plus a second.
func TestTimeoutKillsProcessTree(t *testing.T) {
	forModes(t, []runMode{projectUnix}, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		start := time.Now()
		code, res, _ := e.run(`import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
gc = subprocess.Popen([sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('grandchild', flush=True)\ntime.sleep(600)"])
print("pids", gc.pid, flush=True)
time.sleep(600)
`, "--timeout", "2")
		elapsed := time.Since(start)
		require.Equal(t, 1, code)
		require.Equal(t, "timeout", res.Status)
		require.Less(t, elapsed, 8*time.Second, "timeout + grace + 1 s")
		require.GreaterOrEqual(t, elapsed, 6*time.Second, "the grace period is given")
		require.Contains(t, res.Output, "grandchild")
		var pid int
		for _, line := range strings.Split(res.Output, "\n") {
			if rest, ok := strings.CutPrefix(line, "pids "); ok {
				pid, _ = strconv.Atoi(rest)
			}
		}
		require.NotZero(t, pid, res.Output)
		// SIGKILL went to the group before the run returned; the kernel
		// may take a moment to tear the process down.
		deadline := time.Now().Add(2 * time.Second)
		for !gone(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		require.True(t, gone(pid), "grandchild %d survived", pid)
	})
}

// gone reports whether a process no longer runs (absent, or a zombie
// waiting for a parent that is not ours to reap it).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}
