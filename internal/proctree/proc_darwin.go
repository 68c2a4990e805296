package proctree

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sZomb is the p_stat of a zombie in the BSD kernel.
const sZomb = 5

func platformPrepare(*syscall.SysProcAttr) {}

// snapshot reads the process table with sysctl kern.proc.all.
func snapshot() ([]procInfo, bool) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, false
	}
	procs := make([]procInfo, 0, len(kps))
	for i := range kps {
		procs = append(procs, info(&kps[i]))
	}
	return procs, true
}

// lookup reads one process with sysctl kern.proc.pid.
func lookup(pid int) (procInfo, bool) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp == nil || int(kp.Proc.P_pid) != pid {
		return procInfo{}, false
	}
	return info(kp), true
}

func info(kp *unix.KinfoProc) procInfo {
	st := kp.Proc.P_starttime
	return procInfo{
		pid:    int(kp.Proc.P_pid),
		ppid:   int(kp.Eproc.Ppid),
		pgid:   int(kp.Eproc.Pgid),
		start:  uint64(st.Sec)*1e6 + uint64(st.Usec),
		zombie: kp.Proc.P_stat == sZomb,
	}
}

// waitExited blocks until our child pid has exited, without reaping it
// (kqueue NOTE_EXIT): the caller may rely on the pid staying taken until
// the reap. A zombie cannot be watched (ESRCH): it has exited. The wait
// wakes up every second to check, so that an exit it missed does not
// block it for good.
func waitExited(pid int) bool {
	kq, err := unix.Kqueue()
	if err != nil {
		return false
	}
	defer unix.Close(kq)
	var change unix.Kevent_t
	unix.SetKevent(&change, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{change}, nil, nil); err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	events := make([]unix.Kevent_t, 1)
	tick := unix.NsecToTimespec(int64(time.Second))
	for {
		n, err := unix.Kevent(kq, nil, events, &tick)
		if err == nil && n > 0 {
			return true
		}
		if err != nil && err != unix.EINTR {
			return false
		}
		if p, ok := lookup(pid); !ok || p.zombie {
			return true
		}
	}
}

// open returns a handle by pid (checked against the start time before each
// signal: there are no pidfds here).
func open(pid int, start uint64) (handle, bool) {
	p, ok := lookup(pid)
	return pidHandle{pid, start}, ok && p.start == start && !p.zombie
}

// waitAny sleeps d: there is nothing to wait on per process here.
func waitAny(_ []handle, d time.Duration) { time.Sleep(d) }

// EnableSubreaper returns errors.ErrUnsupported: macOS has no child
// subreaper, so a process that detaches (setsid and a double fork) and
// whose parent exits leaves the tree for good.
func EnableSubreaper() error { return errors.ErrUnsupported }

func sweep() {}
