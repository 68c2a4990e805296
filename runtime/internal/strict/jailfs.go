package strict

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
//
// # Windows
//
//   - Names follow the host's rules: NTFS is case-insensitive (and
//     case-preserving), so "A.txt" and "a.txt" are one file in the jail, as
//     on macOS's default APFS; the budget sees one file and one entry.
//   - A name Windows cannot hold (a drive letter or alternate data stream
//     "a:b", one of <>"|?* or a control character, a trailing dot or space,
//     which Windows strips so "a." would be "a", or a device name such as
//     NUL, CON or COM1, with or without an extension) names nothing: a
//     lookup reports ENOENT, an operation that would create it EINVAL.
//     Without this "a:b" would write an alternate data stream the budget
//     cannot see, and "NUL" would open the device.
//   - Junctions (mount points, which Go reports as irregular files) are
//     refused like symlinks.
//   - File identity (same-file check, hard links, unlink while open) is the
//     volume serial number and file index, asked from a handle (see
//     identify): an os.FileInfo has no inode there.
type jailFS struct {
	experimentalsys.UnimplementedFS
	dir  string
	root *os.Root
	fs   experimentalsys.FS
	// winNames applies Windows' file-name rules (see the type's doc): set
	// on Windows, and by tests elsewhere.
	winNames bool
	// budget caps the bytes stored under dir; nil means no cap.
	budget *diskBudget
	// changed, when not nil, is set by everything that may create or
	// change a file (an open for writing and every write, truncation or
	// time change through it, rename, link, utimens), so that leftScan
	// walks the dir only when something may have changed.
	changed *atomic.Bool
	// missing, when not nil, records the paths the guest looked up that do
	// not exist (see missingPaths).
	missing *missingPaths
	// inos maps the host inode numbers of a resumed kernel's restored
	// files to the ones the guest knew them by before it was suspended
	// (set before the instance starts, then only read): SQLite, for one,
	// keeps an open database's inode number and takes a different one for
	// the file moved (SQLITE_READONLY_DBMOVED). nil: none.
	inos map[uint64]uint64
}

// guestIno is the inode number the guest sees for the host's ino.
func (j *jailFS) guestIno(ino uint64) uint64 {
	if g, ok := j.inos[ino]; ok {
		return g
	}
	return ino
}

// restoreInos maps the host inode numbers of files, just restored, to the
// ones their image recorded.
func (j *jailFS) restoreInos(files []ImageFile) {
	for _, f := range files {
		if f.Ino == 0 {
			continue
		}
		st, err := rootStat(j.root, f.Path, false)
		if err != nil || st.Ino == 0 || st.Ino == f.Ino {
			continue
		}
		if j.inos == nil {
			j.inos = map[uint64]uint64{}
		}
		j.inos[st.Ino] = f.Ino
	}
}

// inoFile is an open file of a jail whose inode numbers are mapped.
type inoFile struct {
	experimentalsys.File
	j *jailFS
}

// Stat implements experimentalsys.File.
func (f *inoFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	st, errno := f.File.Stat()
	st.Ino = f.j.guestIno(st.Ino)
	return st, errno
}

// Readdir implements experimentalsys.File.
func (f *inoFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	dirents, errno := f.File.Readdir(n)
	for i := range dirents {
		dirents[i].Ino = f.j.guestIno(dirents[i].Ino)
	}
	return dirents, errno
}

// missingPaths are paths a strict-mode guest looked for in its private dir
// and did not find, the first maxMissing of them (relative, clean): the
// engine reports those the working dir has (a script that expected the
// project's files, and may have gone on without them).
type missingPaths struct {
	mu    sync.Mutex
	paths []string
}

// maxMissing bounds the paths kept.
const maxMissing = 32

// add records p (not the root, not twice).
func (m *missingPaths) add(p string) {
	if m == nil || p == "." {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.paths) < maxMissing && !slices.Contains(m.paths, p) {
		m.paths = append(m.paths, p)
	}
}

// take returns the paths recorded since the last take.
func (m *missingPaths) take() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.paths
	m.paths = nil
	return p
}

// mark records that a file may have been created or changed.
func (j *jailFS) mark() {
	if j.changed != nil {
		j.changed.Store(true)
	}
}

