package cgroup

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// limitControllers are the controllers the limits need: memory for
// Limits.MemoryBytes, pids for Limits.Processes.
var limitControllers = []string{"memory", "pids"}

// staleWait bounds how long the cleanup of a dead executor's cgroup waits
// for what it killed to be gone before it removes the dirs.
const staleWait = 2 * time.Second

// parentName matches the name of an executor's parent cgroup.
var parentName = regexp.MustCompile(`^hermes-([0-9]+)-[0-9a-f]+$`)

// manager is the process-wide state: the executor's parent cgroup P and
// how limits are enforced in it.
type manager struct {
	// x is the executor's own v2 cgroup dir, p its parent cgroup (in x),
	// name p's base name.
	x, p, name string
	// exec is where this process moved itself to enable controllers for
	// x's children (x/name.exec), "" when it did not; enabled lists the
	// controllers it enabled in x's cgroup.subtree_control then. The
	// watcher undoes both.
	exec    string
	enabled []string
	// locks hold p's dir and the v1 dirs, flocked while this process
	// lives: a later executor takes a hermes-* dir it can lock, of a pid
	// that no longer runs, for a dead one's (claimStale).
	locks []*os.File
	// v2 holds the controllers enabled in p's subtree (limits in the
	// leaves' v2 files).
	v2 map[string]bool
	// v1 maps a controller whose limits go through cgroup v1 to its parent
	// dir there (home/name); home is this process's own v1 cgroup.
	v1, v1home map[string]string
	// seq numbers the leaves.
	seq atomic.Uint64

	// watcherW is the write end of the watcher's pipe, held only here;
	// watcherDone is closed once the watcher has exited.
	watcherW    *os.File
	watcherDone chan struct{}

	// leftMu guards left: leaf dirs whose removal failed (something in
	// them was not gone yet), retried by the next New.
	leftMu sync.Mutex
	left   []string
}

var (
	// mgrMu guards mgr, status and set: the manager is set up by the first
	// New or Current, and again after Shutdown.
	mgrMu  sync.Mutex
	mgr    *manager
	status Status
	set    bool
	// watcherPid is the watcher's pid (0: none); guarded by mgrMu.
	watcherPid int
)

// get returns the manager, setting it up the first time; nil when cgroups
// are not used (status says why).
func get() (*manager, Status) {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if !set {
		mgr, status = setup()
		set = true
	}
	return mgr, status
}

// Current reports whether trees are put in cgroups and how limits are
// enforced, setting the executor's parent cgroup up if that was not done
// yet (the first [New] does it otherwise).
func Current() Status {
	_, s := get()
	return s
}

// IsWatcher reports whether pid is the watcher process: a child of this
// process that must be neither killed nor reaped by anyone but this
// package (proctree's sweep of adopted orphans asks).
func IsWatcher(pid int) bool {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	return pid != 0 && pid == watcherPid
}

// Shutdown ends the watcher, which kills whatever is left in the
// executor's cgroups and removes them, and waits for it to be done; the
// next [New] sets them up again. Call it once every group is removed: a
// program need not call it at all (the watcher does the same when the
// process exits), tests do, to check that nothing is left.
func Shutdown() {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if mgr != nil {
		mgr.watcherW.Close()
		<-mgr.watcherDone
		mgr.unlock()
	}
	mgr, status, set, watcherPid = nil, Status{}, false, 0
}

// notUsed is the status without cgroups.
func notUsed(format string, args ...any) (*manager, Status) {
	return nil, withoutCgroups(fmt.Sprintf(format, args...))
}

