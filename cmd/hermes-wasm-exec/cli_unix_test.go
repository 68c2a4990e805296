//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	goruntime "runtime"
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

// TestDetachedProcessesDieWithTheRun: however a script or a terminal
// command detaches a process (a new session, a new process group, a double
// fork with setsid, nohup ... &), it is gone once the run is over. The CLI
// runs in a child process, hardened as main hardens it (the subreaper on).
func TestDetachedProcessesDieWithTheRun(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("orphans are adopted and killed on Linux only (subreaper)")
	}
	// Each script prints "pid NAME N" for every process it leaves behind.
	const script = `import os, subprocess
def note(name, pid):
    print("pid", name, pid, flush=True)
note("new-session", subprocess.Popen(["sleep", "300"], start_new_session=True).pid)
note("new-group", subprocess.Popen(["sleep", "300"], process_group=0).pid)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"%d\n" % os.getpid())
        os.execvp("sleep", ["sleep", "300"])
    os._exit(0)
os.wait()
note("daemon", int(os.read(r, 32)))
`
	// The setsid command returns only once the sleep leads its own session:
	// a kill of the shell's group before that would catch it too.
	const terminalScript = `from hermes_tools import terminal
for name, cmd in [("setsid", "setsid sleep 300 > /dev/null 2>&1 & p=$!; until [ \"$(cut -d' ' -f6 /proc/$p/stat)\" = $p ]; do sleep 0.01; done; echo $p"),
                  ("nohup", "nohup sleep 300 > /dev/null 2>&1 & echo $!")]:
    r = terminal(cmd)
    assert r["exit_code"] == 0, r
    print("pid", name, r["output"].strip(), flush=True)
`
	cases := []struct {
		name   string
		modes  []runMode
		script string
		pids   []string
	}{
		{"python", []runMode{projectUnix}, script, []string{"new-session", "new-group", "daemon"}},
		{"terminal", []runMode{strictMode, projectUnix}, terminalScript, []string{"setsid", "nohup"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forModes(t, tc.modes, func(t *testing.T, m runMode) {
				e := newEnvIn(t, m)
				code, out, errb := child(t, nil, tc.script, append(append([]string{"run"}, m.args...), "--workdir", e.workdir, "-")...)
				require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errb)
				var res result
				require.NoError(t, json.Unmarshal([]byte(out), &res), out)
				for _, name := range tc.pids {
					var pid int
					for _, line := range strings.Split(res.Output, "\n") {
						if rest, ok := strings.CutPrefix(line, "pid "+name+" "); ok {
							pid, _ = strconv.Atoi(rest)
						}
					}
					require.Greater(t, pid, 1, "no pid for %s in %q", name, res.Output)
					// SIGKILL went out before the run returned; the kernel may
					// take a moment to tear the process down.
					deadline := time.Now().Add(10 * time.Second)
					for !gone(pid) && time.Now().Before(deadline) {
						time.Sleep(20 * time.Millisecond)
					}
					if !gone(pid) {
						syscall.Kill(pid, syscall.SIGKILL)
						t.Errorf("%s process %d outlived the run", name, pid)
					}
				}
			})
		})
	}
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
