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
