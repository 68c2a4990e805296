package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
)

// platformPrepare makes the kernel kill the command when the thread that
// started it dies (the host crashing, in practice: Go does not end its
// threads while the process runs), so a crashed host does not leave a
// script running.
func platformPrepare(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// snapshot reads every process from /proc.
func snapshot() ([]procInfo, bool) {
	f, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	procs := make([]procInfo, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := lookup(pid); ok {
			procs = append(procs, p)
		}
	}
	return procs, true
}

// lookup reads one process from /proc/<pid>/stat.
func lookup(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// The command name (field 2) is in parentheses and may hold anything,
	// spaces and parentheses included: the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): ppid is 4, pgrp 5, session 6, starttime 22.
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	sid, err3 := strconv.Atoi(string(f[3]))
	start, err4 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return procInfo{}, false
	}
	state := f[0][0]
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, sid: sid, start: start, zombie: state == 'Z' || state == 'X'}, true
}

// waitExited blocks until our child pid has exited, without reaping it
// (WNOWAIT): the caller may rely on the pid staying taken until the reap.
func waitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil
	}
}

// pidfdHandle signals through a pidfd, which names one process for good:
// a pid reused after it exits is never signalled by mistake.
type pidfdHandle struct{ fd int }

func (h pidfdHandle) signal(sig syscall.Signal) error {
	return unix.PidfdSendSignal(h.fd, sig, nil, 0)
}

func (h pidfdHandle) close() { unix.Close(h.fd) }

// open returns a handle on the process pid that started at start, and
// whether it still runs. A pidfd is used where the kernel has them (5.3+)
// and descriptors are left; otherwise the pid, checked before each signal.
func open(pid int, start uint64) (handle, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return pidHandle{pid, start}, false
	}
	if err != nil {
		return pidHandle{pid, start}, true
	}
	// The pid was read before the pidfd was opened: check that it still
	// names the same process, now that the pidfd pins it.
	if p, ok := lookup(pid); !ok || p.start != start {
		unix.Close(fd)
		return pidHandle{pid, start}, false
	}
	return pidfdHandle{fd}, true
}

// waitAny returns when one of hs ends (its pidfd becomes readable), or
// after d.
func waitAny(hs []handle, d time.Duration) {
	fds := make([]unix.PollFd, 0, len(hs))
	for _, h := range hs {
		if p, ok := h.(pidfdHandle); ok {
			fds = append(fds, unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN})
		}
	}
	if len(fds) == 0 {
		time.Sleep(d)
		return
	}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		_, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue // a signal (SIGCHLD) came in: keep waiting
		}
		if err != nil {
			time.Sleep(left)
		}
		return
	}
}

var (
	// subreaper is set once EnableSubreaper made this process a child
	// subreaper: only then are our unregistered children adopted orphans.
	subreaper atomic.Bool
	// sigchldMu guards sigchld and sigchldDone: the SIGCHLD subscription
	// of the sweeper goroutine, and a channel closed when it has ended.
	sigchldMu   sync.Mutex
	sigchld     chan os.Signal
	sigchldDone chan struct{}
)

// EnableSubreaper makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process of any tree whose parent exits is
// re-parented to this process instead of init, whatever it did to detach
// (setsid, a new process group, a double fork, nohup ... &). Such adopted
// orphans are killed (SIGKILL) and reaped when any tree is stopped and on
// every SIGCHLD, so they neither outlive their run nor pile up as zombies;
// an adopted process still in the group of a tree that is not stopped yet
// is left to that tree's Stop and its grace period.
//
// An orphan is told from a child of ours by a registry of the commands
// started with Start: any other child of this process counts as an adopted
// orphan. In a program embedding the executor, enable it only if every
// child process the program starts goes through Start (or the program
// starts none): another child would be killed, and its exit status reaped
// before its own Wait could see it. Under one executor serving many runs,
// a detached process dies when any tree ends, which may be before its own
// run ends.
//
// It returns errors.ErrUnsupported where there are no subreapers (every
// system but Linux).
func EnableSubreaper() error {
	return setSubreaper(true)
}

// setSubreaper turns the subreaper on or off (off: for tests).
func setSubreaper(on bool) error {
	v := uintptr(0)
	if on {
		v = 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, v, 0, 0, 0); err != nil {
		return fmt.Errorf("making this process a child subreaper: %w", err)
	}
	subreaper.Store(on)
	sigchldMu.Lock()
	defer sigchldMu.Unlock()
	switch {
	case on && sigchld == nil:
		sigchld, sigchldDone = make(chan os.Signal, 1), make(chan struct{})
		signal.Notify(sigchld, syscall.SIGCHLD)
		go sweepOnSIGCHLD(sigchld, sigchldDone)
	case !on && sigchld != nil:
		// After signal.Stop nothing sends on the channel: closing it
		// ends the goroutine, which is waited for (it may be sweeping).
		signal.Stop(sigchld)
		close(sigchld)
		<-sigchldDone
		sigchld, sigchldDone = nil, nil
	}
	return nil
}

// sweepOnSIGCHLD sweeps on every SIGCHLD until ch is closed, then closes
// done.
func sweepOnSIGCHLD(ch <-chan os.Signal, done chan<- struct{}) {
	defer close(done)
	for range ch {
		sweep()
	}
}

// sweep kills the adopted orphans and reaps the dead ones. It never waits
// for any pid but an unregistered child's (never wait4(-1), which would
// steal exit statuses from os/exec).
func sweep() {
	if !subreaper.Load() {
		return
	}
	startMu.Lock()
	defer startMu.Unlock()
	procs, ok := snapshot()
	if !ok {
		return
	}
	me := os.Getpid()
	for _, p := range procs {
		if p.ppid != me {
			continue
		}
		child, group := registered(p.pid, p.pgid)
		switch {
		case child || cgroup.IsWatcher(p.pid):
			// os/exec waits for it (the cgroup watcher: internal/cgroup
			// does, when the watcher ends).
		case p.zombie:
			var ws unix.WaitStatus
			unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
		case group:
			// Still in a live tree's group: that tree's Stop ends it.
		default:
			// Our child, so its pid cannot be reused before we reap it:
			// a plain kill is safe. Its SIGCHLD brings the reaping sweep.
			unix.Kill(p.pid, unix.SIGKILL)
		}
	}
}
