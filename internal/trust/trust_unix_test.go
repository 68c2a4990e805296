//go:build unix

package trust

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUntrusted: a path is trusted when it and every directory above it
// belong to this user or root and no other user can write them; a sticky
// directory (such as /tmp) may be writable by all.
func TestUntrusted(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o700))
	ok := filepath.Join(root, "ok", "file")
	require.NoError(t, os.MkdirAll(filepath.Dir(ok), 0o700))
	require.NoError(t, os.WriteFile(ok, nil, 0o600))
	require.Empty(t, Untrusted(ok))
	require.Empty(t, Untrusted(os.TempDir()), "a sticky dir writable by all")

	open := filepath.Join(root, "open")
	require.NoError(t, os.MkdirAll(filepath.Join(open, "cache"), 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	require.Contains(t, Untrusted(filepath.Join(open, "cache")), open+" is writable by every user")

	group := filepath.Join(root, "group")
	require.NoError(t, os.MkdirAll(group, 0o700))
	require.NoError(t, os.Chmod(group, 0o770))
	require.Empty(t, Untrusted(group), "writable by this user's own group")

	link := filepath.Join(root, "link")
	require.NoError(t, os.Symlink(filepath.Join(open, "cache"), link))
	require.Contains(t, Untrusted(link), "writable by every user", "judged where it points")
	require.Contains(t, Untrusted(filepath.Join(root, "missing")), "cannot check")
}
