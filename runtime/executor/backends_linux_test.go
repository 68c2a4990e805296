package executor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// remoteCase is one remote backend under test: the config that selects
// it, and how the test looks into the target by itself (a shell command
// run there, not through the executor).
type remoteCase struct {
	name    string
	cfg     func(t testing.TB) config.Config
	environ []string
	// inTarget runs a shell command in the target and returns its output.
	inTarget func(t testing.TB, session, cmd string) string
	cwd      string
}

const secretValue = "sk-host-secret-must-not-leak"

// remoteCases are docker, ssh, and exec with `docker exec -i CTR` as the
// prefix, against the engines backendtest starts.
func remoteCases(t testing.TB) []remoteCase {
	d := backendtest.Docker(t)
	s := backendtest.SSH(t)
	dockerIn := func(t testing.TB, ctr, cmd string) string {
		t.Helper()
		c := exec.Command(d.Docker, "exec", "-i", ctr, "sh", "-c", cmd)
		c.Env = append(os.Environ(), d.Env...)
		out, err := c.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	home, _ := os.UserHomeDir()
	base := func() config.Config {
		cfg := config.Default()
		cfg.CodeExecution.Timeout = 60
		return cfg
	}
	// The exec backend's container: one for the test, removed at cleanup.
	execCtr := "hermes-exec-test-" + fmt.Sprint(os.Getpid())
	return []remoteCase{
		{
			name: "docker",
			cfg: func(t testing.TB) config.Config {
				cfg := base()
				cfg.Terminal.Backend = config.BackendDocker
				cfg.Terminal.DockerImage = d.Image
				cfg.Terminal.DockerNetwork = false
				cfg.Terminal.ContainerPersistent = false
				cfg.Terminal.DockerEnv = map[string]string{"FROM_CONFIG": "cfg-value"}
				cfg.Terminal.DockerForwardEnv = []string{"FORWARDED_TOKEN"}
				return cfg
			},
			environ: d.Env,
			inTarget: func(t testing.TB, session, cmd string) string {
				ctr := strings.TrimSpace(d.Run(t, "ps", "-q", "--filter", "label=hermes-wasm-exec.session="+session, "--filter", fmt.Sprintf("label=hermes-wasm-exec.pid=%d", os.Getpid())))
				require.NotEmpty(t, ctr, "no container for session %s", session)
				return dockerIn(t, ctr, cmd)
			},
			cwd: "/root",
		},
		{
			name: "ssh",
			cfg: func(t testing.TB) config.Config {
				cfg := base()
				cfg.Terminal.Backend = config.BackendSSH
				cfg.Terminal.SSHHost, cfg.Terminal.SSHPort, cfg.Terminal.SSHUser = s.Host, s.Port, s.User
				cfg.Terminal.SSHKey, cfg.Terminal.SSHKnownHosts = s.KeyFile, s.KnownHostsFile
				cfg.Terminal.Cwd = t.TempDir()
				return cfg
			},
			inTarget: func(t testing.TB, _, cmd string) string {
				out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
				require.NoError(t, err, "%s", out)
				return string(out)
			},
			cwd: home,
		},
		{
			name: "exec",
			cfg: func(t testing.TB) config.Config {
				d.Run(t, "run", "-d", "--init", "--network", "none", "--name", execCtr, "--entrypoint", "sh", d.Image, "-c", "while :; do sleep 1000; done")
				t.Cleanup(func() { d.Run(t, "rm", "-f", execCtr) })
				cfg := base()
				cfg.Terminal.Backend = config.BackendExec
				cfg.Terminal.ExecCommand = []string{d.Docker, "exec", "-i", execCtr}
				cfg.Terminal.Cwd = "/tmp"
				return cfg
			},
			environ: d.Env,
			inTarget: func(t testing.TB, _, cmd string) string {
				return dockerIn(t, execCtr, cmd)
			},
			cwd: "/tmp",
		},
	}
}

// newRemoteExecutor is an executor for rc whose environment holds a
// provider key (never to be seen in the target), a forwarded variable and
// a passthrough one.
func newRemoteExecutor(t testing.TB, rc remoteCase, cfg config.Config) *executor.Executor {
	cfg.Terminal.EnvPassthrough = []string{"PASSED_THROUGH"}
	environ := append(os.Environ(), rc.environ...)
	environ = append(environ, "OPENAI_API_KEY="+secretValue, "FORWARDED_TOKEN=fwd-value", "PASSED_THROUGH=pt-value")
	ex := executor.New(executor.Options{Config: &cfg, Environ: environ})
	t.Cleanup(func() { ex.Close(context.Background()) })
	return ex
}

// toolsScript uses every file tool and terminal, and prints what it saw.
const toolsScript = `
import os, json
from hermes_tools import read_file, write_file, patch, search_files, terminal
w = write_file("remote-notes/a.txt", "alpha\nbeta\n")
print("write", w.get("bytes_written"), "error" in w)
print("read", read_file("remote-notes/a.txt")["content"].replace("\n", "|"))
p = patch(path="remote-notes/a.txt", old_string="beta", new_string="gamma")
print("patch", p.get("success"), p.get("error"))
s = search_files("gamma", path="remote-notes")
print("search", s.get("total_count"), [m["path"].endswith("a.txt") for m in s.get("matches", [])])
t = terminal("cat remote-notes/a.txt; pwd; echo key=${OPENAI_API_KEY:-unset} pt=$PASSED_THROUGH")
print("terminal", t["exit_code"], t["output"].replace("\n", "|"))
print("env", os.environ.get("OPENAI_API_KEY", "unset"))
`

func TestRemoteBackendsEndToEnd(t *testing.T) {
	for _, rc := range remoteCases(t) {
		t.Run(rc.name, func(t *testing.T) {
			cfg := rc.cfg(t)
			cwd := cfg.Terminal.RemoteCwd()
			if cwd == "" || cwd == "~" {
				cwd = rc.cwd
			}
			for _, mode := range []string{config.ModeProject, config.ModeStrict} {
				t.Run(mode, func(t *testing.T) {
					ex := newRemoteExecutor(t, rc, cfg)
					session := "e2e-" + rc.name + "-" + mode
					dir := "remote-notes"
					res, err := ex.Execute(context.Background(), executor.Request{Mode: mode, Code: toolsScript, Session: session})
					require.NoError(t, err)
					require.Equal(t, config.StatusSuccess, res.Status, "%+v", res)
					assert.Equal(t, strings.Join([]string{
						"write 11 False",
						"read 1|alpha|2|beta",
						"patch True None",
						"search 1 [True]",
						"terminal 0 alpha|gamma|" + cwd + "|key=unset pt=pt-value|",
						"env unset",
					}, "\n")+"\n", res.Output)
					// The file is in the target, not on this host (unless the
					// target is this host).
					got := rc.inTarget(t, session, "cat "+cwd+"/"+dir+"/a.txt")
					assert.Equal(t, "alpha\ngamma\n", got)
					rc.inTarget(t, session, "rm -rf "+cwd+"/"+dir)
				})
			}
		})
	}
}

// countInTarget counts the processes of the target whose command line is
// exactly cmdline (zombies have none; the counting shell's own holds more).
// A process that ends while it is counted is skipped: stderr is redirected
// before the shell opens its cmdline.
func countInTarget(t *testing.T, rc remoteCase, session, cmdline string) string {
	return strings.TrimSpace(rc.inTarget(t, session, `n=0; for p in /proc/[0-9]*; do c=$(tr "\0" " " 2>/dev/null < $p/cmdline); case $c in "`+cmdline+` ") n=$((n+1));; esac; done; echo $n`))
}

// Timeouts and interrupts stop the script's whole tree in the target, not
// only the local client; a terminal command's timeout its own tree.
func TestRemoteBackendsTimeouts(t *testing.T) {
	for _, rc := range remoteCases(t) {
		t.Run(rc.name, func(t *testing.T) {
			cfg := rc.cfg(t)
			ex := newRemoteExecutor(t, rc, cfg)
			session := "timeouts-" + rc.name
			// The count sees a process that runs (the control for the zeros below).
			ctl := fmt.Sprintf("sleep 3%d.75", os.Getpid()%1000)
			res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeStrict, Session: session,
				Code: "from hermes_tools import terminal\nprint(terminal('echo ok')['output'])"})
			require.NoError(t, err)
			rc.inTarget(t, session, "nohup "+ctl+" >/dev/null 2>&1 &")
			assert.Equal(t, "1", countInTarget(t, rc, session, ctl))
			rc.inTarget(t, session, "kill $(for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' 2>/dev/null < $p/cmdline); case $c in '"+ctl+" ') echo ${p#/proc/};; esac; done)")
			// Project mode: a detached child of the script.
			needle := fmt.Sprintf("sleep 1%d.25", os.Getpid()%1000)
			res, err = ex.Execute(context.Background(), executor.Request{Mode: config.ModeProject, Session: session, Timeout: 3 * time.Second,
				Code: fmt.Sprintf("import subprocess, time\nsubprocess.Popen(%q.split(), start_new_session=True)\nprint('started', flush=True)\ntime.sleep(100)", needle)})
			require.NoError(t, err)
			assert.Equal(t, config.StatusTimeout, res.Status, "%+v", res)
			assert.True(t, strings.HasPrefix(res.Output, "started\n"), res.Output)
			assert.Equal(t, "0", countInTarget(t, rc, session, needle), "the script's detached child still runs in the target")

			// Strict mode: terminal's own timeout.
			needle2 := fmt.Sprintf("sleep 2%d.5", os.Getpid()%1000)
			res, err = ex.Execute(context.Background(), executor.Request{Mode: config.ModeStrict, Session: session,
				Code: fmt.Sprintf("from hermes_tools import terminal\nr = terminal(%q, timeout=2)\nprint(r['exit_code'])", "sh -c '"+needle2+" & wait'")})
			require.NoError(t, err)
			require.Equal(t, config.StatusSuccess, res.Status, "%+v", res)
			assert.Equal(t, "124\n", res.Output)
			assert.Equal(t, "0", countInTarget(t, rc, session, needle2), "the command's tree still runs in the target")
		})
	}
}

