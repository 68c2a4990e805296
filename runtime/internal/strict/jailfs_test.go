package strict

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// jailTree makes the jail tests' two trees: outside, holding the host file
// secret ("host secret"), and root, the jail's, holding ok.txt ("inside")
// and the dir sub.
func jailTree(t *testing.T) (outside, secret, root string) {
	t.Helper()
	outside = t.TempDir()
	secret = filepath.Join(outside, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	root = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "ok.txt"), []byte("inside"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(root, "sub"), 0o700))
	return outside, secret, root
}

// TestJailFS checks every FS method against paths that try to leave the
// root: `..`, absolute paths (with a drive letter on Windows) and symlinks
// the guest tries to make; and that ordinary work inside it works.
// TestJailFSSymlinks covers symlinks found in the tree.
func TestJailFS(t *testing.T) {
	outside, secret, root := jailTree(t)

	j, err := newJailFS(root)
	require.NoError(t, err)
	defer j.close()
	read := jailReader(j)

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
	// The guest cannot make symlinks at all.
	require.Equal(t, experimentalsys.EPERM, j.Symlink("/etc", "etc"))
	require.Equal(t, experimentalsys.EPERM, j.Symlink(outside, "x"))
	_, err = os.Lstat(filepath.Join(root, "x"))
	require.ErrorIs(t, err, os.ErrNotExist)

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

// jailReader returns a function reading (the first 100 bytes of) a file
// through j (a jailFS, or the sandboxed project mode's root over jails).
func jailReader(j experimentalsys.FS) func(string) (string, experimentalsys.Errno) {
	return func(p string) (string, experimentalsys.Errno) {
		f, errno := j.OpenFile(p, experimentalsys.O_RDONLY, 0)
		if errno != 0 {
			return "", errno
		}
		defer f.Close()
		buf := make([]byte, 100)
		n, errno := f.Read(buf)
		return string(buf[:n]), errno
	}
}

// TestJailFSSymlinks: symlinks found in the tree (put there by the host)
// are never followed, whether they point out of the root or inside it;
// writes through them are refused and the host file is untouched; a
// symlink itself may be looked at and removed.
func TestJailFSSymlinks(t *testing.T) {
	testenv.SkipUnderWine(t, "wine has no symlinks (CreateSymbolicLinkW reports success and makes nothing); the jail's symlink refusal is tested on Linux and on Windows")
	outside, secret, root := jailTree(t)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil && runtime.GOOS == "windows" {
		t.Skipf("Windows: making a symlink needs Developer Mode or the SeCreateSymbolicLinkPrivilege, which this account lacks (%v); the jail's symlink refusal is tested on Linux", err)
	} else {
		require.NoError(t, err)
	}
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "secret-link")))
	require.NoError(t, os.Symlink("ok.txt", filepath.Join(root, "inner-link")))
	require.NoError(t, os.Symlink("../../../../../../..", filepath.Join(root, "sub", "up")))

	j, err := newJailFS(root)
	require.NoError(t, err)
	defer j.close()
	read := jailReader(j)

	// Symlinks found in the tree are never followed.
	for _, p := range []string{"out/secret.txt", "secret-link", "inner-link", "sub/up/etc/passwd"} {
		_, errno := read(p)
		require.Equal(t, experimentalsys.EACCES, errno, p)
		_, errno = j.Stat(p)
		require.Equal(t, experimentalsys.EACCES, errno, p)
	}
	// Writes through them are refused and the host file is untouched.
	_, errno := j.OpenFile("secret-link", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, 0o600)
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
}

// TestJailFSWindowsNames: with Windows' name rules (on by default on
// Windows, set here on every platform), a name Windows cannot hold names
// nothing: a lookup is ENOENT, a creation EINVAL, and nothing is made.
func TestJailFSWindowsNames(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o600))
	j, err := newJailFS(root)
	require.NoError(t, err)
	defer j.close()
	require.Equal(t, runtime.GOOS == "windows", j.winNames)
	j.winNames = true
	j.budget, err = newDiskBudget(root, 1)
	require.NoError(t, err)
	used := j.budget.Used()

	for _, name := range []string{"a:stream", "C:", "x<y", "x>y", `x"y`, "x|y", "x?y", "x*y", "tab\t", "dot.", "space ",
		"NUL", "nul", "con.txt", "Aux", "PRN", "COM1", "lpt9.log", "COM\u00b9", "CONIN$", "conout$", "NUL .txt"} {
		_, errno := j.Stat(name)
		require.Equal(t, experimentalsys.ENOENT, errno, name)
		_, errno = j.OpenFile("d/../"+name, experimentalsys.O_RDONLY, 0)
		require.Equal(t, experimentalsys.ENOENT, errno, name)
		_, errno = j.OpenFile(name, experimentalsys.O_RDWR|experimentalsys.O_CREAT, 0o600)
		require.Equal(t, experimentalsys.EINVAL, errno, name)
		require.Equal(t, experimentalsys.EINVAL, j.Mkdir(name, 0o700), name)
		require.Equal(t, experimentalsys.EINVAL, j.Link("a", name), name)
		require.Equal(t, experimentalsys.EINVAL, j.Rename("a", name), name)
		require.Equal(t, experimentalsys.EINVAL, j.Mkdir("sub/"+name+"/x", 0o700), name)
	}
	require.Equal(t, used, j.budget.Used(), "nothing was charged")
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was made")
	for _, name := range []string{"a.b", ".hidden", "COM", "COM10", "console", "nul-ish", "x y", "é", "con_", "LPT"} {
		require.True(t, windowsName(name), name)
	}
}

// TestJailFSCase: the jail follows the host's file-name case rules (NTFS
// and APFS by default: case-insensitive, case-preserving; ext4:
// case-sensitive), and the budget with it: a name that is an existing
// file in another case is that file, and costs no new entry.
func TestJailFSCase(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "Mixed.txt"), []byte("mixed"), 0o600))
	_, err := os.Stat(filepath.Join(root, "MIXED.TXT"))
	insensitive := err == nil
	if runtime.GOOS == "windows" {
		require.True(t, insensitive, "NTFS is case-insensitive")
	}
	j, err := newJailFS(root)
	require.NoError(t, err)
	defer j.close()
	j.budget, err = newDiskBudget(root, 1)
	require.NoError(t, err)
	used := j.budget.Used()

	got, errno := jailReader(j)("mixed.TXT")
	f, cerr := j.OpenFile("MIXED.txt", experimentalsys.O_RDWR|experimentalsys.O_CREAT, 0o600)
	require.Zero(t, cerr)
	require.Zero(t, f.Close())
	if insensitive {
		require.Zero(t, errno)
		require.Equal(t, "mixed", got)
		require.Equal(t, used, j.budget.Used(), "the same file: no new entry")
		require.Zero(t, j.Rename("mixed.txt", "MIXED.TXT"), "a rename that changes only the case")
		require.Equal(t, used, j.budget.Used())
		entries, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.Zero(t, j.Unlink("mixed.TXT"))
		require.Equal(t, used-entryCost("Mixed.txt")-int64(len("mixed")), j.budget.Used(), "removed under another case, released")
	} else {
		require.Equal(t, experimentalsys.ENOENT, errno)
		require.Equal(t, used+entryCost("MIXED.txt"), j.budget.Used(), "another file: a new entry")
	}
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