// setup makes the executor's parent cgroup P in its own v2 cgroup X,
// enables the limit controllers where it can, removes what dead
// executors left in X and starts the watcher.
func setup() (*manager, Status) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return notUsed("cannot read /proc/self/mountinfo: %v", err)
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return notUsed("cannot read /proc/self/cgroup: %v", err)
	}
	mounts, own := parseMountinfo(string(mi)), parseProcCgroup(string(pc))
	if !own.hasV2 {
		return notUsed("this process is in no cgroup v2 hierarchy: /proc/self/cgroup has no 0:: line")
	}
	_, x, ok := v2Mount(mounts, own.v2)
	if !ok {
		return notUsed("no cgroup2 filesystem mounted here holds this process's cgroup %s (a container without a cgroup namespace?)", own.v2)
	}
	m := &manager{x: x, name: fmt.Sprintf("hermes-%d-%s", os.Getpid(), randomHex()), v2: map[string]bool{},
		v1: map[string]string{}, v1home: map[string]string{}, watcherDone: make(chan struct{})}
	m.p = filepath.Join(x, m.name)
	if err := os.Mkdir(m.p, 0o755); err != nil {
		return notUsed("cannot create a cgroup in %s, this process's own: %v", x, unwrapPath(err))
	}
	if _, err := os.Stat(filepath.Join(m.p, "cgroup.kill")); err != nil {
		os.Remove(m.p)
		return notUsed("%s has no cgroup.kill: Linux 5.14 or later is needed", x)
	}
	if err := m.lock(m.p); err != nil {
		m.removeAll()
		return notUsed("cannot lock %s: %v", m.p, unwrapPath(err))
	}
	s := Status{Used: true, Dir: m.p}
	es := map[string]Enforcement{}
	for _, c := range limitControllers {
		es[c] = m.enable(mounts, own, c)
	}
	s.Memory, s.Processes = es["memory"], es["pids"]
	if m.exec != "" && len(m.enabled) == 0 {
		m.moveBack()
	}
	m.cleanStale()
	if err := m.startWatcher(); err != nil {
		m.removeAll()
		return notUsed("cannot start the watcher process that kills a run's processes when the executor dies: %v", err)
	}
	s.Parents = []string{m.x}
	for _, c := range limitControllers {
		if h := m.v1home[c]; h != "" {
			s.Parents = append(s.Parents, h)
		}
	}
	return m, s
}

// enable makes the controller c's limits work in the leaves: through
// cgroup v2 where X's children have it, or can be given it, else through
// c's cgroup v1 hierarchy, where a dir of the same name as P is made. A
// controller is enabled for X's children (X's cgroup.subtree_control)
// only where X is the root, or after this process moved itself out of X
// (moveSelf): cgroup v2 lets no other cgroup with processes of its own
// enable controllers for its children.
func (m *manager) enable(mounts []mount, own membership, c string) Enforcement {
	subtree := strings.Fields(readString(filepath.Join(m.x, "cgroup.subtree_control")))
	avail := strings.Fields(readString(filepath.Join(m.x, "cgroup.controllers")))
	// Only the root cgroup lacks cgroup.type.
	_, err := os.Stat(filepath.Join(m.x, "cgroup.type"))
	isRoot := errors.Is(err, os.ErrNotExist)
	switch {
	case slices.Contains(subtree, c):
	case slices.Contains(avail, c):
		if !isRoot {
			if err := m.moveSelf(); err != nil {
				return Enforcement{Reason: fmt.Sprintf("the %s controller is not enabled for the children of %s, which cgroup v2 allows only in a cgroup without processes of its own: %v", c, m.x, err)}
			}
		}
		if err := writeString(filepath.Join(m.x, "cgroup.subtree_control"), "+"+c); err != nil {
			return Enforcement{Reason: fmt.Sprintf("cannot enable the %s controller in %s: %v", c, m.x, unwrapPath(err))}
		}
		if m.exec != "" {
			m.enabled = append(m.enabled, c)
		}
	default:
		return m.enableV1(mounts, own, c)
	}
	if err := writeString(filepath.Join(m.p, "cgroup.subtree_control"), "+"+c); err != nil {
		return Enforcement{Reason: fmt.Sprintf("cannot enable the %s controller in %s: %v", c, m.p, unwrapPath(err))}
	}
	m.v2[c] = true
	return Enforcement{By: map[string]string{"memory": "memory.max", "pids": "pids.max"}[c] + " (cgroup v2)"}
}