// Session kernels in the backend keep their state, reset, and when one
// cannot start, the call runs as a standalone script and says so.
func TestRemoteBackendsKernels(t *testing.T) {
	for _, rc := range remoteCases(t) {
		t.Run(rc.name, func(t *testing.T) {
			cfg := rc.cfg(t)
			ex := newRemoteExecutor(t, rc, cfg)
			session := "kernels-" + rc.name
			call := func(code string, reset bool) executor.Result {
				t.Helper()
				res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeProject, Session: session, Code: code, Reset: reset})
				require.NoError(t, err)
				require.Equal(t, config.StatusSuccess, res.Status, "%+v", res)
				return res
			}
			res := call("import os, socket\nx = 41\nprint(os.getcwd())", false)
			require.NotNil(t, res.Kernel)
			assert.False(t, res.Kernel.Reused)
			res = call("from hermes_tools import terminal\nprint(x + 1, terminal('echo hi')['output'].strip())", false)
			assert.True(t, res.Kernel.Reused)
			assert.Equal(t, "42 hi\n", res.Output)
			res = call("print('x' in globals())", true)
			assert.True(t, res.Kernel.StateReset)
			assert.Equal(t, "False\n", res.Output)

			// An interrupt stops the running cell's tree in the target; the
			// next call starts a fresh kernel.
			needle := fmt.Sprintf("sleep 4%d.5", os.Getpid()%1000)
			c := ex.Start(context.Background(), executor.Request{Mode: config.ModeProject, Session: session,
				Code: fmt.Sprintf("import subprocess\nprint('running', flush=True)\nsubprocess.run(%q.split())", needle)})
			require.Eventually(t, func() bool { return countInTarget(t, rc, session, needle) == "1" }, 60*time.Second, 50*time.Millisecond)
			require.True(t, ex.Interrupt(session, "the test interrupts it"))
			res, err := c.Wait()
			require.NoError(t, err)
			assert.Equal(t, config.StatusInterrupted, res.Status, "%+v", res)
			assert.Equal(t, "0", countInTarget(t, rc, session, needle))
			res = call("print('x' in globals())", false)
			assert.False(t, res.Kernel.Reused)

			restore := executor.FailRemoteKernels(fmt.Errorf("no kernel today"))
			defer restore()
			res = call("print('standalone')", true)
			assert.Equal(t, "standalone\n", res.Output)
			require.NotNil(t, res.Kernel)
			assert.Equal(t, "remote session kernel unavailable on "+rc.name+"; this call ran as a standalone script, state does not persist", res.Kernel.Note)
			assert.Contains(t, res.Warning, "state does not persist")
		})
	}
}

