//go:build unix

package strict

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/trust"
)

// lockedBuffer is a bytes.Buffer safe for the engine's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSnapshotAnotherUserCouldWriteIsRemade: a snapshot file that another
// user could have written (writable by others, or owned by another user)
// is not mapped into instances: the engine makes a new one, says so, and
// puts it in the file's place, owned by this user and private. (Before,
// any file with a valid CRC-32C was used, and a planted one ran in every
// later strict run.)
func TestSnapshotAnotherUserCouldWriteIsRemade(t *testing.T) {
	shared := testEngine(t).opts.CacheDir
	dir := t.TempDir()
	// The shared cache's compiled code, so nothing compiles here.
	entries, err := os.ReadDir(shared)
	require.NoError(t, err)
	for _, en := range entries {
		if n := en.Name(); strings.HasPrefix(n, "wazero-") || strings.HasPrefix(n, "compiled-") {
			require.NoError(t, os.Symlink(filepath.Join(shared, n), filepath.Join(dir, n)))
		}
	}
	var progress lockedBuffer
	e := New(Options{CacheDir: dir, Progress: &progress})
	require.NoError(t, e.Warm(context.Background(), 0))
	e.Close(context.Background())
	c := testEngine(t)
	path := e.snapshotPath(c.opts.interpreterSHA256, c.opts.stdlibSHA256)
	require.FileExists(t, path)

	tampers := []struct {
		name string
		do   func() error
	}{
		{"writable by every user", func() error { return os.Chmod(path, 0o666) }},
	}
	// Root gives the file any group; another user only one of its own
	// supplementary groups.
	if gid, ok := otherGroup(); ok {
		tampers = append(tampers, struct {
			name string
			do   func() error
		}{"writable by another group", func() error {
			if err := os.Chown(path, -1, gid); err != nil {
				return err
			}
			return os.Chmod(path, 0o620)
		}})
	} else {
		t.Log("not root and in no group but its own: the group-writable case needs root or a second group")
	}
	if os.Geteuid() == 0 {
		tampers = append(tampers, struct {
			name string
			do   func() error
		}{"owned by another user", func() error { return os.Chown(path, 65534, 65534) }})
	}
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.do())
			made := snapshotsMade.Load()
			before := len(progress.String())
			e := New(Options{CacheDir: dir, Progress: &progress})
			defer e.Close(context.Background())
			require.NoError(t, e.Warm(context.Background(), 0))
			require.NotNil(t, e.snap.Load())
			require.Equal(t, made+1, snapshotsMade.Load(), "the file was used")
			require.Contains(t, progress.String()[before:], "not using the interpreter snapshot "+path)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			require.Equal(t, uint32(os.Geteuid()), fi.Sys().(*syscall.Stat_t).Uid)
			require.Empty(t, trust.Untrusted(path))
		})
	}
}

// otherGroup is a group other than this process's that it may give a
// file it owns: any as root, else one of its supplementary groups.
func otherGroup() (int, bool) {
	if os.Geteuid() == 0 {
		return os.Getegid() + 1, true
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if g != os.Getegid() {
			return g, true
		}
	}
	return 0, false
}