// moveSelf moves this process from X into a cgroup of its own,
// X/<name>.exec, so that controllers can be enabled for X's children:
// only when this process is alone in X (a cgroup made for it: a systemd
// scope or service, a container's), since another process's cgroup is not
// this one's to change. The watcher moves whatever is in it back at the
// end.
func (m *manager) moveSelf() error {
	if m.exec != "" {
		return nil
	}
	me := strconv.Itoa(os.Getpid())
	if procs := strings.Fields(readString(filepath.Join(m.x, "cgroup.procs"))); len(procs) != 1 || procs[0] != me {
		return fmt.Errorf("other processes than this one are in it (the executor moves itself to a cgroup of its own only when it is alone in its cgroup: start it in one of its own)")
	}
	e := filepath.Join(m.x, m.name+".exec")
	if err := os.Mkdir(e, 0o755); err != nil {
		return fmt.Errorf("cannot make a cgroup to move this process to: %v", unwrapPath(err))
	}
	if err := writeString(filepath.Join(e, "cgroup.procs"), me); err != nil {
		os.Remove(e)
		return fmt.Errorf("cannot move this process to %s: %v", e, unwrapPath(err))
	}
	m.exec = e
	return nil
}

// moveBack undoes moveSelf (nothing was enabled after all).
func (m *manager) moveBack() {
	if writeString(filepath.Join(m.x, "cgroup.procs"), strconv.Itoa(os.Getpid())) == nil {
		os.Remove(m.exec)
		m.exec = ""
	}
}

// enableV1 makes c's limits go through its cgroup v1 hierarchy (a hybrid
// hierarchy: v2 for grouping, the controllers bound to v1).
func (m *manager) enableV1(mounts []mount, own membership, c string) Enforcement {
	home := v1Dir(mounts, own, c)
	if home == "" {
		return Enforcement{Reason: fmt.Sprintf("the cgroup v2 hierarchy at %s has no %s controller, and no cgroup v1 %s hierarchy holds this process", m.x, c, c)}
	}
	dir := filepath.Join(home, m.name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return Enforcement{Reason: fmt.Sprintf("the cgroup v2 hierarchy at %s has no %s controller, and a cgroup cannot be made in the v1 one: %v", m.x, c, unwrapPath(err))}
	}
	if err := m.lock(dir); err != nil {
		os.Remove(dir)
		return Enforcement{Reason: fmt.Sprintf("cannot lock %s: %v", dir, unwrapPath(err))}
	}
	file := map[string]string{"memory": "memory.limit_in_bytes", "pids": "pids.max"}[c]
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		last := len(m.locks) - 1 // the lock just taken on dir
		m.locks[last].Close()
		m.locks = m.locks[:last]
		os.Remove(dir)
		return Enforcement{Reason: fmt.Sprintf("%s has no %s", home, file)}
	}
	m.v1[c], m.v1home[c] = dir, home
	return Enforcement{By: fmt.Sprintf("%s (cgroup v1, under %s)", file, home)}
}

