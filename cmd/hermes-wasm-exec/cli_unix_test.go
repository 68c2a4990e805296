//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	tmp, workdir := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], append(append([]string{"run", "--workdir", workdir}, m.args...), "-")...)
	cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "TMPDIR="+tmp, "HERMES_HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader("from hermes_tools import write_file\nwrite_file('started.txt', 'x')\nprint('looping', flush=True)\nwhile True:\n    pass\n")
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // the test failed before Wait
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	// Ctrl-C once the script runs (it says so with a file), however long a
	// loaded machine takes to start it: not after a fixed sleep.
	started := filepath.Join(workdir, "started.txt")
	pollUntil(t, 2*time.Minute, func() bool {
		_, err := os.Stat(started)
		return err == nil
	}, func() string { return "the script never started: " + errb.String() })
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, errb.String())
	require.Equal(t, 1, ee.ExitCode())
	var res result
	require.NoError(t, json.Unmarshal([]byte(out.String()), &res), out.String())
	require.Equal(t, "interrupted", res.Status)
	require.True(t, strings.HasSuffix(res.Output, "[execution interrupted — interrupted by the user (Ctrl-C)]"), res.Output)
	left, _ := os.ReadDir(tmp)
	require.Empty(t, left)
}

// TestTimeoutKillsProcessTree: a script that ignores SIGTERM and starts a
// grandchild that ignores it too is gone, with its grandchild, within the
// timeout plus the 5 s grace, and well before its 600 s sleep would end.
func TestTimeoutKillsProcessTree(t *testing.T) {
	forModes(t, []runMode{projectUnix}, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		start := time.Now()
		code, res, _ := e.run(procStartPy+`import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
gc = subprocess.Popen([sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('grandchild', flush=True)\ntime.sleep(600)"])
print("pids", gc.pid, proc_start(gc.pid), flush=True)
time.sleep(600)
`, "--timeout", "2")
		elapsed := time.Since(start)
		require.Equal(t, 1, code)
		require.Equal(t, "timeout", res.Status)
		// The lower bound shows the grace was given; the upper one only that
		// the tree was killed rather than waited for (its sleeps are 600 s):
		// timeout + grace is 7 s, and a loaded 2-core machine took 9.5 s.
		require.Less(t, elapsed, 60*time.Second, "killed after timeout + grace, not waited for")
		require.GreaterOrEqual(t, elapsed, 6*time.Second, "the grace period is given")
		require.Contains(t, res.Output, "grandchild")
		var pid int
		var gcStart uint64
		for _, line := range strings.Split(res.Output, "\n") {
			if rest, ok := strings.CutPrefix(line, "pids "); ok {
				pid, gcStart = parsePidStart(rest)
			}
		}
		require.NotZero(t, pid, res.Output)
		// SIGKILL went to the group before the run returned; the kernel
		// may take a moment to tear the process down.
		deadline := time.Now().Add(30 * time.Second)
		for !gone(pid, gcStart) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		require.True(t, gone(pid, gcStart), "grandchild %d survived", pid)
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
	// Each script prints "pid NAME N START" for every process it leaves
	// behind, START its start time (so that a pid reused by the time it is
	// checked is not taken for it, nor killed).
	const script = procStartPy + `import os, subprocess
def note(name, pid):
    print("pid", name, pid, proc_start(pid), flush=True)
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
start = "; echo $p $(cut -d' ' -f22 /proc/$p/stat)"  # comm is (sleep) or (nohup): no spaces
for name, cmd in [("setsid", "setsid sleep 300 > /dev/null 2>&1 & p=$!; until [ \"$(cut -d' ' -f6 /proc/$p/stat)\" = $p ]; do sleep 0.01; done" + start),
                  ("nohup", "nohup sleep 300 > /dev/null 2>&1 & p=$!" + start)]:
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
					var start uint64
					for _, line := range strings.Split(res.Output, "\n") {
						if rest, ok := strings.CutPrefix(line, "pid "+name+" "); ok {
							pid, start = parsePidStart(rest)
						}
					}
					require.Greater(t, pid, 1, "no pid for %s in %q", name, res.Output)
					require.NotZero(t, start, "no start time for %s in %q", name, res.Output)
					// SIGKILL went out before the run returned; the kernel may
					// take a moment to tear the process down.
					deadline := time.Now().Add(30 * time.Second)
					for !gone(pid, start) && time.Now().Before(deadline) {
						time.Sleep(20 * time.Millisecond)
					}
					if !gone(pid, start) {
						killIfSame(pid, start)
						t.Errorf("%s process %d outlived the run", name, pid)
					}
				}
			})
		})
	}
}

// procStartPy defines proc_start(pid) in a script: the start time of pid
// (field 22 of /proc/<pid>/stat), or 0 where there is no /proc.
const procStartPy = `def proc_start(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except OSError:
        return 0
`

// parsePidStart parses "PID START" (START may be missing: 0).
func parsePidStart(s string) (pid int, start uint64) {
	f := strings.Fields(s)
	if len(f) > 0 {
		pid, _ = strconv.Atoi(f[0])
	}
	if len(f) > 1 {
		start, _ = strconv.ParseUint(f[1], 10, 64)
	}
	return pid, start
}

// procStat reads the state and start time of pid from /proc/<pid>/stat;
// exists is false when there is no such process (or no /proc).
func procStat(pid int) (state string, start uint64, exists bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'; f[0] is field 3 (state), f[19] field 22 (start time).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 20 {
		return "", 0, false
	}
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return f[0], start, true
}

// gone reports whether the process pid that started at start (0: not
// known) no longer runs: absent, a zombie waiting for a parent that is
// not ours to reap it, or its pid now names a later process.
func gone(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	state, st, ok := procStat(pid)
	if !ok {
		_, err := os.Stat("/proc/self/stat")
		return err == nil // no such process; without /proc, Kill said it runs
	}
	return start != 0 && st != start || state == "Z" || state == "X"
}

// killIfSame sends SIGKILL to pid if it still names the process that
// started at start, never to a later process that reused the pid.
func killIfSame(pid int, start uint64) {
	if _, st, ok := procStat(pid); ok && st == start {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
