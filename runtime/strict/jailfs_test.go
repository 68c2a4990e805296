package strict

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestJailFS checks every FS method against paths that try to leave the
// root: `..`, absolute paths, symlinks found in the tree, and symlinks the
// guest tries to make.
func TestJailFS(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))

	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "ok.txt"), []byte("inside"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(root, "sub"), 0o700))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "secret-link")))
	require.NoError(t, os.Symlink("ok.txt", filepath.Join(root, "inner-link")))
	require.NoError(t, os.Symlink("../../../../../../..", filepath.Join(root, "sub", "up")))

	j, err := newJailFS(root)
	require.NoError(t, err)
	defer j.close()

	read := func(p string) (string, experimentalsys.Errno) {
		f, errno := j.OpenFile(p, experimentalsys.O_RDONLY, 0)
		if errno != 0 {
			return "", errno
		}
		defer f.Close()
		buf := make([]byte, 100)
		n, errno := f.Read(buf)
		return string(buf[:n]), errno
	}

	got, errno := read("ok.txt")
	require.Zero(t, errno)
	require.Equal(t, "inside", got)
	got, errno = read("/sub/../ok.txt")
	require.Zero(t, errno)
	require.Equal(t, "inside", got)

	// `..` and absolute host paths resolve inside the root.
	for _, p := range []string{"../" + filepath.Base(outside) + "/secret.txt", secret, "/../../" + secret, "..\\..\\" + secret} {
		_, errno := read(p)
		require.Equal(t, experimentalsys.ENOENT, errno, p)
	}
	// Symlinks found in the tree are never followed.
	for _, p := range []string{"out/secret.txt", "secret-link", "inner-link", "sub/up/etc/passwd"} {
		_, errno := read(p)
		require.Equal(t, experimentalsys.EACCES, errno, p)
		_, errno = j.Stat(p)
		require.Equal(t, experimentalsys.EACCES, errno, p)
	}
	// Writes through them are refused and the host file is untouched.
	_, errno = j.OpenFile("secret-link", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, 0o600)
	require.Equal(t, experimentalsys.EACCES, errno)
	_, errno = j.OpenFile("out/new.txt", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o600)
	require.Equal(t, experimentalsys.EACCES, errno)
	require.Equal(t, experimentalsys.EACCES, j.Mkdir("out/newdir", 0o700))
	require.Equal(t, experimentalsys.EACCES, j.Unlink("out/secret.txt"))
	require.Equal(t, experimentalsys.EACCES, j.Rename("ok.txt", "out/stolen.txt"))
	require.Equal(t, experimentalsys.EACCES, j.Rename("out/secret.txt", "mine.txt"))
	require.Equal(t, experimentalsys.EACCES, j.Chmod("secret-link", 0o777))
	require.Equal(t, experimentalsys.EACCES, j.Link("secret-link", "hard"))
	require.Equal(t, experimentalsys.EACCES, j.Link("out/secret.txt", "hard"))
	require.Equal(t, experimentalsys.EACCES, j.Utimens("secret-link", 0, 0))
	// The guest cannot make symlinks at all.
	require.Equal(t, experimentalsys.EPERM, j.Symlink("/etc", "etc"))
	require.Equal(t, experimentalsys.EPERM, j.Symlink(outside, "x"))
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "host secret", string(b))
	_, err = os.Stat(filepath.Join(outside, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// A symlink itself may be looked at and removed, without following it.
	st, errno := j.Lstat("secret-link")
	require.Zero(t, errno)
	require.NotZero(t, st.Mode&os.ModeSymlink)
	target, errno := j.Readlink("secret-link")
	require.Zero(t, errno)
	require.Equal(t, secret, target)
	require.Zero(t, j.Unlink("secret-link"))
	_, err = os.Stat(secret)
	require.NoError(t, err)

	// Ordinary work inside the root still works.
	f, errno := j.OpenFile("sub/new.txt", experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC, 0o600)
	require.Zero(t, errno)
	_, errno = f.Write([]byte("hello"))
	require.Zero(t, errno)
	require.Zero(t, f.Close())
	require.Zero(t, j.Mkdir("sub/d", 0o700))
	require.Zero(t, j.Rename("sub/new.txt", "sub/d/moved.txt"))
	require.Zero(t, j.Link("sub/d/moved.txt", "sub/d/hard.txt"))
	require.Zero(t, j.Unlink("sub/d/hard.txt"))
	got, errno = read("sub/d/moved.txt")
	require.Zero(t, errno)
	require.Equal(t, "hello", got)
	require.Equal(t, experimentalsys.ENOTEMPTY, j.Rmdir("sub/d"))
	require.Equal(t, experimentalsys.EACCES, j.Rmdir("/"))
	require.Equal(t, experimentalsys.EACCES, j.Rename("/", "x"))
}

// TestJailFSDetectsSwap covers the race the pre-check cannot see: the file
// opened differs from what os.Root resolves at the same path.
func TestJailFSSameFile(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "b"), []byte("b"), 0o600))
	j, err := newJailFS(root)
	require.NoError(t, err)
	defer j.close()
	f, errno := j.fs.OpenFile("a", experimentalsys.O_RDONLY, 0)
	require.Zero(t, errno)
	defer f.Close()
	require.Zero(t, j.sameFile("a", f))
	require.Equal(t, experimentalsys.EACCES, j.sameFile("b", f))
	require.Equal(t, experimentalsys.EACCES, j.sameFile("missing", f))
}