// startWatcher starts the watcher: a /bin/sh in X, or where this process
// moved itself (outside P, which it kills), in a session of its own, that
// blocks reading a pipe whose write end only this process holds
// (close-on-exec: no child inherits it). At EOF, when this process has exited or died, it writes 1 to P's
// cgroup.kill and removes P and the v1 dirs, retrying while killed
// processes are still on their way out. It is started with clone3 into X,
// which also checks that a process can be started in a cgroup here.
func (m *manager) startWatcher() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	home := cmp.Or(m.exec, m.x)
	xfd, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		w.Close()
		return err
	}
	defer unix.Close(xfd)
	args := []string{"-c", watcherScript, "hermes-cgroup-watcher", m.p}
	for _, c := range limitControllers {
		if d := m.v1[c]; d != "" {
			args = append(args, d)
		}
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdin = r
	cmd.Dir = "/"
	// Nothing of the executor's environment: it holds secrets.
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if m.exec != "" {
		undo := make([]string, len(m.enabled))
		for i, c := range m.enabled {
			undo[i] = "-" + c
		}
		cmd.Env = append(cmd.Env, "HERMES_X="+m.x, "HERMES_EXEC="+m.exec, "HERMES_UNDO="+strings.Join(undo, " "))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: xfd}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	m.watcherW = w
	watcherPid = cmd.Process.Pid
	go func() {
		cmd.Wait()
		close(m.watcherDone)
	}()
	return nil
}

// watcherScript is the watcher's program ($1: P, then the v1 dirs; where
// the executor moved itself, HERMES_X, HERMES_EXEC and HERMES_UNDO say
// what to undo: the controllers to disable in X, the processes to move
// back there). It ignores the signals a terminal or a careless pkill
// sends.
const watcherScript = `trap '' HUP INT QUIT TERM PIPE
read _
rmtree() { for c in "$1"/*/; do [ -d "$c" ] && rmtree "${c%/}"; done; rmdir "$1" 2>/dev/null; }
n=0
while :; do
	[ -d "$1" ] && printf 1 > "$1/cgroup.kill"
	left=
	for d in "$@"; do
		if [ -d "$d" ]; then rmtree "$d"; [ -d "$d" ] && left=1; fi
	done
	[ -z "$left" ] && break
	n=$((n+1))
	[ "$n" -ge 100 ] && exit 1
	sleep 0.1 2>/dev/null || sleep 1
done
if [ -n "$HERMES_EXEC" ]; then
	printf '%s' "$HERMES_UNDO" > "$HERMES_X/cgroup.subtree_control"
	for p in $(cat "$HERMES_EXEC/cgroup.procs"); do printf '%s' "$p" > "$HERMES_X/cgroup.procs"; done
	rmdir "$HERMES_EXEC"
fi
exit 0`

// cleanStale kills and removes what executors that died with their
// watcher left: the hermes-* dirs in X and in the v1 hierarchies' own
// cgroups that claimStale can claim.
func (m *manager) cleanStale() {
	ents, _ := os.ReadDir(m.x)
	for _, e := range ents {
		d := filepath.Join(m.x, e.Name())
		if !e.IsDir() || e.Name() == m.name {
			continue
		}
		if f := claimStale(d); f != nil {
			writeString(filepath.Join(d, "cgroup.kill"), "1")
			waitEmpty(d, staleWait)
			removeTree(d)
			os.Remove(d + ".exec") // where it had moved itself, if empty
			f.Close()
		}
	}
	for _, home := range m.v1home {
		ents, _ := os.ReadDir(home)
		for _, e := range ents {
			d := filepath.Join(home, e.Name())
			if !e.IsDir() || e.Name() == m.name {
				continue
			}
			if f := claimStale(d); f != nil {
				removeTree(d)
				f.Close()
			}
		}
	}
}

// claimStale returns d locked when it is a dead executor's dir: named
// hermes-<pid>-<random>, no process has that pid (a live executor's dir
// is not taken in the moment between its mkdir and its lock), and nobody
// holds its lock (a live executor in another pid namespace, or one whose
// pid was reused, holds it). Otherwise nil.
func claimStale(d string) *os.File {
	sub := parentName.FindStringSubmatch(filepath.Base(d))
	if sub == nil {
		return nil
	}
	if pid, err := strconv.Atoi(sub[1]); err != nil || pid <= 0 || !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		return nil
	}
	f, err := os.Open(d)
	if err != nil {
		return nil
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		f.Close()
		return nil
	}
	return f
}

