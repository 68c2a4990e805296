//go:build unix

package nativeengine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

func TestServerUnixSocketMode(t *testing.T) {
	dir := t.TempDir()
	srv, err := listenRPC(context.Background(), native.TransportUnix, dir, engine.NewBroker((&callRecorder{}).tool, 1, nil))
	require.NoError(t, err)
	defer srv.Close()
	require.Equal(t, filepath.Join(dir, "rpc.sock"), srv.Address())
	fi, err := os.Stat(srv.Address())
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket, fi.Mode().Type())
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.NoError(t, srv.Close())
	require.NoFileExists(t, srv.Address())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing left in the dir")
}

func TestServerUnixLongDirFallsBack(t *testing.T) {
	long := t.TempDir()
	for len(long) <= maxSocketPath+10 {
		long = filepath.Join(long, strings.Repeat("d", 20))
	}
	require.NoError(t, os.MkdirAll(long, 0o700))
	require.Greater(t, len(filepath.Join(long, "rpc.sock")), 100)

	rec := &callRecorder{}
	srv, err := listenRPC(context.Background(), native.TransportUnix, long, engine.NewBroker(rec.tool, 5, nil))
	require.NoError(t, err)
	defer srv.Close()
	addr := srv.Address()
	require.LessOrEqual(t, len(addr), maxSocketPath)
	require.False(t, strings.HasPrefix(addr, long), "the socket is not in the long dir")
	fallback := filepath.Dir(addr)
	fi, err := os.Stat(fallback)
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the fallback dir is private")
	si, err := os.Stat(addr)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), si.Mode().Perm())

	c := dial(t, srv)
	resp := c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": map[string]any{"path": "p"}})
	require.Equal(t, map[string]any{"path": "p"}, resp["args"])

	require.NoError(t, srv.Close())
	require.NoDirExists(t, fallback, "Close removes the fallback dir")
	entries, err := os.ReadDir(long)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestServerUnixNoShortTempDir(t *testing.T) {
	// A TMPDIR too long for a socket: /tmp is tried next, so Listen still
	// works as long as /tmp is usable.
	long := t.TempDir()
	for len(long) <= maxSocketPath+10 {
		long = filepath.Join(long, strings.Repeat("e", 20))
	}
	require.NoError(t, os.MkdirAll(long, 0o700))
	t.Setenv("TMPDIR", long)
	if fi, err := os.Stat("/tmp"); err != nil || !fi.IsDir() {
		t.Skip("no /tmp")
	}
	srv, err := listenRPC(context.Background(), native.TransportUnix, long, engine.NewBroker((&callRecorder{}).tool, 5, nil))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(srv.Address(), "/tmp/hrpc-"), srv.Address())
	fallback := filepath.Dir(srv.Address())
	require.NoError(t, srv.Close())
	require.NoDirExists(t, fallback)
	entries, err := os.ReadDir(long)
	require.NoError(t, err)
	require.Empty(t, entries, "the too-long candidate was removed")
}

// TestServerUnixRelativeDir: the socket address goes to a child running
// in another working dir, so it is absolute even for a relative dir (and a
// relative TMPDIR for the short fallback). It changes the working dir and
// TMPDIR, so it cannot run in parallel.
func TestServerUnixRelativeDir(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	require.NoError(t, os.Mkdir("sock", 0o700))
	rec := &callRecorder{}

	srv, err := listenRPC(context.Background(), native.TransportUnix, "sock", engine.NewBroker(rec.tool, 5, nil))
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(srv.Address()), srv.Address())
	require.Equal(t, "rpc.sock", filepath.Base(srv.Address()))
	t.Chdir(t.TempDir()) // the child's working dir
	c := dial(t, srv)
	resp := c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": map[string]any{"path": "p"}})
	require.Equal(t, "read_file", resp["tool"])
	require.NoError(t, srv.Close())
	require.NoFileExists(t, srv.Address())

	// A long dir, and TMPDIR relative: the fallback is absolute too.
	t.Chdir(base)
	long := "sock"
	for len(filepath.Join(base, long)) <= maxSocketPath+10 {
		long = filepath.Join(long, strings.Repeat("f", 20))
	}
	require.NoError(t, os.MkdirAll(long, 0o700))
	require.NoError(t, os.Mkdir("tmp", 0o700))
	t.Setenv("TMPDIR", "tmp")
	srv, err = listenRPC(context.Background(), native.TransportUnix, long, engine.NewBroker(rec.tool, 5, nil))
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(srv.Address()), srv.Address())
	require.LessOrEqual(t, len(srv.Address()), maxSocketPath)
	fallback := filepath.Dir(srv.Address())
	t.Chdir(t.TempDir())
	c = dial(t, srv)
	resp = c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": map[string]any{"path": "p"}})
	require.Equal(t, "read_file", resp["tool"])
	require.NoError(t, srv.Close())
	require.NoDirExists(t, fallback)
}
