//go:build unix

package proctree

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// procInfo is one process as a snapshot of the process table sees it.
type procInfo struct {
	pid, ppid, pgid int
	sid             int    // session id; 0 where the table does not say (macOS)
	start           uint64 // start time, to tell a process from a later one with its pid
	zombie          bool
}

// sysTree is what a Unix tree needs beyond its pid: the start time of the
// command, to recognise it in a process table snapshot, and the processes
// of its group and session when it exited.
type sysTree struct {
	rootStart uint64
	rootKnown bool
	// atExit holds (pid → start time) the processes in the command's
	// group or session when the command had exited but was not reaped
	// yet, so that its pid could not be reused; guarded by Tree.groupMu.
	atExit map[int]uint64
}

// prepare makes cmd lead a new session, and so a new process group whose
// id is its pid, with no controlling terminal (and, on Linux, die with the
// thread that started it, see platformPrepare). Without a controlling
// terminal a script cannot open /dev/tty, and so cannot push input into
// the user's terminal with TIOCSTI (to answer a prompt of the executor's
// itself, say). A session leader cannot setpgid, so Setpgid is turned off.
func prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Setsid = true
	a.Setpgid, a.Pgid = false, 0
	a.Setctty, a.Foreground = false, false
	platformPrepare(a)
}

// attach records the started command's start time. The command is our
// child and not waited for yet, so its pid cannot have been reused.
func attach(cmd *exec.Cmd) (sysTree, error) {
	p, ok := lookup(cmd.Process.Pid)
	return sysTree{rootStart: p.start, rootKnown: ok}, nil
}

func (s *sysTree) release() {}

// beforeReap waits, where the platform can tell, for the command to exit
// without reaping it, notes what is left in its group and session and
// marks it reaped: its pid, and so its group id, stays taken until the
// reap, so nothing signalled by group id before this can be another tree.
func (s *sysTree) beforeReap(t *Tree) {
	if !waitExited(t.pid) {
		return // Wait marks it reaped after the reap
	}
	left := map[int]uint64{}
	procs, _ := snapshot()
	for _, p := range procs {
		if p.pid != t.pid && (p.pgid == t.pid || p.sid == t.pid) {
			left[p.pid] = p.start
		}
	}
	t.groupMu.Lock()
	s.atExit = left
	t.reaped = true
	t.groupMu.Unlock()
}

// stop ends t: SIGTERM, up to grace for the tree to be gone, SIGKILL (and
// cgroup.kill, where the tree has a cgroup).
func (s *sysTree) stop(t *Tree, grace time.Duration) {
	tr := &tracker{t: t, sys: s, members: map[int]*member{}}
	defer tr.close()
	deadline := time.Now().Add(grace)
	tr.refresh()
	tr.signal(syscall.SIGTERM)
	for !tr.gone() && !t.killRequested() {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		tr.wait(min(left, pollInterval))
		tr.refresh()
		tr.signal(syscall.SIGTERM) // what was forked since the last walk
	}
	giveUp := time.Now().Add(killWait)
	for {
		tr.refresh()
		tr.signal(syscall.SIGKILL)
		if tr.gone() || time.Now().After(giveUp) {
			return
		}
		tr.wait(pollInterval)
	}
}

// member is a process found in the tree, tracked until it is gone.
type member struct {
	pid   int
	start uint64
	h     handle
	dead  bool
	term  bool // SIGTERM sent
}

// handle signals one process and tells when it is gone; on Linux it is a
// pidfd, so a pid reused by an unrelated process is never signalled.
type handle interface {
	signal(sig syscall.Signal) error
	close()
}

// pidHandle signals by pid, checking first that the pid still names the
// process that was found (same start time).
type pidHandle struct {
	pid   int
	start uint64
}

func (h pidHandle) signal(sig syscall.Signal) error {
	if p, ok := lookup(h.pid); !ok || p.start != h.start {
		return syscall.ESRCH
	}
	return syscall.Kill(h.pid, sig)
}

func (pidHandle) close() {}

// tracker is the state of one Stop: the members found so far.
type tracker struct {
	t       *Tree
	sys     *sysTree
	members map[int]*member
	// termSent: SIGTERM went to the whole group already. It goes once (a
	// handler run many times may misbehave); SIGKILL goes every round.
	termSent bool
	// walked is false where no process table is available (group only).
	walked bool
}