// lock opens d and flocks it for the life of this process.
func (m *manager) lock(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return err
	}
	m.locks = append(m.locks, f)
	return nil
}

// unlock closes the locks.
func (m *manager) unlock() {
	for _, f := range m.locks {
		f.Close()
	}
	m.locks = nil
}

// removeAll removes P and the v1 dirs and undoes moveSelf (a setup that
// failed half way).
func (m *manager) removeAll() {
	m.unlock()
	if m.exec != "" {
		undo := make([]string, len(m.enabled))
		for i, c := range m.enabled {
			undo[i] = "-" + c
		}
		removeTree(m.p)
		if len(undo) > 0 {
			writeString(filepath.Join(m.x, "cgroup.subtree_control"), strings.Join(undo, " "))
		}
		m.moveBack()
	}
	removeTree(m.p)
	for _, d := range m.v1 {
		removeTree(d)
	}
}

// Group is one tree's cgroup: a leaf of P, and of the v1 dirs when limits
// go through cgroup v1. A nil *Group is valid: it stands for no cgroup,
// and each method does nothing. Its methods are safe for concurrent use.
type Group struct {
	m   *manager
	dir string // the v2 leaf
	fd  int    // the v2 leaf, open for clone3
	// v1 are the v1 leaves, each with the dir its starting thread goes
	// back to.
	v1 []v1Leaf
	// memV1, pidsV1 tell where the events are read.
	memV1, pidsV1 bool

	mu      sync.Mutex
	removed bool
	last    Events // the events when it was removed
}

type v1Leaf struct{ dir, home string }

// New makes a cgroup with limits l for one tree, or returns nil: where
// cgroups are not used ([Current] says why), and where the leaf cannot be
// made (the tree then runs without, as it would without cgroups). A limit
// the system cannot enforce is left out (Current says which).
func New(l Limits) *Group {
	m, _ := get()
	if m == nil {
		return nil
	}
	m.retryLeft()
	name := "run-" + strconv.FormatUint(m.seq.Add(1), 10)
	g := &Group{m: m, dir: filepath.Join(m.p, name), fd: -1}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil
	}
	fd, err := unix.Open(g.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(g.dir)
		return nil
	}
	g.fd = fd
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		switch {
		case m.v2["memory"]:
			writeString(filepath.Join(g.dir, "memory.max"), v)
			// Past the limit, no swapping either: a cap, not a slowdown.
			writeString(filepath.Join(g.dir, "memory.swap.max"), "0")
		case m.v1["memory"] != "":
			if d := g.joinV1(m, "memory", name); d != "" {
				writeString(filepath.Join(d, "memory.limit_in_bytes"), v)
				writeString(filepath.Join(d, "memory.memsw.limit_in_bytes"), v)
				g.memV1 = true
			}
		}
	}
	if l.Processes > 0 {
		v := strconv.Itoa(l.Processes)
		switch {
		case m.v2["pids"]:
			writeString(filepath.Join(g.dir, "pids.max"), v)
		case m.v1["pids"] != "":
			if d := g.joinV1(m, "pids", name); d != "" {
				writeString(filepath.Join(d, "pids.max"), v)
				g.pidsV1 = true
			}
		}
	}
	return g
}

// joinV1 makes the leaf name in c's v1 dir, which the command will join.
func (g *Group) joinV1(m *manager, c, name string) string {
	d := filepath.Join(m.v1[c], name)
	if os.Mkdir(d, 0o755) != nil {
		return ""
	}
	g.v1 = append(g.v1, v1Leaf{dir: d, home: m.v1home[c]})
	return d
}

