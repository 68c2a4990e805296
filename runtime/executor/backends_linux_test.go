package executor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

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
	cfg     func(t *testing.T) config.Config
	environ []string
	// inTarget runs a shell command in the target and returns its output.
	inTarget func(t *testing.T, session, cmd string) string
	cwd      string
}

const secretValue = "sk-host-secret-must-not-leak"

// remoteCases are docker, ssh, and exec with `docker exec -i CTR` as the
// prefix, against the engines backendtest starts.
func remoteCases(t *testing.T) []remoteCase {
	d := backendtest.Docker(t)
	s := backendtest.SSH(t)
	dockerIn := func(t *testing.T, ctr, cmd string) string {
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
			cfg: func(t *testing.T) config.Config {
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
			inTarget: func(t *testing.T, session, cmd string) string {
				ctr := strings.TrimSpace(d.Run(t, "ps", "-q", "--filter", "label=hermes-wasm-exec.session="+session, "--filter", fmt.Sprintf("label=hermes-wasm-exec.pid=%d", os.Getpid())))
				require.NotEmpty(t, ctr, "no container for session %s", session)
				return dockerIn(t, ctr, cmd)
			},
			cwd: "/root",
		},
		{
			name: "ssh",
			cfg: func(t *testing.T) config.Config {
				cfg := base()
				cfg.Terminal.Backend = config.BackendSSH
				cfg.Terminal.SSHHost, cfg.Terminal.SSHPort, cfg.Terminal.SSHUser = s.Host, s.Port, s.User
				cfg.Terminal.SSHKey, cfg.Terminal.SSHKnownHosts = s.KeyFile, s.KnownHostsFile
				cfg.Terminal.Cwd = t.TempDir()
				return cfg
			},
			inTarget: func(t *testing.T, _, cmd string) string {
				out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
				require.NoError(t, err, "%s", out)
				return string(out)
			},
			cwd: home,
		},
		{
			name: "exec",
			cfg: func(t *testing.T) config.Config {
				d.Run(t, "run", "-d", "--init", "--network", "none", "--name", execCtr, "--entrypoint", "sh", d.Image, "-c", "while :; do sleep 1000; done")
				t.Cleanup(func() { d.Run(t, "rm", "-f", execCtr) })
				cfg := base()
				cfg.Terminal.Backend = config.BackendExec
				cfg.Terminal.ExecCommand = []string{d.Docker, "exec", "-i", execCtr}
				cfg.Terminal.Cwd = "/tmp"
				return cfg
			},
			environ: d.Env,
			inTarget: func(t *testing.T, _, cmd string) string {
				return dockerIn(t, execCtr, cmd)
			},
			cwd: "/tmp",
		},
	}
}

// newRemoteExecutor is an executor for rc whose environment holds a
// provider key (never to be seen in the target), a forwarded variable and
// a passthrough one.
func newRemoteExecutor(t *testing.T, rc remoteCase, cfg config.Config) *executor.Executor {
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
