// Package proctree runs a command in a process tree of its own and ends
// the whole tree: the command, everything it starts and, on Linux with the
// subreaper on, everything that tried to leave the tree.
//
// One implementation serves every process the executor starts (the
// project-mode python child, the terminal tool's shell, the interpreter
// probe):
//
//   - Start puts the command in a new session, which makes it lead a new
//     process group and have no controlling terminal (Unix; Pdeathsig
//     SIGKILL on Linux, so a crashed host takes the child with it), or in
//     a new process group plus a job object that kills every process in it
//     when it is closed (Windows).
//   - Stop sends SIGTERM to the group and to every descendant found by
//     walking the process table (so children that moved to another group
//     or session while their parent is alive are signalled too), waits up
//     to the grace period for them to be gone, then sends SIGKILL to
//     whatever is left, walking again until nothing is (forks racing the
//     kill). The group is signalled by its id only until the command is
//     reaped: after that the id may name another tree's group, so its
//     members are signalled one by one, and only while one process known
//     to be the tree's still holds the id. On Windows the job is
//     terminated at once.
//   - StartWith's Options.Launch lets the caller fork the command in a
//     context of its own: internal/landlock forks it from a restricted OS
//     thread, kept until the command is reaped (see Options).
//   - On Linux, where the executor can make cgroups (internal/cgroup), each
//     tree also runs in a cgroup of its own, which the command is cloned
//     straight into: Stop signals every process in it too, ends with
//     cgroup.kill, and the cgroup's limits (StartWith) cap the tree's
//     memory and process count. A watcher process kills the cgroups when
//     the executor dies, so that no detached process outlives it.
//   - EnableSubreaper (Linux) makes this process the child subreaper of
//     every tree: processes that detach (setsid, double fork, nohup ... &)
//     are re-parented to it instead of init when their parent exits, and
//     are killed and reaped as soon as they are found. See EnableSubreaper
//     for what that means for an embedding program.
package proctree

import (
	"context"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
)

// DefaultGrace is the time between SIGTERM and SIGKILL when a tree is
// stopped (docs/behaviour.md §5).
const DefaultGrace = 5 * time.Second

// pollInterval bounds how long Stop waits before walking the process table
// again for processes forked since the last walk.
const pollInterval = 20 * time.Millisecond

// killWait bounds the SIGKILL phase: a process the kernel does not let go
// of (stuck in uninterruptible sleep, or not ours to signal) is given up
// on rather than waited for forever.
const killWait = 10 * time.Second

var (
	// startMu is held for reading while a command starts and its pid is
	// registered, and for writing by a sweep, so that a sweep never sees
	// a child of ours that is started but not registered yet.
	startMu sync.RWMutex
	// regMu guards children and groups.
	regMu sync.Mutex
	// children counts the direct children started through Start and not
	// yet waited for, by pid: a sweep must never kill or reap them (their
	// Wait belongs to os/exec).
	children = map[int]int{}
	// groups counts the trees not yet stopped, by process group: adopted
	// processes still in one of them are ended by that tree's Stop, with
	// its grace period, not by a sweep.
	groups = map[int]int{}
)

// Tree is a started command and every process it starts. Its methods are
// safe for concurrent use.
type Tree struct {
	cmd *exec.Cmd
	pid int
	sys sysTree
	// cg is the tree's cgroup; nil (a valid *cgroup.Group) where there is
	// none.
	cg *cgroup.Group

	// waited is set once Wait has reaped the command.
	waited atomic.Bool

	// groupMu orders signals to the command's process group against the
	// reaping of the command. Once the command is reaped its pid, which
	// is the group's id, may name a new, unrelated group (a later Start
	// under serve): reaped is set, under groupMu, before the reap where
	// the platform can tell that the command exited (Linux, macOS), else
	// right after it, and no group signal is sent once it is set.
	groupMu sync.Mutex
	reaped  bool

	mu       sync.Mutex
	stopping bool
	stopped  chan struct{} // closed when a Stop has ended the tree
	killNow  chan struct{} // closed by Kill: skip what is left of the grace
	killOnce sync.Once
	endOnce  sync.Once
	relOnce  sync.Once

	// launched is Options.Launch's release (nil without one): called once
	// the command is reaped, or when the tree is released.
	launched     func()
	launchedOnce sync.Once
}

// Options are what StartWith adds to Start.
type Options struct {
	// Limits caps the memory and the number of processes of the whole
	// tree, where the system can (Linux, in the tree's cgroup:
	// cgroup.Current says which limits hold); zero fields mean no cap.
	Limits cgroup.Limits
	// Launch, when set, is how the command is forked: on one OS thread,
	// locked to its goroutine and never handed back to the runtime, it
	// must call before (when not nil: the join of the tree's cgroup v1
	// leaves, which moves the forking thread) and then start (which runs
	// cmd.Start), and return start's error; it may restrict the thread
	// between the two (internal/landlock does). The release it returns is
	// called once the command has been reaped (or the tree released), not
	// before: on Linux the command's parent-death signal fires when the
	// thread that forked it ends.
	Launch func(before func(), start func() error) (release func(), err error)
}

