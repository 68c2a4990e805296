package backendtest_test

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(backendtest.Main(m)) }

// linuxOnly skips t off Linux: the engines are Linux daemons (a private
// dockerd, an sshd) installed with apt-get, and these tests of them run on
// Linux.
func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("on %s: the Docker engine and sshd that backendtest starts are Linux daemons installed with apt-get; they are tested on Linux", runtime.GOOS)
	}
}

func TestDocker(t *testing.T) {
	linuxOnly(t)
	// Here, not only in the concurrent subtests, which skipping leaves
	// without an engine to check.
	testenv.RealEngines(t, "a private dockerd")
	began := time.Now()
	// Concurrent callers get the one engine.
	engines := make([]*backendtest.DockerEngine, 3)
	t.Run("concurrent", func(t *testing.T) {
		for i := range engines {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				engines[i] = backendtest.Docker(t)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("the Docker engine was ready in %v", time.Since(began))
	e := engines[0]
	require.Same(t, e, engines[1])
	require.Same(t, e, engines[2])
	require.True(t, strings.HasPrefix(e.Host, "unix:///"), e.Host)
	require.Equal(t, []string{"DOCKER_HOST=" + e.Host}, e.Env)

	began = time.Now()
	out := e.Run(t, "run", "--rm", "--network", "none", e.Image, "python3", "-c", "print(6*7)")
	t.Logf("docker run --rm took %v", time.Since(began))
	require.Equal(t, "42", out)

	// A container that lives on, and a round trip through docker exec -i;
	// Main removes the container.
	ctr := e.Run(t, "run", "-d", "--network", "none", e.Image, "sleep", "infinity")
	cmd := exec.Command(e.Docker, "exec", "-i", ctr, "cat")
	cmd.Env = append(os.Environ(), e.Env...)
	cmd.Stdin = strings.NewReader("through the container\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	require.Equal(t, "through the container\n", string(got))
	require.Equal(t, "bookworm", e.Run(t, "exec", ctr, "sh", "-c", ". /etc/os-release && echo $VERSION_CODENAME"))
}

func TestSSH(t *testing.T) {
	linuxOnly(t)
	began := time.Now()
	s := backendtest.SSH(t)
	t.Logf("sshd was ready in %v", time.Since(began))
	require.Same(t, s, backendtest.SSH(t))
	require.Equal(t, "127.0.0.1", s.Host)

	out, err := exec.Command("ssh", append(s.ClientArgs(), "echo $((6*7))")...).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "42\n", string(out))

	// The host key is checked: a known_hosts without it fails the login.
	empty := t.TempDir() + "/known_hosts"
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	other := *s
	other.KnownHostsFile = empty
	out, err = exec.Command("ssh", append(other.ClientArgs(), "true")...).CombinedOutput()
	require.Error(t, err, string(out))
	require.Contains(t, string(out), "Host key verification failed")
}