// The docker backend: one labelled container per session, removed with
// the session unless persistent, kept and reused by the next executor when
// persistent; docker_env and forwarded variables reach commands, and a
// container without python3 gives project mode a clear error while strict
// mode still works there.
func TestDockerBackendContainers(t *testing.T) {
	d := backendtest.Docker(t)
	rc := remoteCases(t)[0]
	require.Equal(t, "docker", rc.name)
	containers := func(session string) []string {
		out := d.Run(t, "ps", "-a", "--format", "{{.Names}}", "--filter", "label=hermes-wasm-exec.session="+session)
		return strings.Fields(out)
	}

	t.Run("per session, removed with it", func(t *testing.T) {
		cfg := rc.cfg(t)
		ex := newRemoteExecutor(t, rc, cfg)
		code := "from hermes_tools import terminal\nprint(terminal('echo $FROM_CONFIG $FORWARDED_TOKEN; for p in /proc/[0-9]*; do tr \"\\\\0\" \" \" 2>/dev/null < $p/cmdline; echo; done | grep -c \"fwd[-]value\"')['output'])"
		for _, s := range []string{"docker-a", "docker-b"} {
			res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeStrict, Session: s, Code: code})
			require.NoError(t, err)
			// The forwarded value is in the environment, on no command line.
			assert.Equal(t, "cfg-value fwd-value\n0\n\n", res.Output)
		}
		a, b := containers("docker-a"), containers("docker-b")
		require.Len(t, a, 1)
		require.Len(t, b, 1)
		assert.NotEqual(t, a, b)
		ex.CloseSession(context.Background(), "docker-a")
		assert.Empty(t, containers("docker-a"))
		assert.Len(t, containers("docker-b"), 1)
		require.NoError(t, ex.Close(context.Background()))
		assert.Empty(t, containers("docker-b"))
	})

	t.Run("persistent, reused by the next process", func(t *testing.T) {
		cfg := rc.cfg(t)
		cfg.Terminal.ContainerPersistent = true
		session := fmt.Sprintf("docker-persistent-%d", os.Getpid())
		t.Cleanup(func() {
			for _, c := range containers(session) {
				d.Run(t, "rm", "-f", c)
			}
		})
		for i, want := range []string{"1\n", "2\n"} {
			ex := newRemoteExecutor(t, rc, cfg)
			res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeStrict, Session: session,
				Code: "from hermes_tools import terminal\nprint(terminal('echo x >> /root/visits; wc -l < /root/visits')['output'], end='')"})
			require.NoError(t, err)
			assert.Equal(t, want, res.Output, "executor %d", i)
			ex.CloseSession(context.Background(), session)
			require.NoError(t, ex.Close(context.Background()))
			assert.Len(t, containers(session), 1, "kept")
		}
	})

	t.Run("removed under a session, started again", func(t *testing.T) {
		cfg := rc.cfg(t)
		ex := newRemoteExecutor(t, rc, cfg)
		session := fmt.Sprintf("docker-revive-%d", os.Getpid())
		call := func(mode, code string) executor.Result {
			t.Helper()
			res, err := ex.Execute(context.Background(), executor.Request{Mode: mode, Session: session, Code: code})
			require.NoError(t, err)
			return res
		}
		res := call(config.ModeProject, "from hermes_tools import write_file\nx = 1\nprint(write_file('f.txt', 'one')['bytes_written'])")
		require.Equal(t, "3\n", res.Output, "%+v", res)
		for _, c := range containers(session) {
			d.Run(t, "rm", "-f", c)
		}
		// The kernel went with the container; the next project call starts
		// a container and a kernel again (its state is gone, and says so).
		res = call(config.ModeProject, "print('x' in globals())")
		assert.Equal(t, config.StatusSuccess, res.Status, "%+v", res)
		assert.Equal(t, "False\n", res.Output)
		assert.Len(t, containers(session), 1)
		// A strict call's terminal: at worst its first command meets the
		// removed container (the client says so), and then it is back.
		for _, c := range containers(session) {
			d.Run(t, "rm", "-f", c)
		}
		code := "from hermes_tools import terminal\nprint(terminal('echo back')['output'], end='')"
		res = call(config.ModeStrict, code)
		if res.Output != "back\n" {
			assert.Contains(t, res.Output, "No such container")
			res = call(config.ModeStrict, code)
		}
		assert.Equal(t, "back\n", res.Output)
		// And the file tools after a removal: the agent dies, the container
		// is started again, the read is tried again.
		for _, c := range containers(session) {
			d.Run(t, "rm", "-f", c)
		}
		res = call(config.ModeStrict, "from hermes_tools import read_file\nprint(read_file('f.txt').get('error', 'no error'))")
		assert.Contains(t, res.Output, "not found")
	})

	t.Run("no python in the container", func(t *testing.T) {
		ctr := fmt.Sprintf("hermes-nopython-%d", os.Getpid())
		d.Run(t, "run", "-d", "--init", "--network", "none", "--name", ctr, "--entrypoint", "sh", d.Image, "-c", "rm -f /usr/bin/python3*; while :; do sleep 1000; done")
		t.Cleanup(func() { d.Run(t, "rm", "-f", ctr) })
		cfg := config.Default()
		cfg.Terminal.Backend = config.BackendExec
		cfg.Terminal.ExecCommand = []string{d.Docker, "exec", "-i", ctr}
		ex := newRemoteExecutor(t, rc, cfg)
		require.Eventually(t, func() bool {
			return strings.TrimSpace(d.Run(t, "exec", ctr, "sh", "-c", "ls /usr/bin/python3* 2>/dev/null | wc -l")) == "0"
		}, 30*time.Second, 50*time.Millisecond)
		res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeProject, Code: "print(1)"})
		require.NoError(t, err)
		assert.Equal(t, config.StatusError, res.Status)
		assert.Contains(t, res.Error, "Project mode needs python3 in the exec backend")
		assert.Contains(t, res.Error, "apt-get install python3")
		res, err = ex.Execute(context.Background(), executor.Request{Mode: config.ModeStrict, Code: "from hermes_tools import terminal\nprint(terminal('echo from the container')['output'], end='')"})
		require.NoError(t, err)
		assert.Equal(t, "from the container\n", res.Output)
	})
}
