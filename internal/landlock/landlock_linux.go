package landlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"golang.org/x/sys/unix"
)

// The write rights of ABI 1: every way to change a file or a directory's
// entries.
const writeRightsV1 = unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
	unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
	unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_SYM

// fileRights are the rights a rule on a file (not a directory) may hold.
const fileRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE

// erratumSignals is the bit of erratum 2 in the kernel's errata: signals
// between threads of one process are always allowed. Without it a
// restricted thread of the executor could not signal the runtime's other
// threads (goroutine preemption), so signals are not scoped then.
const erratumSignals = 1 << (2 - 1)

// devices are the files a confined run may still write: what programs
// open for writing as a matter of course.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"}

// host is what this kernel's Landlock offers, learned once.
type host struct {
	Status
	handled uint64 // the filesystem rights the rulesets handle
	scoped  uint64 // the scopes they set
}

var probe = sync.OnceValue(func() host {
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case e == unix.ENOSYS:
		return host{Status: Status{Reason: "this kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK)"}}
	case e == unix.EOPNOTSUPP:
		return host{Status: Status{Reason: "Landlock is turned off on this kernel (add landlock to the lsm= boot parameter)"}}
	case e != 0:
		return host{Status: Status{Reason: "asking the kernel for its Landlock ABI: " + e.Error()}}
	}
	h := host{Status: Status{ABI: int(abi)}}
	if h.ABI < 2 {
		// Without the refer right every rename or link from one
		// directory to another fails: too much ordinary work breaks.
		h.Reason = "Landlock ABI 1 cannot allow moving files between directories (ABI 2, Linux 5.19, needed)"
		return h
	}
	h.Enforced = true
	h.handled = writeRightsV1 | unix.LANDLOCK_ACCESS_FS_REFER
	if h.ABI >= 3 {
		h.handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if h.ABI < 6 {
		h.Reason = "Landlock ABI 6, Linux 6.12, needed"
		return h
	}
	h.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	h.Sockets = true
	errata, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA)
	if e == 0 && errata&erratumSignals != 0 {
		h.scoped |= unix.LANDLOCK_SCOPE_SIGNAL
		h.Signals = true
	} else {
		h.Reason = "the kernel lacks Landlock erratum 2"
	}
	return h
})

// Probe reports what Landlock does on this host.
func Probe() Status { return probe().Status }

// Launch runs start, which must fork the command (exec.Cmd.Start), on an
// OS thread restricted by p, so that the command and everything it starts
// are; the rules are built from the file system as it is now. before, when
// not nil, runs on that thread first, before it is restricted (the cgroup
// v1 join of internal/cgroup's Group.Join, which writes to the cgroup file
// system, something the restricted thread may not do). release
// must be called once the command has been reaped: until then the thread
// stays, because the command's parent-death signal fires when it ends.
// Where Landlock is not available (see [Probe]), or p is nil, start runs
// as it is.
func (p *Policy) Launch(before func(), start func() error) (release func(), err error) {
	h := probe()
	if p == nil || !h.Enforced {
		if before == nil {
			return func() {}, start()
		}
		// before moves the thread that forks: lock one, and let it end.
		done := make(chan error, 1)
		keep := make(chan struct{})
		cgroup.OnThreadOfItsOwn(func() {
			before()
			err := start()
			done <- err
			if err == nil {
				<-keep
			}
		})
		if err := <-done; err != nil {
			return nil, err
		}
		return sync.OnceFunc(func() { close(keep) }), nil
	}
	fd, err := p.ruleset(h)
	if err != nil {
		return nil, fmt.Errorf("landlock: %w (code_execution.landlock: off runs processes without it)", err)
	}
	defer unix.Close(fd)
	done := make(chan error, 1)
	keep := make(chan struct{})
	cgroup.OnThreadOfItsOwn(func() { restrictedStart(fd, before, start, done, keep) })
	if err := <-done; err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { close(keep) }), nil
}

// restrictedStart runs on a thread of its own (cgroup.OnThreadOfItsOwn):
// it runs before there (when not nil), restricts the thread with the
// ruleset fd, runs start there and sends its error on done; after a
// successful start it keeps the thread until keep is closed.
func restrictedStart(fd int, before func(), start func() error, done chan<- error, keep <-chan struct{}) {
	if before != nil {
		before()
	}
	// no_new_privs is per thread, and Landlock requires it (or
	// CAP_SYS_ADMIN): set-user-ID programs then start without their
	// privileges in the restricted processes.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		done <- fmt.Errorf("landlock: setting no_new_privs: %w", err)
		return
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		done <- fmt.Errorf("landlock: restricting the thread that starts the command: %w (code_execution.landlock: off runs processes without it)", e)
		return
	}
	err := start()
	done <- err
	if err == nil {
		<-keep
	}
}

