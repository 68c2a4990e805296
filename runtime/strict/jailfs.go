package strict

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// jailFS is the guest's view of its staging dir: a wazero file system that
// no guest path can leave.
//
// # Security
//
// wazero's own directory mount follows host symlinks, so on its own it is
// not a jail. jailFS closes that in three layers:
//   - Paths are cleaned lexically against the mount root, so `..` and
//     absolute paths stay inside it. Lexical cleaning is sound here because
//     no symlink is ever followed (next point).
//   - Symlinks are never followed: every component of a path is checked with
//     Lstat, and a path that crosses a symlink is refused with EACCES. The
//     guest cannot create symlinks (Symlink returns EPERM).
//   - Everything except opening a file goes through an [os.Root], which the
//     kernel resolves beneath the root without races; an opened file is then
//     checked against the os.Root view of the same path (same device and
//     inode), so a component swapped for a symlink by a concurrent host
//     process between the check and the open is detected and the file is
//     closed unread. O_TRUNC is applied only after that check.
//
// With a budget, it also counts what the guest stores, data and directory
// entries (see diskBudget).
type jailFS struct {
	experimentalsys.UnimplementedFS
	dir  string
	root *os.Root
	fs   experimentalsys.FS
	// budget caps the bytes stored under dir; nil means no cap.
	budget *diskBudget
}

// newJailFS opens dir as a jail. Close it with close().
func newJailFS(dir string) (*jailFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &jailFS{dir: dir, root: root, fs: sysfs.DirFS(dir)}, nil
}

func (j *jailFS) close() error { return j.root.Close() }

// clean maps a guest path to a clean path relative to the root ("." for
// the root itself). Nothing it returns starts with "..".
func clean(p string) string {
	c := path.Clean("/" + strings.ReplaceAll(p, "\\", "/"))
	if c == "/" {
		return "."
	}
	return c[1:]
}