// writeFlags are the open flags that may create or change a file.
const writeFlags = experimentalsys.O_CREAT | experimentalsys.O_TRUNC | experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_APPEND

// markedFile is a file the guest opened for writing in a jail with a
// changed flag: every write, truncation or time change sets it again (a
// kernel's call may write to a file an earlier call opened).
type markedFile struct {
	experimentalsys.File
	changed *atomic.Bool
}

// Write implements experimentalsys.File.
func (f *markedFile) Write(buf []byte) (int, experimentalsys.Errno) {
	f.changed.Store(true)
	return f.File.Write(buf)
}

// Pwrite implements experimentalsys.File.
func (f *markedFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	f.changed.Store(true)
	return f.File.Pwrite(buf, off)
}

// Truncate implements experimentalsys.File.
func (f *markedFile) Truncate(n int64) experimentalsys.Errno {
	f.changed.Store(true)
	return f.File.Truncate(n)
}

// Utimens implements experimentalsys.File.
func (f *markedFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	f.changed.Store(true)
	return f.File.Utimens(atim, mtim)
}

// newJailFS opens dir as a jail. Close it with close().
func newJailFS(dir string) (*jailFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &jailFS{dir: dir, root: root, fs: sysfs.DirFS(dir), winNames: runtime.GOOS == "windows"}, nil
}

