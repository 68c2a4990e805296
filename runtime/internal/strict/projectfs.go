package strict

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// FileGuard judges the paths a sandboxed project-mode script opens or
// changes in its working dir by the file tools' rules (hostfuncs): the
// refusal message, or "" when allowed. Paths are absolute host paths.
type FileGuard interface {
	// ReadBlock is why reading path is refused (secret-bearing env files,
	// Hermes's stores and caches, hard links to them).
	ReadBlock(path string) string
	// WriteBlock is why creating, changing or removing path is refused
	// (credential files, the executor's caches, Hermes's config).
	WriteBlock(path string) string
	// PackageReadBlock is ReadBlock for a path of a package dir, which lies
	// outside the working dir by design: the same rules, without
	// confine_tools_to_workdir's.
	PackageReadBlock(path string) string
}

// ProjectOptions configure the sandboxed project mode ([Engine.Project]).
type ProjectOptions struct {
	// Guard applies the file tools' rules to every path the script
	// touches in the working dir; nil applies none.
	Guard FileGuard
	// Packages are host dirs of pure-Python packages (a virtualenv's or
	// python's site dirs), mounted read-only at their host paths and put
	// on sys.path after the working dir.
	Packages []string
}

// MaxRefusals bounds the refusals a sandboxed run reports.
const MaxRefusals = 5

// GuestPath is where the host dir dir (absolute) appears in the sandboxed
// project mode: the same path on POSIX hosts; on Windows the drive letter
// becomes the first component ("C:\Users\me\proj" is "/c/Users/me/proj").
func GuestPath(dir string) string {
	dir = filepath.Clean(dir)
	if runtime.GOOS == "windows" {
		if v := filepath.VolumeName(dir); len(v) == 2 && v[1] == ':' {
			return path.Clean("/" + strings.ToLower(v[:1]) + filepath.ToSlash(dir[2:]))
		}
		return filepath.ToSlash(dir)
	}
	return dir
}

// projectMount is one host dir in a projectFS, at guest path guest
// (clean, relative to the root, never ".").
type projectMount struct {
	guest string
	host  string
	fs    experimentalsys.FS
	guard bool // judge its paths with the FileGuard
	pkg   bool // a package dir (read-only, outside the working dir)
}

// projectFS is the guest's root in the sandboxed project mode: the
// working dir read-write at its host path, the package dirs read-only at
// theirs, the run's private tmp at /tmp, and the dirs above them as empty
// read-only dirs that list only the way down. Nothing else of the host is
// there. A path goes to the mount that holds it most specifically (a
// working dir under /tmp is the working dir, the rest of /tmp is private).
type projectFS struct {
	experimentalsys.UnimplementedFS
	mounts []projectMount // longest guest path first; "." is the root (strict mode's staging dir)
	guard  FileGuard
	// wasmPackages are the mounts of code_execution.wasm_packages.
	wasmPackages []projectMount

	mu       sync.Mutex
	refusals []string // distinct messages, at most MaxRefusals
	total    int      // every refusal, repeats included
}

// newProjectFS builds the root over the working dir jail (at its host
// path), the package dirs' jails (pkgs[i] over opts.Packages[i], mounted
// read-only) and the private tmp jail. Every mount but tmp is judged by
// opts.Guard.
func newProjectFS(workdir string, wd *jailFS, tmp *jailFS, pkgs []*jailFS, opts ProjectOptions) (*projectFS, error) {
	p := &projectFS{guard: opts.Guard}
	guest := func(host string) string { return strings.TrimPrefix(GuestPath(host), "/") }
	wg := guest(workdir)
	if wg == "" || wg == "." || filepath.Dir(filepath.Clean(workdir)) == filepath.Clean(workdir) {
		return nil, fmt.Errorf("the sandboxed project mode cannot mount %s as the working dir: use a project dir below it", workdir)
	}
	for _, reserved := range []string{stdlibMount, zoneinfoMount, libMount} {
		r := strings.TrimPrefix(reserved, "/")
		if wg == r || strings.HasPrefix(wg, r+"/") || strings.HasPrefix(r, wg+"/") {
			return nil, fmt.Errorf("the sandboxed project mode cannot mount the working dir %s: the interpreter's own files are at %s; use another working dir", workdir, reserved)
		}
	}
	p.mounts = append(p.mounts, projectMount{guest: wg, host: workdir, fs: wd, guard: true})
	p.mounts = append(p.mounts, projectMount{guest: "tmp", fs: tmp})
	for i, dir := range opts.Packages {
		g := guest(dir)
		if g == "" || g == "." || slices.ContainsFunc(p.mounts, func(m projectMount) bool { return m.guest == g }) {
			continue
		}
		p.mounts = append(p.mounts, projectMount{guest: g, host: dir, fs: &sysfs.ReadFS{FS: pkgs[i]}, guard: true, pkg: true})
	}
	slices.SortStableFunc(p.mounts, func(a, b projectMount) int { return len(b.guest) - len(a.guest) })
	return p, nil
}