// ruleset builds p's Landlock ruleset and returns its descriptor.
func (p *Policy) ruleset(h host) (int, error) {
	roots := []string{"/"}
	if p.Confine {
		roots = append(slices.Clone(p.Writable), devices...)
	}
	for i, r := range roots {
		roots[i] = resolve(r)
	}
	protect := make([]string, 0, len(p.Protect))
	for _, q := range p.Protect {
		protect = append(protect, resolve(q))
	}
	attr := unix.LandlockRulesetAttr{Access_fs: h.handled, Scoped: h.scoped}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return -1, fmt.Errorf("creating a ruleset: %w", e)
	}
	fd := int(r)
	for _, path := range plan(roots, protect) {
		if err := addRule(fd, path, h.handled); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// addRule grants rights beneath path (a file: only the file rights). The
// path is resolved already; it is opened without following any symlink,
// so an entry swapped for a link since it was listed (to a protected dir,
// say) is skipped rather than granted.
func addRule(fd int, path string, rights uint64) error {
	pfd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil // gone, or a link now: nothing to grant
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(pfd)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fmt.Errorf("adding a rule for %s: %w", path, e)
	}
	return nil
}

// plan lists the paths to grant write rights beneath: each root (all
// resolved, absolute) but what lies in a protected path. A root with no
// protected path in it is granted whole; one inside a protected path not
// at all. Otherwise, in every directory on the way from the root down to
// a protected path, each entry that is neither that path nor on the way
// to one is granted (a directory with its subtree, any other file by
// itself; symlinks are skipped: what they point to is judged where it
// lies), and the directories on the way are not, so nothing can be
// created, removed or renamed directly in them.
func plan(roots, protect []string) []string {
	var out []string
	for _, r := range roots {
		if _, err := os.Lstat(r); err != nil {
			continue
		}
		var inner []string
		skip := false
		for _, p := range protect {
			if within(r, p) {
				skip = true
				break
			}
			if within(p, r) {
				inner = append(inner, p)
			}
		}
		switch {
		case skip:
		case len(inner) == 0:
			out = append(out, r)
		default:
			out = around(r, inner, out)
		}
	}
	return out
}

// around appends to out the entries of dir that hold no protected path,
// descending into those that do (see plan).
func around(dir string, protect []string, out []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out // unreadable: nothing in it is granted
	}
	for _, e := range entries {
		child := filepath.Join(dir, e.Name())
		var inner []string
		self := false
		for _, p := range protect {
			if p == child {
				self = true
			} else if within(p, child) {
				inner = append(inner, p)
			}
		}
		switch {
		case self:
		case len(inner) > 0:
			if e.IsDir() {
				out = around(child, inner, out)
			}
		case e.Type()&os.ModeSymlink == 0:
			out = append(out, child)
		}
	}
	return out
}

// resolve returns the absolute path p with the symlinks of its longest
// existing part resolved and the rest appended as it is.
func resolve(p string) string {
	p, _ = filepath.Abs(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	} else if !errors.Is(err, os.ErrNotExist) {
		return p
	}
	dir := filepath.Dir(p)
	if dir == p {
		return p
	}
	return filepath.Join(resolve(dir), filepath.Base(p))
}

// within reports whether path is dir or lies beneath it (both clean and
// absolute).
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir) && path[len(dir)] == '/'
}

// Explain says why p refuses a write to path (relative to workdir, the
// run's working dir), or "" when p allows it: path is (in) protected
// state, lies directly in a directory that holds some (where nothing can
// be created, removed or renamed), or, under Confine, lies outside the
// writable dirs. It judges the file system as it is now, for a refusal's
// hint.
func (p *Policy) Explain(path, workdir string) string {
	if p == nil || !probe().Enforced {
		return ""
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(workdir, path)
	}
	path = resolve(path)
	dir := filepath.Dir(path)
	for _, q := range p.Protect {
		q = resolve(q)
		if within(path, q) {
			return "it is the executor's state (" + q + ")"
		}
	}
	if p.Confine {
		roots := append(slices.Clone(p.Writable), devices...)
		if !slices.ContainsFunc(roots, func(r string) bool { return within(path, resolve(r)) }) {
			return "it is outside the working dir and the temp dir, and code_execution.confine_tools_to_workdir is true"
		}
	}
	for _, q := range p.Protect {
		if q = resolve(q); dir != q && within(q, dir) {
			return "it is directly in " + dir + ", which holds the executor's state (" + q + "): nothing can be created, removed or renamed there, though the files already there can be written"
		}
	}
	return ""
}
