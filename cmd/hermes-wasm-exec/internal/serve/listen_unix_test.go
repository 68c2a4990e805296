//go:build unix

package serve

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

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