// takeRefusals returns the file-safety refusals since the last take (the
// first MaxRefusals distinct messages, and how many refusals there were in
// all) and forgets them: a kernel's call reports its own.
func (p *projectFS) takeRefusals() ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, n := p.refusals, p.total
	p.refusals, p.total = nil, 0
	return r, n
}

// refuse records msg and returns EACCES.
func (p *projectFS) refuse(msg string) experimentalsys.Errno {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	if len(p.refusals) < MaxRefusals && !slices.Contains(p.refusals, msg) {
		p.refusals = append(p.refusals, msg)
	}
	return experimentalsys.EACCES
}

// route finds the mount holding the guest path g (clean): the mount and
// the path relative to it, or, for a dir above the mounts, nil and the
// names below it that lead to one. A dir that leads to a mount and is
// inside another one (the working dir under /tmp) is that mount's when it
// is there (a package dir in the working dir's .venv), else one above.
func (p *projectFS) route(g string) (*projectMount, string, []string) {
	var names []string
	for _, m := range p.mounts {
		if m.guest == "." {
			continue
		}
		rest, ok := m.guest, g == "."
		if !ok {
			rest, ok = strings.CutPrefix(m.guest, g+"/")
		}
		if ok {
			name, _, _ := strings.Cut(rest, "/")
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	for i := range p.mounts {
		m := &p.mounts[i]
		if g == m.guest {
			return m, ".", nil
		}
		rest, ok := strings.CutPrefix(g, m.guest+"/")
		if m.guest == "." {
			rest, ok = g, true
		}
		if ok {
			if names != nil {
				if _, errno := m.fs.Lstat(rest); errno != 0 {
					return nil, "", names
				}
			}
			return m, rest, nil
		}
	}
	return nil, "", names
}

// judge applies the guard to rel in m: reading when read, writing when
// write. It returns EACCES (the refusal recorded) or 0.
func (p *projectFS) judge(m *projectMount, rel string, read, write bool) experimentalsys.Errno {
	if p.guard == nil || !m.guard {
		return 0
	}
	host := filepath.Join(m.host, filepath.FromSlash(rel))
	if read {
		readBlock := p.guard.ReadBlock
		if m.pkg {
			readBlock = p.guard.PackageReadBlock
		}
		if msg := readBlock(host); msg != "" {
			return p.refuse(msg)
		}
	}
	if write {
		if msg := p.guard.WriteBlock(host); msg != "" {
			return p.refuse(msg)
		}
	}
	return 0
}

// syntheticStat is the stat of a dir above the mounts.
func syntheticStat() sys.Stat_t {
	return sys.Stat_t{Mode: fs.ModeDir | 0o555, Nlink: 2}
}

// OpenFile implements experimentalsys.FS.
func (p *projectFS) OpenFile(g string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	g = clean(g)
	m, rel, names := p.route(g)
	if m == nil {
		if names == nil {
			if flag&experimentalsys.O_CREAT != 0 {
				return nil, experimentalsys.EACCES
			}
			return nil, experimentalsys.ENOENT
		}
		if flag&writeFlags != 0 {
			return nil, experimentalsys.EISDIR
		}
		slices.Sort(names)
		return &syntheticDir{names: names}, 0
	}
	access := flag & (experimentalsys.O_RDONLY | experimentalsys.O_WRONLY | experimentalsys.O_RDWR)
	read := access == experimentalsys.O_RDONLY || access == experimentalsys.O_RDWR
	write := flag&writeFlags != 0
	if errno := p.judge(m, rel, read, write); errno != 0 {
		return nil, errno
	}
	return m.fs.OpenFile(rel, flag, perm)
}

// Lstat implements experimentalsys.FS.
func (p *projectFS) Lstat(g string) (sys.Stat_t, experimentalsys.Errno) {
	m, rel, names := p.route(clean(g))
	if m == nil {
		if names == nil {
			return sys.Stat_t{}, experimentalsys.ENOENT
		}
		return syntheticStat(), 0
	}
	return m.fs.Lstat(rel)
}

// Stat implements experimentalsys.FS.
func (p *projectFS) Stat(g string) (sys.Stat_t, experimentalsys.Errno) {
	m, rel, names := p.route(clean(g))
	if m == nil {
		if names == nil {
			return sys.Stat_t{}, experimentalsys.ENOENT
		}
		return syntheticStat(), 0
	}
	return m.fs.Stat(rel)
}

// writable routes g for an operation that changes it: the mount and the
// path in it, or the errno (a dir above the mounts, or nothing there).
func (p *projectFS) writable(g string, read bool) (*projectMount, string, experimentalsys.Errno) {
	m, rel, names := p.route(clean(g))
	if m == nil {
		if names == nil {
			return nil, "", experimentalsys.EACCES
		}
		return nil, "", experimentalsys.EPERM
	}
	if rel == "." {
		return nil, "", experimentalsys.EPERM // a mount point
	}
	if errno := p.judge(m, rel, read, true); errno != 0 {
		return nil, "", errno
	}
	return m, rel, 0
}

// Mkdir implements experimentalsys.FS.
func (p *projectFS) Mkdir(g string, perm fs.FileMode) experimentalsys.Errno {
	m, rel, names := p.route(clean(g))
	if m == nil {
		if names != nil {
			return experimentalsys.EEXIST
		}
		return experimentalsys.EACCES
	}
	if rel == "." {
		return experimentalsys.EEXIST
	}
	if errno := p.judge(m, rel, false, true); errno != 0 {
		return errno
	}
	return m.fs.Mkdir(rel, perm)
}

// Chmod implements experimentalsys.FS.
func (p *projectFS) Chmod(g string, perm fs.FileMode) experimentalsys.Errno {
	m, rel, errno := p.writable(g, false)
	if errno != 0 {
		return errno
	}
	return m.fs.Chmod(rel, perm)
}

// Rename implements experimentalsys.FS. Both paths must be in the same
// mount (across them: EXDEV, as between file systems); the source is
// judged as read and written (its content moves to a new name).
func (p *projectFS) Rename(from, to string) experimentalsys.Errno {
	m1, r1, errno := p.writable(from, true)
	if errno != 0 {
		return errno
	}
	m2, r2, errno := p.writable(to, false)
	if errno != 0 {
		return errno
	}
	if m1 != m2 {
		return experimentalsys.EPERM // wazero has no EXDEV; shutil.move copies on any OSError
	}
	if errno := p.judgeMove(m1, r1, r2); errno != 0 {
		return errno
	}
	return m1.fs.Rename(r1, r2)
}

// judgeMove judges the rename of the dir r1 in m to r2, which renames
// every path below it: each must be writable at its old and its new path,
// and one the guard refuses to read must stay refused at its new path.
// Without this a script renamed the dir above a protected location and
// reached it under the new name: a Hermes home in the working dir moved
// aside, its config.yaml rewritten (approvals: off) and moved back, its
// MCP tokens and profiles' stores read, the executor's cache dir's parent
// moved aside to plant files in the cache. A dir holding another mount (a
// package dir in the working dir's .venv) is not renamed either (EPERM, as
// for a mount point): under the new name its read-only files were the
// working dir's, writable.
func (p *projectFS) judgeMove(m *projectMount, r1, r2 string) experimentalsys.Errno {
	j, ok := m.fs.(*jailFS)
	if !ok {
		return 0 // a read-only mount: the rename fails anyway
	}
	st, errno := j.Lstat(r1)
	if errno != 0 || !st.Mode.IsDir() {
		return 0 // a file (judged by writable), a symlink, or nothing
	}
	src := path.Join(m.guest, clean(r1))
	for _, other := range p.mounts {
		if other.guest != m.guest && strings.HasPrefix(other.guest, src+"/") {
			return experimentalsys.EPERM
		}
	}
	if p.guard == nil || !m.guard {
		return 0
	}
	from := filepath.Join(m.host, filepath.FromSlash(clean(r1)))
	to := filepath.Join(m.host, filepath.FromSlash(clean(r2)))
	var refused experimentalsys.Errno
	err := fs.WalkDir(j.root.FS(), clean(r1), func(rel string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sub, _ := strings.CutPrefix(rel, clean(r1))
		if sub == "" {
			return nil // the dir itself: judged by writable
		}
		old := from + filepath.FromSlash(sub)
		moved := to + filepath.FromSlash(sub)
		msg := p.guard.WriteBlock(old)
		if msg == "" {
			msg = p.guard.WriteBlock(moved)
		}
		if msg == "" {
			if r := p.guard.ReadBlock(old); r != "" && p.guard.ReadBlock(moved) == "" {
				msg = r
			}
		}
		if msg != "" {
			refused = p.refuse(msg)
			return fs.SkipAll
		}
		return nil
	})
	if refused != 0 {
		return refused
	}
	if err != nil {
		return experimentalsys.EACCES // a tree it cannot judge is not moved
	}
	return 0
}

// Rmdir implements experimentalsys.FS.
func (p *projectFS) Rmdir(g string) experimentalsys.Errno {
	m, rel, errno := p.writable(g, false)
	if errno != 0 {
		return errno
	}
	return m.fs.Rmdir(rel)
}

// Unlink implements experimentalsys.FS.
func (p *projectFS) Unlink(g string) experimentalsys.Errno {
	m, rel, errno := p.writable(g, false)
	if errno != 0 {
		return errno
	}
	return m.fs.Unlink(rel)
}

// Link implements experimentalsys.FS: a second name for a file is judged
// as reading and writing it, and the new name as a write.
func (p *projectFS) Link(oldPath, newPath string) experimentalsys.Errno {
	m1, r1, errno := p.writable(oldPath, true)
	if errno != 0 {
		return errno
	}
	m2, r2, errno := p.writable(newPath, false)
	if errno != 0 {
		return errno
	}
	if m1 != m2 {
		return experimentalsys.EPERM // wazero has no EXDEV; shutil.move copies on any OSError
	}
	return m1.fs.Link(r1, r2)
}

// Symlink implements experimentalsys.FS: the guest may not create
// symlinks (see jailFS).
func (p *projectFS) Symlink(string, string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// Readlink implements experimentalsys.FS.
func (p *projectFS) Readlink(g string) (string, experimentalsys.Errno) {
	m, rel, _ := p.route(clean(g))
	if m == nil {
		return "", experimentalsys.EINVAL
	}
	return m.fs.Readlink(rel)
}

// Utimens implements experimentalsys.FS.
func (p *projectFS) Utimens(g string, atim, mtim int64) experimentalsys.Errno {
	m, rel, errno := p.writable(g, false)
	if errno != 0 {
		return errno
	}
	return m.fs.Utimens(rel, atim, mtim)
}

// syntheticDir is an open dir above the mounts: it lists names, once
// (no rewind: a Seek method would not pass go vet's signature check, and
// Python's listdir and scandir open the dir afresh each time).
type syntheticDir struct {
	experimentalsys.UnimplementedFile
	names []string
	pos   int
}

// IsDir implements experimentalsys.File.
func (d *syntheticDir) IsDir() (bool, experimentalsys.Errno) { return true, 0 }

// Stat implements experimentalsys.File.
func (d *syntheticDir) Stat() (sys.Stat_t, experimentalsys.Errno) { return syntheticStat(), 0 }

// Readdir implements experimentalsys.File.
func (d *syntheticDir) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	rest := d.names[d.pos:]
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	d.pos += len(rest)
	out := make([]experimentalsys.Dirent, len(rest))
	for i, name := range rest {
		out[i] = experimentalsys.Dirent{Name: name, Type: fs.ModeDir}
	}
	return out, 0
}

// Close implements experimentalsys.File.
func (d *syntheticDir) Close() experimentalsys.Errno { return 0 }
