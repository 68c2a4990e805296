package executor_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// clientSecrets are host credentials set in the executor's environment
// (t.Setenv: the Go environment, where internal/hardening leaves them): two
// host-managed ones and a secret-named one. None may reach a backend's
// client, nor, through a client that passes its environment on, a script
// or a command in the target.
var clientSecrets = map[string]string{
	"OPENAI_API_KEY":  "sk-client-env-openai",
	"GH_TOKEN":        "ghp-client-env-github",
	"MY_SECRET_TOKEN": "client-env-my-secret",
}

// clientEnvCase is a remote backend whose client is wrapped by a script
// that writes the client's environment to dumps/<client>.<pid> and then
// runs the client.
type clientEnvCase struct {
	cfg config.Config
	// client is the dumps' prefix; want are entries each of its dumps
	// must hold (what the client itself needs).
	client string
	want   []string
	// forwarded: docker_forward_env's variable reaches the target.
	forwarded bool
}

// setClientEnv sets the secrets and the variables a client needs in this
// process's environment, and returns a dir for the dumps and one to put
// on PATH first.
func setClientEnv(t *testing.T) (dumps, bin string) {
	for k, v := range clientSecrets {
		t.Setenv(k, v)
	}
	t.Setenv("FORWARDED_TOKEN", "fwd-client-env")
	t.Setenv("SSH_AUTH_SOCK", "/run/agent.sock")
	t.Setenv("KUBECONFIG", "/etc/kube.conf")
	t.Setenv("MY_CLIENT_VAR", "for-the-client")
	dumps, bin = t.TempDir(), t.TempDir()
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return dumps, bin
}

// hostPython3 fails t without a python3 on PATH: the targets here that are
// this host run project-mode scripts in it.
func hostPython3(t *testing.T) {
	_, err := exec.LookPath("python3")
	require.NoError(t, err, "these tests run project-mode scripts in this host's python3: install it (apt-get install python3)")
}

// writeScript writes an executable sh script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755))
}

// dumpLine is the first line of a wrapper: the client's environment to a
// file of its own (env by absolute path: the client may have no PATH).
func dumpLine(t *testing.T, dumps, client string) string {
	env, err := exec.LookPath("env")
	require.NoError(t, err)
	return fmt.Sprintf("%s > %s/%s.$$\n", env, dumps, client)
}

// clientEnvScript runs a project-mode script in the target that uses a file
// tool (the agent), prints its whole environment and a terminal command's,
// and prints the forwarded variable.
const clientEnvScript = `
import os
from hermes_tools import write_file, read_file, terminal
write_file("client-env.txt", "x")
print("read", read_file("client-env.txt").get("content", "").strip())
print("--- os.environ")
for k, v in sorted(os.environ.items()):
    print(k + "=" + v)
print("--- terminal")
print(terminal("env; echo fwd=${FORWARDED_TOKEN:-unset}")["output"])
`