// signal sends sig to the group and to every member found by the last
// refresh and not signalled yet. The group gets it by id only while the
// command is not reaped (its pid then still names our group); afterwards
// the members, found by the walk, are signalled one by one.
func (tr *tracker) signal(sig syscall.Signal) {
	if sig != syscall.SIGTERM || !tr.termSent {
		tr.t.groupMu.Lock()
		if !tr.t.reaped {
			syscall.Kill(-tr.t.pid, sig)
		}
		tr.t.groupMu.Unlock()
	}
	if sig == syscall.SIGTERM {
		tr.termSent = true
	} else {
		// Every process in the cgroup, those forked meanwhile included.
		tr.t.cg.Kill()
	}
	for _, m := range tr.members {
		if m.dead || (sig == syscall.SIGTERM && m.term) {
			continue
		}
		if err := m.h.signal(sig); errors.Is(err, syscall.ESRCH) {
			m.dead = true
			m.h.close()
			continue
		}
		if sig == syscall.SIGTERM {
			m.term = true
		}
	}
}

// refresh walks the process table: members are the command itself (until
// it is reaped), every process in its group (once the command is reaped:
// only while the group is still proven ours, see groupOurs), every
// process in its cgroup, wherever its parent, group or session, and every
// descendant of a member, by parent links. New members are tracked,
// vanished or dead ones marked dead.
func (tr *tracker) refresh() {
	procs, ok := snapshot()
	tr.walked = ok
	if !ok {
		return
	}
	kids := map[int][]int{}
	byPid := make(map[int]procInfo, len(procs))
	for _, p := range procs {
		byPid[p.pid] = p
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	for _, m := range tr.members {
		if p, ok := byPid[m.pid]; !ok || p.start != m.start || p.zombie {
			tr.markDead(m)
		}
	}
	var queue []int
	in := map[int]bool{}
	add := func(pid int) {
		if !in[pid] {
			in[pid] = true
			queue = append(queue, pid)
		}
	}
	root := tr.t.pid
	tr.t.groupMu.Lock()
	reaped, atExit := tr.t.reaped, tr.sys.atExit
	tr.t.groupMu.Unlock()
	if p, ok := byPid[root]; ok && !reaped && tr.sys.rootKnown && p.start == tr.sys.rootStart {
		add(root)
	}
	group := !reaped || tr.groupOurs(procs, atExit)
	for _, pid := range tr.t.cg.Pids() {
		if _, ok := byPid[pid]; ok {
			add(pid) // forked after the snapshot: the next refresh
		}
	}
	for _, p := range procs {
		if p.pgid == root && group {
			add(p.pid)
		} else if m := tr.members[p.pid]; m != nil && m.start == p.start {
			add(p.pid)
		}
	}
	for i := 0; i < len(queue); i++ {
		for _, k := range kids[queue[i]] {
			add(k)
		}
	}
	for _, pid := range queue {
		p := byPid[pid]
		if p.zombie {
			continue
		}
		if m := tr.members[pid]; m != nil && m.start == p.start {
			continue
		}
		h, alive := open(p.pid, p.start)
		tr.members[pid] = &member{pid: pid, start: p.start, h: h, dead: !alive}
	}
}

// groupOurs reports whether, after the command was reaped, the processes
// whose group id is the command's pid are still the tree's. The kernel
// does not reuse a pid while a process has it as its group or session id:
// the group is ours as long as one process known to be ours (left when
// the command exited, or tracked since) still holds it. Otherwise the
// group may have emptied and the pid gone to a new, unrelated process
// that leads a group of its own (under serve, another run's tree).
func (tr *tracker) groupOurs(procs []procInfo, atExit map[int]uint64) bool {
	root := tr.t.pid
	for _, p := range procs {
		if p.pgid != root && p.sid != root {
			continue
		}
		if start, ok := atExit[p.pid]; ok && start == p.start {
			return true
		}
		if m := tr.members[p.pid]; m != nil && m.start == p.start {
			return true
		}
	}
	return false
}

func (tr *tracker) markDead(m *member) {
	if !m.dead {
		m.dead = true
		m.h.close()
	}
}

// gone reports whether nothing of the tree was left running at the last
// refresh and nothing live is left in its cgroup (zombies do not count:
// they are dead, waiting for a parent to reap them).
func (tr *tracker) gone() bool {
	if tr.t.cg.Populated() {
		return false
	}
	if !tr.walked {
		// Group only: gone once the command was waited for and nothing
		// answers in its group (signal 0 only probes; a group that took
		// the pid over keeps the loop going until killWait at worst).
		return tr.t.waited.Load() && errors.Is(syscall.Kill(-tr.t.pid, 0), syscall.ESRCH)
	}
	for _, m := range tr.members {
		if !m.dead {
			return false
		}
	}
	return true
}

// wait returns after d, or earlier when a member ends (where the platform
// can tell).
func (tr *tracker) wait(d time.Duration) {
	var live []handle
	for _, m := range tr.members {
		if !m.dead {
			live = append(live, m.h)
		}
	}
	waitAny(live, d)
}

func (tr *tracker) close() {
	for _, m := range tr.members {
		tr.markDead(m)
	}
}
