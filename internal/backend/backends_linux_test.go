package backend

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
)

func TestMain(m *testing.M) { os.Exit(backendtest.Main(m)) }

// newSSH connects to the test sshd.
func newSSH(t *testing.T) Backend {
	t.Helper()
	s := backendtest.SSH(t)
	start := time.Now()
	b, err := NewSSH(context.Background(), SSHOptions{Host: s.Host, Port: s.Port, User: s.User, Key: s.KeyFile, KnownHosts: s.KnownHostsFile})
	require.NoError(t, err)
	t.Logf("ssh backend ready in %s", time.Since(start))
	t.Cleanup(func() { b.Close() })
	return b
}

// newDocker starts a container on the test engine.
func newDocker(t *testing.T, persistent bool) Backend {
	t.Helper()
	d := backendtest.Docker(t)
	start := time.Now()
	b, err := NewDocker(context.Background(), DockerOptions{Image: d.Image, ClientEnv: d.Env, Persistent: persistent, Session: t.Name(), Env: []string{"FROM_DOCKER_ENV=1"}})
	require.NoError(t, err)
	t.Logf("docker backend ready in %s", time.Since(start))
	t.Cleanup(func() { b.Close() })
	return b
}

func TestSSHBackend(t *testing.T) {
	b := newSSH(t)
	home, _ := os.UserHomeDir()
	require.Equal(t, home, b.Cwd())
	out, code := runOn(t, b, Command{Shell: "echo $((6*7)) $SECRET", Env: []string{"SECRET=xyz"}})
	require.Equal(t, 0, code)
	require.Equal(t, "42 xyz\n", out)
	fi, err := b.FS().Stat("/etc/passwd")
	require.NoError(t, err)
	id, ok := IDOf(fi)
	require.True(t, ok, "a stat carries the file's identity")
	local, err := os.Stat("/etc/passwd")
	require.NoError(t, err)
	want, _ := IDOf(local)
	require.Equal(t, want, id, "the target is this host")
}

func TestDockerBackend(t *testing.T) {
	b := newDocker(t, false)
	require.Equal(t, "/root", b.Cwd())
	out, code := runOn(t, b, Command{Shell: "echo $((6*7)) $SECRET $FROM_DOCKER_ENV; pwd; python3 -c 'print(1)'", Env: []string{"SECRET=xyz"}})
	require.Equal(t, 0, code)
	require.Equal(t, "42 xyz 1\n/root\n1\n", out)
	data, err := b.FS().ReadFile("/etc/debian_version")
	require.NoError(t, err)
	require.NotEmpty(t, data)
	id, err := b.FS().FileID("/etc/debian_version")
	require.NoError(t, err)
	require.NotZero(t, id.Ino)
	require.Equal(t, uint64(1), id.Nlink)
}
