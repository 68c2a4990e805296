//go:build unix

package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeUnixListen serves two clients at once on a Unix socket (0600,
// removed on exit).
func TestServeUnixListen(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	// A short dir: socket paths are limited to about 104 bytes.
	dir, err := os.MkdirTemp("", "hws-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "serve.sock")
	l := e.startListening("--listen", "unix:"+sock)
	require.Equal(t, sock, waitListening(t, l.stderr, "unix"))
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	one, _ := dialClient(t, "unix", sock)
	two, _ := dialClient(t, "unix", sock)
	// No authenticate needed on a Unix socket (it answers anyway).
	require.JSONEq(t, `{"authenticated": true}`, string(one.call(t, "authenticate", map[string]any{"token": "anything"}).Result))
	start := time.Now()
	a := one.start("execute", map[string]any{"code": "import time\ntime.sleep(1)\nprint('one')", "mode": "project", "session": "one"})
	b := two.start("execute", map[string]any{"code": "import time\ntime.sleep(1)\nprint('two')", "mode": "project", "session": "two"})
	require.Equal(t, "one\n", execResult(t, wait(t, a)).Output)
	require.Equal(t, "two\n", execResult(t, wait(t, b)).Output)
	require.Less(t, time.Since(start), 10*time.Second)
	// A client that goes away does not disturb the other.
	require.NoError(t, nilIfClosed(one))
	res := two.exec(t, map[string]any{"code": "print('still here')", "mode": "strict", "session": "two"})
	require.Equal(t, "still here\n", res.Output)

	// A second server on the same socket is refused while this one runs.
	code, _, errOut := child(t, e.env, "", "serve", "--config", e.conf, "--listen", "unix:"+sock)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "in use by a running server")

	require.Nil(t, two.call(t, "shutdown", nil).Error)
	require.Equal(t, 0, l.exitCode(t), l.stderr.String())
	_, err = os.Stat(sock)
	require.True(t, os.IsNotExist(err), "the socket is removed on exit")
	left, _ := os.ReadDir(e.tmp)
	require.Empty(t, left)

}

func TestListenOnUnix(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "hws-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	// A stale socket file left by a dead server is replaced.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	require.FileExists(t, stale)
	ln, err = listenOn("unix", stale)
	require.NoError(t, err)
	fi, err := os.Stat(stale)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	// A live one is not.
	_, err = listenOn("unix", stale)
	require.ErrorContains(t, err, "in use by a running server")
	ln.Close()
	// Nor is a file that is not a socket.
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))
	_, err = listenOn("unix", plain)
	require.ErrorContains(t, err, "exists and is not a socket")
}

// nilIfClosed closes a client's connection.
func nilIfClosed(c *serveClient) error {
	if cl, ok := c.w.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}
