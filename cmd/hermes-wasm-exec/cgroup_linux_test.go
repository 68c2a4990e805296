package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
)

// needCgroups skips t where this process cannot make cgroups (nor the CLI
// it starts, in the same cgroup), saying why.
func needCgroups(t *testing.T) cgroup.Status {
	t.Helper()
	st := cgroup.Current()
	if !st.Used {
		t.Skip("cgroups are not used here: " + st.Reason)
	}
	return st
}

// waitUntil waits (generous deadline) for cond; false if it never held.
func waitUntil(cond func() bool) bool {
	deadline := time.Now().Add(2 * time.Minute) // a loaded machine took over 20 s
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// TestExecutorKilledTakesItsRunWith SIGKILLs the CLI (the test binary as
// the CLI, in a child process) while a run's detached processes are
// running: a project script's setsid'd child and double-forked daemon, a
// terminal command's setsid'd child. No Go code of the executor runs after
// a SIGKILL: the watcher must kill them, and remove the cgroups.
func TestExecutorKilledTakesItsRunWith(t *testing.T) {
	st := needCgroups(t)
	// Each script appends "NAME PID START" to the file pids in the working
	// dir for each process it leaves, then creates ready and waits.
	const projectScript = procStartPy + `import os, subprocess, time
def note(name, pid):
    with open("pids", "a") as f:
        f.write("%s %d %d\n" % (name, pid, proc_start(pid)))
note("new-session", subprocess.Popen(["sleep", "300"], start_new_session=True).pid)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"%d\n" % os.getpid())
        os.execvp("sleep", ["sleep", "300"])
    os._exit(0)
os.wait()
note("daemon", int(os.read(r, 32)))
open("ready", "w").close()
time.sleep(300)
`
	// The setsid command returns only once the sleep leads its own
	// session; the command itself runs on until the executor dies.
	const terminalScript = `from hermes_tools import terminal
terminal("setsid sleep 300 > /dev/null 2>&1 & p=$!; until [ \"$(cut -d' ' -f6 /proc/$p/stat)\" = $p ]; do sleep 0.01; done; " +
         "echo setsid $p $(cut -d' ' -f22 /proc/$p/stat) >> pids; touch ready; sleep 300")
`
	cases := []struct {
		name, script string
		mode         runMode
	}{
		{"project script", projectScript, projectUnix},
		{"terminal command", terminalScript, strictMode},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			workdir := t.TempDir()
			cmd := exec.Command(os.Args[0], append(append([]string{"run"}, tc.mode.args...), "--workdir", workdir, "-")...)
			cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "HERMES_HOME="+t.TempDir(), "TMPDIR="+t.TempDir())
			cmd.Stdin = strings.NewReader(tc.script)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			ready := waitUntil(func() bool {
				select {
				case <-exited:
					return true
				default:
				}
				_, err := os.Stat(filepath.Join(workdir, "ready"))
				return err == nil
			})
			type noted struct {
				name  string
				pid   int
				start uint64
			}
			var left []noted
			b, _ := os.ReadFile(filepath.Join(workdir, "pids"))
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if name, rest, ok := strings.Cut(line, " "); ok {
					if pid, start := parsePidStart(rest); pid > 1 && start > 0 {
						t.Cleanup(func() { killIfSame(pid, start) })
						left = append(left, noted{name, pid, start})
					}
				}
			}
			require.True(t, ready, "the script never got ready")
			select {
			case <-exited:
				require.FailNow(t, "the CLI ended before it was killed", "%s", out.String())
			default:
			}
			require.NotEmpty(t, left, "the script noted no process: %q", b)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			<-exited
			for _, p := range left {
				if !waitUntil(func() bool { return gone(p.pid, p.start) }) {
					t.Errorf("%s process %d outlived the executor", p.name, p.pid)
				}
			}
			mine := func() []string {
				var left []string
				for _, parent := range st.Parents {
					m, _ := filepath.Glob(filepath.Join(parent, "hermes-"+strconv.Itoa(cmd.Process.Pid)+"-*"))
					left = append(left, m...)
				}
				return left
			}
			if !waitUntil(func() bool { return len(mine()) == 0 }) {
				t.Errorf("the executor's cgroups were left behind: %v", mine())
			}
		})
	}
}

// TestProjectLimitHints: a project-mode script past
// project_memory_limit_mb is killed, past process_limit cannot fork, and
// the result's hint names the setting.
func TestProjectLimitHints(t *testing.T) {
	st := needCgroups(t)
	cases := []struct {
		name, script, hint string
		enforced           cgroup.Enforcement
		error              string
	}{
		// 512 MiB at most, in 8 MiB steps: killed at 64 where the limit holds.
		{"memory", "x = [bytearray(8 << 20) for _ in range(64)]\nprint('survived')\n", "code_execution.project_memory_limit_mb (64 MiB here)",
			st.Memory, "Python was killed by signal 9"},
		{"processes", "import subprocess\nps = [subprocess.Popen(['sleep', '30']) for _ in range(100)]\n", "code_execution.process_limit (32 here)",
			st.Processes, "BlockingIOError"},
	}
	// Confined, Landlock lets the script write only in its working and
	// temp dirs: the limits must hold all the same (on a hybrid host the
	// forking thread joins the v1 cgroups before it is restricted).
	for _, confine := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/confine=%v", tc.name, confine), func(t *testing.T) {
				if tc.enforced.By == "" {
					t.Skip("not enforced here: " + tc.enforced.Reason)
				}
				e := newEnvIn(t, projectUnix)
				conf := filepath.Join(e.home, "config.yaml")
				require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf("code_execution:\n  project_memory_limit_mb: 64\n  process_limit: 32\n  confine_tools_to_workdir: %v\n", confine)), 0o600))
				code, res, stderr := e.run(tc.script, "--config", conf)
				require.Equal(t, 1, code, stderr)
				require.Equal(t, "error", res.Status)
				require.Contains(t, res.Error, tc.error)
				require.Contains(t, res.Hint, tc.hint)
			})
		}
	}
}

func TestDoctorCgroups(t *testing.T) {
	newEnv(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, Run([]string{"doctor"}, nil, &out, &errb), errb.String())
	st := cgroup.Current()
	want := []string{"processes a run starts (the project-mode child, terminal commands):\n  cgroups   ", "project_memory_limit_mb: 4096", "process_limit: 256"}
	if st.Used {
		want = append(want, "cgroups   used: each run's processes in a cgroup of their own under "+st.Dir,
			"memory    project_memory_limit_mb: "+st.Memory.String(),
			"processes process_limit: "+st.Processes.String())
	} else {
		want = append(want, "cgroups   not used ("+st.Reason+")", "memory    project_memory_limit_mb: NOT enforced (no cgroups)")
	}
	for _, w := range want {
		require.Contains(t, out.String(), w)
	}
}