// check refuses p when any of its components is a symlink; the last one is
// allowed to be a symlink only when follow is false (Lstat, Readlink,
// Unlink, Rename). A missing component ends the walk: what does not exist
// cannot redirect anything, and the operation itself reports ENOENT.
func (j *jailFS) check(p string, follow bool) experimentalsys.Errno {
	if p == "." {
		return 0
	}
	parts := strings.Split(p, "/")
	for i := range parts {
		fi, err := j.root.Lstat(strings.Join(parts[:i+1], "/"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return 0
			}
			return experimentalsys.UnwrapOSError(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 && (i < len(parts)-1 || follow) {
			return experimentalsys.EACCES
		}
	}
	return 0
}

// OpenFile implements experimentalsys.FS.
func (j *jailFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p = clean(p)
	if errno := j.check(p, flag&experimentalsys.O_NOFOLLOW == 0); errno != 0 {
		return nil, errno
	}
	var entry int64
	if flag&experimentalsys.O_CREAT != 0 {
		var errno experimentalsys.Errno
		if entry, errno = j.takeEntry(p); errno != 0 {
			return nil, errno
		}
	}
	trunc := flag&experimentalsys.O_TRUNC != 0
	f, errno := j.fs.OpenFile(p, flag&^experimentalsys.O_TRUNC, perm)
	if errno != 0 {
		j.giveBack(entry)
		return nil, errno
	}
	if errno := j.sameFile(p, f); errno != 0 {
		f.Close()
		return nil, errno
	}
	if j.budget != nil {
		f = j.budget.opened(f)
	}
	if trunc {
		if errno := f.Truncate(0); errno != 0 {
			f.Close()
			return nil, errno
		}
	}
	return f, 0
}

// takeEntry charges the budget for the entry p when p does not exist yet
// (an operation is about to create it). It returns what it charged, to
// give back with giveBack if the operation fails, or EIO with the budget
// marked full when the entry does not fit (see diskBudget). An existing p
// is charged nothing, so the operation reports EEXIST (or succeeds, for an
// open), not ENOSPC, as a full file system would.
func (j *jailFS) takeEntry(p string) (int64, experimentalsys.Errno) {
	if j.budget == nil {
		return 0, 0
	}
	if _, err := j.root.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return 0, 0
	}
	n := entryCost(path.Base(p))
	if !j.budget.take(n) {
		return 0, j.budget.refuse()
	}
	return n, 0
}

// charged runs create, which makes the entry p, with the entry's cost
// taken from the budget first and given back if create fails.
func (j *jailFS) charged(p string, create func() experimentalsys.Errno) experimentalsys.Errno {
	entry, errno := j.takeEntry(p)
	if errno != 0 {
		return errno
	}
	if errno := create(); errno != 0 {
		j.giveBack(entry)
		return errno
	}
	return 0
}

// giveBack releases n bytes of the budget, if any.
func (j *jailFS) giveBack(n int64) {
	if j.budget != nil {
		j.budget.shrink(n)
	}
}

// sameFile verifies that the opened f is the file os.Root sees at p, that
// is, a file beneath the root.
func (j *jailFS) sameFile(p string, f experimentalsys.File) experimentalsys.Errno {
	got, errno := f.Stat()
	if errno != 0 {
		return errno
	}
	fi, err := j.root.Stat(p)
	if err != nil {
		return experimentalsys.EACCES
	}
	want := sys.NewStat_t(fi)
	if got.Ino != 0 && want.Ino != 0 && (got.Ino != want.Ino || got.Dev != want.Dev) {
		return experimentalsys.EACCES
	}
	return 0
}

// Lstat implements experimentalsys.FS.
func (j *jailFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p = clean(p)
	if errno := j.check(p, false); errno != 0 {
		return sys.Stat_t{}, errno
	}
	fi, err := j.root.Lstat(p)
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return sys.NewStat_t(fi), 0
}

// Stat implements experimentalsys.FS.
func (j *jailFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p = clean(p)
	if errno := j.check(p, true); errno != 0 {
		return sys.Stat_t{}, errno
	}
	fi, err := j.root.Stat(p)
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return sys.NewStat_t(fi), 0
}

// Mkdir implements experimentalsys.FS.
func (j *jailFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	p = clean(p)
	if p == "." {
		return experimentalsys.EEXIST
	}
	if errno := j.check(p, false); errno != 0 {
		return errno
	}
	return j.charged(p, func() experimentalsys.Errno {
		return experimentalsys.UnwrapOSError(j.root.Mkdir(p, perm))
	})
}

// Chmod implements experimentalsys.FS.
func (j *jailFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	p = clean(p)
	if errno := j.check(p, true); errno != 0 {
		return errno
	}
	return experimentalsys.UnwrapOSError(j.root.Chmod(p, perm))
}

// Rename implements experimentalsys.FS.
func (j *jailFS) Rename(from, to string) experimentalsys.Errno {
	from, to = clean(from), clean(to)
	if from == "." || to == "." {
		return experimentalsys.EACCES
	}
	if errno := j.check(from, false); errno != 0 {
		return errno
	}
	if errno := j.check(to, false); errno != 0 {
		return errno
	}
	// The entry from becomes to: to a new name, the budget is charged the
	// difference in length; over an existing entry, from's entry is freed
	// and the file renamed over loses a link (its size may come back).
	// Names of the same file (hard links) are left alone by rename.
	var replaced *sys.Stat_t
	var delta int64
	if j.budget != nil {
		fromInfo, err1 := j.root.Lstat(from)
		toInfo, err2 := j.root.Lstat(to)
		switch {
		case err1 != nil, err2 == nil && os.SameFile(fromInfo, toInfo):
		case err2 == nil:
			st := sys.NewStat_t(toInfo)
			replaced = &st
			delta = -entryCost(path.Base(from))
		default:
			delta = entryCost(path.Base(to)) - entryCost(path.Base(from))
		}
		if delta > 0 && !j.budget.take(delta) {
			return j.budget.refuse()
		}
	}
	if errno := experimentalsys.UnwrapOSError(j.root.Rename(from, to)); errno != 0 {
		j.giveBack(max(delta, 0))
		return errno
	}
	j.giveBack(-min(delta, 0))
	if replaced != nil {
		j.budget.removed(*replaced)
	}
	return 0
}

// Rmdir implements experimentalsys.FS.
func (j *jailFS) Rmdir(p string) experimentalsys.Errno {
	p = clean(p)
	if p == "." {
		return experimentalsys.EACCES
	}
	if errno := j.check(p, false); errno != 0 {
		return errno
	}
	fi, err := j.root.Lstat(p)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	if errno := experimentalsys.UnwrapOSError(j.root.Remove(p)); errno != 0 {
		return errno
	}
	j.giveBack(entryCost(path.Base(p)))
	return 0
}

// Unlink implements experimentalsys.FS.
func (j *jailFS) Unlink(p string) experimentalsys.Errno {
	p = clean(p)
	if errno := j.check(p, false); errno != 0 {
		return errno
	}
	fi, err := j.root.Lstat(p)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	if errno := experimentalsys.UnwrapOSError(j.root.Remove(p)); errno != 0 {
		return errno
	}
	if j.budget != nil {
		j.budget.removed(sys.NewStat_t(fi))
		j.budget.shrink(entryCost(path.Base(p)))
	}
	return 0
}

// Link implements experimentalsys.FS.
func (j *jailFS) Link(oldPath, newPath string) experimentalsys.Errno {
	oldPath, newPath = clean(oldPath), clean(newPath)
	if errno := j.check(oldPath, true); errno != 0 {
		return errno
	}
	if errno := j.check(newPath, false); errno != 0 {
		return errno
	}
	return j.charged(newPath, func() experimentalsys.Errno {
		return experimentalsys.UnwrapOSError(j.root.Link(oldPath, newPath))
	})
}

// Symlink implements experimentalsys.FS: the guest may not create
// symlinks, so none can point out of the jail.
func (j *jailFS) Symlink(string, string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// Readlink implements experimentalsys.FS.
func (j *jailFS) Readlink(p string) (string, experimentalsys.Errno) {
	p = clean(p)
	if errno := j.check(p, false); errno != 0 {
		return "", errno
	}
	s, err := j.root.Readlink(p)
	return s, experimentalsys.UnwrapOSError(err)
}

// Utimens implements experimentalsys.FS.
func (j *jailFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	p = clean(p)
	if errno := j.check(p, true); errno != 0 {
		return errno
	}
	if atim == experimentalsys.UTIME_OMIT || mtim == experimentalsys.UTIME_OMIT {
		fi, err := j.root.Stat(p)
		if err != nil {
			return experimentalsys.UnwrapOSError(err)
		}
		st := sys.NewStat_t(fi)
		if atim == experimentalsys.UTIME_OMIT {
			atim = st.Atim
		}
		if mtim == experimentalsys.UTIME_OMIT {
			mtim = st.Mtim
		}
	}
	return experimentalsys.UnwrapOSError(j.root.Chtimes(p, time.Unix(0, atim), time.Unix(0, mtim)))
}
