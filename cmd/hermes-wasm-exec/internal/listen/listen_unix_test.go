//go:build unix

package listen

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListenUnix: the socket is its owner's alone (0600) even under a
// umask of 0, appears at its path only once it is (it is bound in a
// private dir and moved: nothing else is left beside it), and goes when
// the listener closes; a stale socket is replaced, a live one or a file
// that is not a socket is refused. Not parallel: it changes the umask.
func TestListenUnix(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
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
	ln, err = Listen("unix", stale)
	require.NoError(t, err)
	require.Equal(t, stale, ln.Addr().String())
	fi, err := os.Lstat(stale)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSocket)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the private dir it was bound in is gone")
	// It serves at its path.
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", stale)
	require.NoError(t, err)
	c.Close()
	require.NoError(t, <-accepted)
	// A live one is not replaced.
	_, err = Listen("unix", stale)
	require.ErrorContains(t, err, "in use by a running server")
	require.NoError(t, ln.Close())
	require.NoFileExists(t, stale)
	// Nor is a file that is not a socket.
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))
	_, err = Listen("unix", plain)
	require.ErrorContains(t, err, "exists and is not a socket")
}