// windowsName reports whether name, one path component, can name a file on
// Windows: no drive letter or stream (":"), none of <>"|?\* or control
// characters, no trailing dot or space, and no device name (CON, PRN, AUX,
// NUL, COM0-9, LPT0-9 and their superscript forms, CONIN$, CONOUT$), with
// or without an extension (Windows before 11 opens "nul.txt" as NUL too).
func windowsName(name string) bool {
	if strings.ContainsAny(name, `<>:"|?*\`) || strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return false
	}
	for _, r := range name {
		if r < 0x20 {
			return false
		}
	}
	base, _, _ := strings.Cut(name, ".")
	base = strings.ToUpper(strings.TrimRight(base, " "))
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return false
	}
	if len(base) > 3 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) {
		switch base[3:] {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "\u00b9", "\u00b2", "\u00b3":
			return false
		}
	}
	return true
}

// badName reports whether the clean path p has a component the host
// cannot name (only on Windows; see the type's doc).
func (j *jailFS) badName(p string) bool {
	if !j.winNames || p == "." {
		return false
	}
	for part := range strings.SplitSeq(p, "/") {
		if !windowsName(part) {
			return true
		}
	}
	return false
}

// creatable refuses, with EINVAL, a path to create that the host cannot
// name (see badName).
func (j *jailFS) creatable(p string) experimentalsys.Errno {
	if j.badName(p) {
		return experimentalsys.EINVAL
	}
	return 0
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
	if j.badName(p) {
		return experimentalsys.ENOENT // no such file can exist
	}
	parts := strings.Split(p, "/")
	if !follow {
		// The last component may be a symlink: the operation looks at
		// (or removes, or makes) the link itself.
		parts = parts[:len(parts)-1]
	}
	for i := range parts {
		fi, err := j.root.Lstat(strings.Join(parts[:i+1], "/"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return 0
			}
			return experimentalsys.UnwrapOSError(err)
		}
		// ModeIrregular: a Windows junction (mount point), a link too.
		if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
			return experimentalsys.EACCES
		}
	}
	return 0
}

// OpenFile implements experimentalsys.FS.
func (j *jailFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p = clean(p)
	if flag&experimentalsys.O_CREAT != 0 {
		if errno := j.creatable(p); errno != 0 {
			return nil, errno
		}
	}
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
		if errno == experimentalsys.ENOENT {
			j.missing.add(p)
		}
		return nil, errno
	}
	if errno := j.sameFile(p, f); errno != 0 {
		f.Close()
		return nil, errno
	}
	if j.budget != nil {
		f = j.budget.opened(f, func(id fileID) int64 { return j.allocated(p, id) })
	}
	if j.changed != nil && flag&writeFlags != 0 {
		j.mark()
		f = &markedFile{File: f, changed: j.changed}
	}
	if trunc {
		if errno := f.Truncate(0); errno != 0 {
			f.Close()
			return nil, errno
		}
	}
	if j.inos != nil {
		f = &inoFile{File: f, j: j}
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

// allocated is the disk space of the file at p if it is the file id (an
// open file's, which a rename may have moved: then 0, nothing known to be
// freed by it), or -1 when the host does not tell.
func (j *jailFS) allocated(p string, id fileID) int64 {
	fi, err := j.root.Lstat(p)
	if err != nil {
		return 0
	}
	alloc := allocated(fi)
	if alloc < 0 {
		return -1
	}
	if st := sys.NewStat_t(fi); statID(st) != id || id == (fileID{}) {
		return 0
	}
	return alloc
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
	want, err := rootStat(j.root, p, true)
	if err != nil {
		return experimentalsys.EACCES
	}
	if got.Ino != want.Ino || got.Dev != want.Dev {
		return experimentalsys.EACCES
	}
	return 0
}

// rootStat stats p through root (following a last symlink when follow),
// with the file's identity and link count on every platform (see
// identify).
func rootStat(root *os.Root, p string, follow bool) (sys.Stat_t, error) {
	if follow {
		return rootStatFollow(root, p)
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return sys.Stat_t{}, err
	}
	st := sys.NewStat_t(fi)
	if st.Ino == 0 && fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) == 0 {
		identify(root, p, &st)
	}
	return st, nil
}

// Lstat implements experimentalsys.FS.
func (j *jailFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p = clean(p)
	if errno := j.check(p, false); errno != 0 {
		return sys.Stat_t{}, errno
	}
	st, err := rootStat(j.root, p, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			j.missing.add(p)
		}
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	st.Ino = j.guestIno(st.Ino)
	return st, 0
}

// Stat implements experimentalsys.FS.
func (j *jailFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p = clean(p)
	if errno := j.check(p, true); errno != 0 {
		return sys.Stat_t{}, errno
	}
	// With the identity a handle reports (fstat): SQLite compares the
	// two to tell whether its database was moved.
	st, err := rootStat(j.root, p, true)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			j.missing.add(p)
		}
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	st.Ino = j.guestIno(st.Ino)
	return st, 0
}

// Mkdir implements experimentalsys.FS.
func (j *jailFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	p = clean(p)
	if p == "." {
		return experimentalsys.EEXIST
	}
	if errno := j.creatable(p); errno != 0 {
		return errno
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
	j.mark()
	if from == "." || to == "." {
		return experimentalsys.EACCES
	}
	if errno := j.check(from, false); errno != 0 {
		return errno
	}
	if errno := j.creatable(to); errno != 0 {
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
	var replacedAlloc, delta int64
	if j.budget != nil {
		fromInfo, err1 := j.root.Lstat(from)
		toInfo, err2 := j.root.Lstat(to)
		switch {
		case err1 != nil, err2 == nil && os.SameFile(fromInfo, toInfo):
		case err2 == nil:
			st, err := rootStat(j.root, to, false)
			if err != nil {
				return experimentalsys.UnwrapOSError(err)
			}
			replaced = &st
			replacedAlloc = allocated(toInfo)
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
		j.budget.removed(*replaced, replacedAlloc)
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
	st, err := rootStat(j.root, p, false)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if st.Mode.IsDir() {
		return experimentalsys.EISDIR
	}
	alloc := int64(-1)
	if fi, err := j.root.Lstat(p); err == nil {
		alloc = allocated(fi)
	}
	if errno := experimentalsys.UnwrapOSError(j.root.Remove(p)); errno != 0 {
		return errno
	}
	if j.budget != nil {
		j.budget.removed(st, alloc)
		j.budget.shrink(entryCost(path.Base(p)))
	}
	return 0
}

// Link implements experimentalsys.FS.
func (j *jailFS) Link(oldPath, newPath string) experimentalsys.Errno {
	oldPath, newPath = clean(oldPath), clean(newPath)
	j.mark()
	if errno := j.check(oldPath, true); errno != 0 {
		return errno
	}
	if errno := j.creatable(newPath); errno != 0 {
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
	j.mark()
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