// Start starts cmd in g (cmd.Start with g nil). The command is cloned
// straight into the v2 leaf (clone3 with CLONE_INTO_CGROUP). cgroup v1 has
// no such clone: the thread that forks joins the v1 leaves first (a v1
// cgroup holds threads, and a child is born in its parent thread's
// cgroups) and goes back once the command is started, so the command and
// whatever it forks are in the leaves from their first instruction.
func (g *Group) Start(cmd *exec.Cmd) error {
	if g == nil {
		return cmd.Start()
	}
	g.Prepare(cmd)
	if len(g.v1) == 0 {
		return cmd.Start()
	}
	// The thread stays ours until it is back home: the command's
	// Pdeathsig follows the thread that forked it, which must not end.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	joined := g.join()
	err := cmd.Start()
	tid := strconv.Itoa(unix.Gettid())
	for _, l := range joined {
		writeString(filepath.Join(l.home, "tasks"), tid)
	}
	return err
}

// Prepare makes cmd start straight in the group's cgroup v2
// (clone3 with CLONE_INTO_CGROUP). Start does it; a caller that forks cmd
// on a thread of its own calls Prepare, and Join on that thread.
func (g *Group) Prepare(cmd *exec.Cmd) {
	if g == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, g.fd
}

// Join moves the calling OS thread, which must be locked to its goroutine
// and must end after it forks the command (never go back to the runtime's
// pool), into the group's cgroup v1 leaves, so that what it forks starts
// there under their limits: a process cannot be cloned straight into a v1
// cgroup. The thread is counted by the leaves' pids.max until it ends.
// internal/landlock's Launch calls it before it restricts the thread,
// since a restricted thread may not write to the cgroup file system.
func (g *Group) Join() {
	if g != nil {
		g.join()
	}
}

// Joiner returns Join when the group has cgroup v1 leaves to join, else
// nil: nothing need run on the forking thread then, so no thread need be
// locked and parked for it.
func (g *Group) Joiner() func() {
	if g == nil || len(g.v1) == 0 {
		return nil
	}
	return g.Join
}

// OnThreadOfItsOwn runs f on a new goroutine locked to an OS thread that
// is not the process's main thread and ends when f returns (the goroutine
// never unlocks it): the thread for Join, and for any change to a thread
// that must not outlive its use. The main thread is never ended by the
// runtime (and kill(2) and /proc see the process through it), so a
// goroutine that finds itself there holds it while another takes a
// thread of its own, then gives it back untouched.
func OnThreadOfItsOwn(f func()) {
	go func() {
		goruntime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			locked := make(chan struct{})
			go func() {
				goruntime.LockOSThread()
				close(locked)
				f()
			}()
			<-locked
			goruntime.UnlockOSThread()
			return
		}
		f()
	}()
}

// join moves the calling thread into the v1 leaves it can and returns those.
func (g *Group) join() []v1Leaf {
	tid := strconv.Itoa(unix.Gettid())
	var joined []v1Leaf
	for _, l := range g.v1 {
		if writeString(filepath.Join(l.dir, "tasks"), tid) == nil {
			joined = append(joined, l)
		}
	}
	return joined
}