// checkClientEnv runs clientEnvScript on c's backend and checks that no
// secret reached the target or any client invocation, and that each client
// invocation got what it needs.
func checkClientEnv(t *testing.T, c clientEnvCase, dumps string) {
	c.cfg.CodeExecution.Timeout = 60
	// A Config built in code may name a host-managed credential (a file
	// may not): it is dropped, with a warning.
	c.cfg.Terminal.ClientEnv = []string{"MY_CLIENT_VAR", "OPENAI_API_KEY"}
	var log bytes.Buffer
	ex := executor.New(executor.Options{Config: &c.cfg, Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	assert.Contains(t, log.String(), `"msg":"passthrough refused","names":["OPENAI_API_KEY"],"source":"terminal.client_env"`)
	res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeProject, Code: clientEnvScript})
	require.NoError(t, err)
	require.NoError(t, ex.Close(context.Background()))
	require.Equal(t, config.StatusSuccess, res.Status, "%+v", res)
	require.Contains(t, res.Output, "read 1|x\n")
	require.Contains(t, res.Output, "--- terminal\n")
	for k, v := range clientSecrets {
		assert.NotContains(t, res.Output, v, "%s reached the target", k)
	}
	if c.forwarded {
		assert.Contains(t, res.Output, "fwd=fwd-client-env\n", "docker_forward_env reaches the target")
	}

	files, err := filepath.Glob(filepath.Join(dumps, c.client+".*"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no %s client ran", c.client)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		env := string(data)
		for k, v := range clientSecrets {
			assert.NotContains(t, env, v, "%s reached a %s client (%s)", k, c.client, f)
		}
		assert.NotContains(t, env, "fwd-client-env", "docker_forward_env travels over stdin, not in the client's environment")
		lines := strings.Split(env, "\n")
		for _, w := range append([]string{"PATH=" + os.Getenv("PATH"), "MY_CLIENT_VAR=for-the-client"}, c.want...) {
			assert.Contains(t, lines, w, "the %s client needs it (%s)", c.client, f)
		}
	}
	t.Logf("%d %s client invocations", len(files), c.client)
}

// TestRemoteClientsGetNoSecrets: the local client of every remote backend
// (docker, ssh, the exec prefix) gets only the variables a client needs
// (docs/backends/README.md), never the executor's credentials. Here the
// clients are fakes on PATH that record their environment and pass it on
// to the command they run on this host, as `env --` or `setpriv --` does:
// with the executor's whole environment, every invocation and the
// target's script and terminal() saw the secrets.
func TestRemoteClientsGetNoSecrets(t *testing.T) {
	hostPython3(t)
	t.Run("docker", func(t *testing.T) {
		dumps, bin := setClientEnv(t)
		t.Setenv("DOCKER_HOST", "unix:///run/fake-docker.sock")
		// docker container inspect: none yet; run: started; exec -i CTR
		// ARGV: ARGV here; ps, rm: nothing.
		writeScript(t, filepath.Join(bin, "docker"), dumpLine(t, dumps, "docker")+`case $1 in
container) echo "Error: No such container: $5" >&2; exit 1;;
run) echo started;;
exec) shift 3; exec "$@";;
esac
`)
		cfg := config.Default()
		cfg.Terminal.Backend = config.BackendDocker
		cfg.Terminal.DockerImage = "fake"
		cfg.Terminal.ContainerPersistent = false
		cfg.Terminal.Cwd = t.TempDir()
		cfg.Terminal.DockerForwardEnv = []string{"FORWARDED_TOKEN"}
		checkClientEnv(t, clientEnvCase{cfg: cfg, client: "docker", forwarded: true,
			want: []string{"DOCKER_HOST=unix:///run/fake-docker.sock", "SSH_AUTH_SOCK=/run/agent.sock"}}, dumps)
	})
	t.Run("ssh", func(t *testing.T) {
		dumps, bin := setClientEnv(t)
		// The master says it is connected and waits for -O exit; a
		// command runs its last argument here.
		writeScript(t, filepath.Join(bin, "ssh"), dumpLine(t, dumps, "ssh")+fmt.Sprintf(`for a; do case $a in -M) m=1;; -O) o=1;; esac; done
if [ -n "$m" ]; then echo $$ > %[1]s/master; echo hermes-ssh-master-ready; exec sleep 600; fi
if [ -n "$o" ]; then kill $(cat %[1]s/master); exit 0; fi
eval "c=\${$#}"
exec sh -c "$c"
`, t.TempDir()))
		cfg := config.Default()
		cfg.Terminal.Backend = config.BackendSSH
		cfg.Terminal.SSHHost, cfg.Terminal.SSHUser = "fake.invalid", "agent"
		cfg.Terminal.Cwd = t.TempDir()
		checkClientEnv(t, clientEnvCase{cfg: cfg, client: "ssh", want: []string{"SSH_AUTH_SOCK=/run/agent.sock"}}, dumps)
	})
	t.Run("exec", func(t *testing.T) {
		dumps, bin := setClientEnv(t)
		prefix := filepath.Join(bin, "client")
		writeScript(t, prefix, dumpLine(t, dumps, "client")+"exec \"$@\"\n")
		cfg := config.Default()
		cfg.Terminal.Backend = config.BackendExec
		cfg.Terminal.ExecCommand = []string{prefix}
		cfg.Terminal.Cwd = t.TempDir()
		checkClientEnv(t, clientEnvCase{cfg: cfg, client: "client", want: []string{"KUBECONFIG=/etc/kube.conf", "SSH_AUTH_SOCK=/run/agent.sock"}}, dumps)
	})
}

// TestRemoteClientsGetNoSecretsRealEngines is the same check against the
// tests' private Docker engine and sshd: the real docker and ssh clients,
// each wrapped by a script that records its environment, and exec
// backends whose prefixes pass their environment on to this host (env --,
// setpriv --) or to a container (the real docker exec -i).
func TestRemoteClientsGetNoSecretsRealEngines(t *testing.T) {
	hostPython3(t)
	d := backendtest.Docker(t)
	s := backendtest.SSH(t)
	dockerHost, _ := strings.CutPrefix(d.Env[0], "DOCKER_HOST=")
	wrap := func(t *testing.T, bin, dumps, name, real string) {
		writeScript(t, filepath.Join(bin, name), dumpLine(t, dumps, name)+"exec "+real+" \"$@\"\n")
	}
	t.Run("docker", func(t *testing.T) {
		dumps, bin := setClientEnv(t)
		t.Setenv("DOCKER_HOST", dockerHost)
		wrap(t, bin, dumps, "docker", d.Docker)
		cfg := config.Default()
		cfg.Terminal.Backend = config.BackendDocker
		cfg.Terminal.DockerImage = d.Image
		cfg.Terminal.DockerNetwork = false
		cfg.Terminal.ContainerPersistent = false
		cfg.Terminal.DockerForwardEnv = []string{"FORWARDED_TOKEN"}
		checkClientEnv(t, clientEnvCase{cfg: cfg, client: "docker", forwarded: true, want: []string{"DOCKER_HOST=" + dockerHost}}, dumps)
	})
	t.Run("ssh", func(t *testing.T) {
		dumps, bin := setClientEnv(t)
		ssh, err := exec.LookPath("ssh")
		require.NoError(t, err)
		wrap(t, bin, dumps, "ssh", ssh)
		cfg := config.Default()
		cfg.Terminal.Backend = config.BackendSSH
		cfg.Terminal.SSHHost, cfg.Terminal.SSHPort, cfg.Terminal.SSHUser = s.Host, s.Port, s.User
		cfg.Terminal.SSHKey, cfg.Terminal.SSHKnownHosts = s.KeyFile, s.KnownHostsFile
		cfg.Terminal.Cwd = t.TempDir()
		checkClientEnv(t, clientEnvCase{cfg: cfg, client: "ssh", want: []string{"SSH_AUTH_SOCK=/run/agent.sock"}}, dumps)
	})
	for _, prefix := range [][]string{{"env", "--"}, {"setpriv", "--"}} {
		t.Run("exec "+prefix[0], func(t *testing.T) {
			dumps, bin := setClientEnv(t)
			real, err := exec.LookPath(prefix[0])
			require.NoError(t, err)
			wrap(t, bin, dumps, prefix[0], real)
			cfg := config.Default()
			cfg.Terminal.Backend = config.BackendExec
			cfg.Terminal.ExecCommand = prefix
			cfg.Terminal.Cwd = t.TempDir()
			checkClientEnv(t, clientEnvCase{cfg: cfg, client: prefix[0], want: []string{"KUBECONFIG=/etc/kube.conf"}}, dumps)
		})
	}
	t.Run("exec docker exec -i", func(t *testing.T) {
		dumps, bin := setClientEnv(t)
		t.Setenv("DOCKER_HOST", dockerHost)
		wrap(t, bin, dumps, "docker", d.Docker)
		ctr := fmt.Sprintf("hermes-client-env-%d", os.Getpid())
		d.Run(t, "run", "-d", "--init", "--network", "none", "--name", ctr, "--entrypoint", "sh", d.Image, "-c", "while :; do sleep 1000; done")
		t.Cleanup(func() { d.Run(t, "rm", "-f", ctr) })
		cfg := config.Default()
		cfg.Terminal.Backend = config.BackendExec
		// -e NAME copies NAME from the client's environment into the
		// container: what a client's environment holds reaches the target.
		cfg.Terminal.ExecCommand = []string{"docker", "exec", "-i", "-e", "OPENAI_API_KEY", "-e", "MY_SECRET_TOKEN", "-e", "MY_CLIENT_VAR", ctr}
		cfg.Terminal.Cwd = "/tmp"
		checkClientEnv(t, clientEnvCase{cfg: cfg, client: "docker", want: []string{"DOCKER_HOST=" + dockerHost}}, dumps)
	})
}