// Start starts cmd in a process tree of its own (see the package doc).
// cmd must not be started yet; its SysProcAttr, if set, is kept and
// extended, except that on Unix the command always gets a new session
// (Setsid) with no controlling terminal, so Setpgid, Setctty and
// Foreground are turned off. Call Wait (not cmd.Wait) to wait for the
// command, Stop or Kill to end the tree, and Release once both are done.
func Start(cmd *exec.Cmd) (*Tree, error) { return StartWith(cmd, Options{}) }

// StartWith is Start with opts.
func StartWith(cmd *exec.Cmd, opts Options) (*Tree, error) {
	prepare(cmd)
	cg := cgroup.New(opts.Limits)
	startMu.RLock()
	var launched func()
	var err error
	if opts.Launch != nil {
		cg.Prepare(cmd)
		launched, err = opts.Launch(cg.Joiner(), cmd.Start)
	} else {
		err = cg.Start(cmd)
	}
	if err != nil {
		startMu.RUnlock()
		cg.Remove()
		return nil, err
	}
	pid := cmd.Process.Pid
	regMu.Lock()
	children[pid]++
	groups[pid]++ // the command leads its own group: pgid == pid
	regMu.Unlock()
	startMu.RUnlock()
	t := &Tree{cmd: cmd, pid: pid, cg: cg, stopped: make(chan struct{}), killNow: make(chan struct{}), launched: launched}
	sys, err := attach(cmd)
	if err != nil {
		cmd.Process.Kill()
		t.Wait()
		t.endGroup()
		t.cg.Kill()
		t.cg.Remove()
		return nil, err
	}
	t.sys = sys
	return t, nil
}

// Run starts cmd in a tree of its own, waits for it and ends the tree, as
// cmd.Run would. When ctx is done first, the tree is killed and ctx's
// error returned.
func Run(ctx context.Context, cmd *exec.Cmd) error { return RunWith(ctx, cmd, Options{}) }

// RunWith is Run with opts.
func RunWith(ctx context.Context, cmd *exec.Cmd, opts Options) error {
	t, err := StartWith(cmd, opts)
	if err != nil {
		return err
	}
	defer t.Release()
	waited := make(chan error, 1)
	go func() { waited <- t.Wait() }()
	select {
	case err = <-waited:
		return err
	case <-ctx.Done():
		t.Kill()
		<-waited
		return ctx.Err()
	}
}

// Pid is the command's process id.
func (t *Tree) Pid() int { return t.pid }

// LimitEvents is what the tree's limits (StartWith) did so far: processes
// the OOM killer ended, forks refused at the process limit. It reads the
// tree's cgroup until Release, then returns what it read there last.
func (t *Tree) LimitEvents() cgroup.Events { return t.cg.Events() }

// Wait waits for the command to exit (as cmd.Wait, which must not be
// called as well) and lets the registry forget its pid.
func (t *Tree) Wait() error {
	t.sys.beforeReap(t)
	err := t.cmd.Wait()
	t.endLaunch()
	t.markReaped()
	t.waited.Store(true)
	regMu.Lock()
	if children[t.pid]--; children[t.pid] <= 0 {
		delete(children, t.pid)
	}
	regMu.Unlock()
	return err
}

// Stop ends the tree: SIGTERM to every process in it, up to grace for
// them to exit, then SIGKILL to what is left (on Windows the job is
// terminated at once). It returns once nothing of the tree is left or
// the kernel does not let go of it. Concurrent and later calls wait for
// the first one; a Kill during a Stop cuts the grace short. With the
// subreaper on, adopted orphans are swept afterwards.
func (t *Tree) Stop(grace time.Duration) {
	t.mu.Lock()
	if t.stopping {
		t.mu.Unlock()
		<-t.stopped
		return
	}
	t.stopping = true
	t.mu.Unlock()
	t.sys.stop(t, grace)
	t.endGroup()
	sweep()
	close(t.stopped)
}

// Kill ends the tree at once (SIGKILL, no grace).
func (t *Tree) Kill() {
	t.killOnce.Do(func() { close(t.killNow) })
	t.Stop(0)
}

// Release frees what the tree holds (the job object on Windows, the
// cgroup on Linux). A tree that was not stopped yet is killed first, so
// nothing outlives it.
func (t *Tree) Release() {
	t.relOnce.Do(func() {
		t.Kill()
		t.endLaunch()
		t.sys.release()
		t.cg.Remove()
	})
}

// endLaunch calls the release of Options.Launch, once.
func (t *Tree) endLaunch() {
	if t.launched != nil {
		t.launchedOnce.Do(t.launched)
	}
}

// markReaped records that the command is reaped or about to be: its
// process group may no longer be signalled by its id.
func (t *Tree) markReaped() {
	t.groupMu.Lock()
	t.reaped = true
	t.groupMu.Unlock()
}

// killRequested reports whether Kill asked to skip the rest of the grace.
func (t *Tree) killRequested() bool {
	select {
	case <-t.killNow:
		return true
	default:
		return false
	}
}

// endGroup stops protecting the tree's process group from the sweep.
func (t *Tree) endGroup() {
	t.endOnce.Do(func() {
		regMu.Lock()
		if groups[t.pid]--; groups[t.pid] <= 0 {
			delete(groups, t.pid)
		}
		regMu.Unlock()
	})
}

// registered reports whether pid is a child started through Start and not
// waited for yet, and whether pgid is the group of a tree not stopped yet.
func registered(pid, pgid int) (child, group bool) {
	regMu.Lock()
	defer regMu.Unlock()
	return children[pid] > 0, groups[pgid] > 0
}