// Pids lists the processes in the group.
func (g *Group) Pids() []int {
	if g == nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(readString(filepath.Join(g.dir, "cgroup.procs"))) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Populated reports whether a live process is left in the group.
func (g *Group) Populated() bool {
	if g == nil {
		return false
	}
	return keyed(readString(filepath.Join(g.dir, "cgroup.events")), "populated") > 0
}

// Kill sends SIGKILL to every process in the group, those it forks while
// being killed included (cgroup.kill).
func (g *Group) Kill() {
	if g != nil {
		writeString(filepath.Join(g.dir, "cgroup.kill"), "1")
	}
}

// Events reads what the group's limits did so far (after Remove: what
// they had done when it was removed).
func (g *Group) Events() Events {
	if g == nil {
		return Events{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return g.last
	}
	return g.events()
}

func (g *Group) events() Events {
	var e Events
	switch {
	case g.m.v2["memory"]:
		e.OOMKills = keyed(readString(filepath.Join(g.dir, "memory.events")), "oom_kill")
	case g.memV1:
		e.OOMKills = keyed(readString(filepath.Join(g.v1Dir("memory"), "memory.oom_control")), "oom_kill")
	}
	switch {
	case g.m.v2["pids"]:
		e.ProcessLimitHits = keyed(readString(filepath.Join(g.dir, "pids.events")), "max")
	case g.pidsV1:
		e.ProcessLimitHits = keyed(readString(filepath.Join(g.v1Dir("pids"), "pids.events")), "max")
	}
	return e
}

// v1Dir is the group's leaf in c's v1 hierarchy.
func (g *Group) v1Dir(c string) string {
	return filepath.Join(g.m.v1[c], filepath.Base(g.dir))
}

// Remove removes the group's dirs, once nothing is left in them (the
// caller killed the tree and waited for Populated to be false). A dir that
// cannot be removed yet is retried by the next New, and removed by the
// watcher at the latest. It is idempotent.
func (g *Group) Remove() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return
	}
	g.last = g.events()
	g.removed = true
	unix.Close(g.fd)
	dirs := []string{g.dir}
	for _, l := range g.v1 {
		dirs = append(dirs, l.dir)
	}
	for i, d := range dirs {
		err := removeTree(d)
		if err != nil && i > 0 && !errors.Is(err, os.ErrNotExist) {
			// A v1 leaf also held the thread that forked the command
			// (Join), which its launcher has just let end: the thread
			// leaves the leaf as the runtime ends it, moments later.
			waitNoTasks(d, v1ThreadWait)
			err = removeTree(d)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			g.m.leftMu.Lock()
			g.m.left = append(g.m.left, d)
			g.m.leftMu.Unlock()
		}
	}
}

// v1ThreadWait bounds Remove's wait for the forking thread to leave a v1
// leaf; past it the leaf is retried later (see Remove).
const v1ThreadWait = time.Second

// waitNoTasks waits up to d for the v1 cgroup dir to list no task.
func waitNoTasks(dir string, d time.Duration) {
	deadline := time.Now().Add(d)
	for strings.TrimSpace(readString(filepath.Join(dir, "tasks"))) != "" && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}

// Settle retries, for up to d, the removal of leaves that were still
// busy when their groups were removed, and reports whether none is left
// pending. Tests call it before they look for cgroups left behind.
func Settle(d time.Duration) bool {
	m, _ := get()
	if m == nil {
		return true
	}
	deadline := time.Now().Add(d)
	for {
		m.retryLeft()
		m.leftMu.Lock()
		n := len(m.left)
		m.leftMu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return n == 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// retryLeft retries the removal of leaves that were busy.
func (m *manager) retryLeft() {
	m.leftMu.Lock()
	defer m.leftMu.Unlock()
	kept := m.left[:0]
	for _, d := range m.left {
		if err := removeTree(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			kept = append(kept, d)
		}
	}
	m.left = kept
}

// removeTree removes the cgroup dir d and the cgroups below it, deepest
// first (a cgroup dir holds only files the kernel removes with it).
func removeTree(d string) error {
	if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
		return err
	}
	ents, _ := os.ReadDir(d)
	for _, e := range ents {
		if e.IsDir() {
			removeTree(filepath.Join(d, e.Name()))
		}
	}
	return os.Remove(d)
}

// waitEmpty waits up to d for the cgroup dir to hold no live process.
func waitEmpty(dir string, d time.Duration) {
	deadline := time.Now().Add(d)
	for keyed(readString(filepath.Join(dir, "cgroup.events")), "populated") > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// keyed is the value of key in a flat-keyed cgroup file ("key value"
// lines), or 0.
func keyed(text, key string) int {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func readString(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

// writeString writes s to the cgroup file name in one write, as the
// kernel wants it.
func writeString(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(s))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// unwrapPath drops an *os.PathError's op and path (the message names the
// dir already).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func randomHex() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
