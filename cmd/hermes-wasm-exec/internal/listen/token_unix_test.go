//go:build unix

package listen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// requireOwnerOnly checks that file is 0600, and dir (when given) 0700.
func requireOwnerOnly(t *testing.T, file, dir string) {
	t.Helper()
	fi, err := os.Lstat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	if dir != "" {
		fi, err = os.Lstat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	}
}

// TestResolveTokenRefusals: an existing --token-file is read only when it
// is the user's own secret: not a symlink (never followed), owned by the
// user, open to nobody else, with one name. What is refused is left as
// it is.
func TestResolveTokenRefusals(t *testing.T) {
	t.Setenv(TokenEnv, "")
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o600))

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(secret, link))
	_, err := ResolveToken(link)
	require.ErrorContains(t, err, "is a symlink")
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere"), dangling))
	_, err = ResolveToken(dangling)
	require.ErrorContains(t, err, "is a symlink")
	require.NoFileExists(t, filepath.Join(dir, "nowhere"), "a symlink's target is never created")

	for _, mode := range []os.FileMode{0o640, 0o604, 0o620, 0o602} {
		open := filepath.Join(dir, "open")
		require.NoError(t, os.WriteFile(open, []byte("tok\n"), 0o600))
		require.NoError(t, os.Chmod(open, mode))
		_, err = ResolveToken(open)
		require.ErrorContains(t, err, "is open to group or others", "%04o", mode)
		require.ErrorContains(t, err, "chmod 600 it")
		b, _ := os.ReadFile(open)
		require.Equal(t, "tok\n", string(b), "left as it is")
		os.Remove(open)
	}

	hard := filepath.Join(dir, "hard")
	require.NoError(t, os.Link(secret, hard))
	_, err = ResolveToken(hard)
	require.ErrorContains(t, err, "has 2 hard links")
	os.Remove(hard)

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	_, err = ResolveToken(fifo)
	require.ErrorContains(t, err, "is not a regular file")

	if os.Geteuid() != 0 {
		t.Skip("a file owned by another user needs root to make")
	}
	theirs := filepath.Join(dir, "theirs")
	require.NoError(t, os.WriteFile(theirs, []byte("tok\n"), 0o600))
	require.NoError(t, os.Chown(theirs, 65534, 65534))
	_, err = ResolveToken(theirs)
	require.ErrorContains(t, err, "is owned by uid 65534, not by this user (uid 0)")
}
