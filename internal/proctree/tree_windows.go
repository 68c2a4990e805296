package proctree

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sysTree is a job object the command is assigned to as it starts; its
// children inherit the job, and closing the job's last handle kills every
// process in it (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE), so they die with the
// host too. The command is created suspended (CREATE_SUSPENDED) and its
// thread resumed only once it is in the job, so nothing it runs, and no
// process it starts, is ever outside the job. (Before, it ran from the
// start: a process it started at once could escape the job, and a check
// of its own job could find none.)
type sysTree struct {
	job windows.Handle
}

// prepare starts cmd in a new process group (no console Ctrl-C from ours),
// suspended until attach has put it in its job, keeping the creation flags
// and command line already set.
func prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED
}

// resume resumes the threads of process pid (one, for a process created
// suspended).
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("listing the child's threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("opening the child's thread: %w", err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resuming the child: %w", err)
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("resuming the child: no thread of process %d found", pid)
	}
	return nil
}

// attach puts the started command in a new job object that kills every
// process in it when the job is closed.
func attach(cmd *exec.Cmd) (sysTree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return sysTree{}, fmt.Errorf("creating a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return sysTree{}, fmt.Errorf("configuring the job object: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.SYNCHRONIZE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return sysTree{}, fmt.Errorf("opening the child process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		if ev, werr := windows.WaitForSingleObject(h, 0); werr == nil && ev == windows.WAIT_OBJECT_0 {
			// It has already exited (a command started without prepare,
			// which runs at once, can end before it is put in its job; a
			// terminated process cannot be assigned): there is no job,
			// and Wait reports how it ended.
			return sysTree{}, nil
		}
		return sysTree{}, fmt.Errorf("assigning the child to its job object: %w", err)
	}
	if err := resume(uint32(cmd.Process.Pid)); err != nil {
		windows.CloseHandle(job) // kills it (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE)
		return sysTree{}, err
	}
	return sysTree{job: job}, nil
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime            int64
	ThisPeriodTotalUserTime                   int64
	ThisPeriodTotalKernelTime                 int64
	TotalPageFaultCount, TotalProcesses       uint32
	ActiveProcesses, TotalTerminatedProcesses uint32
}

// stop terminates the whole job at once: console programs in another
// process group get no SIGTERM equivalent, so there is no graceful step.
// It returns once no process is left in the job, or after killWait.
func (s *sysTree) stop(_ *Tree, _ time.Duration) {
	if s.job == 0 {
		return
	}
	windows.TerminateJobObject(s.job, 1)
	giveUp := time.Now().Add(killWait)
	for time.Now().Before(giveUp) {
		var a jobAccounting
		if err := windows.QueryInformationJobObject(s.job, windows.JobObjectBasicAccountingInformation,
			uintptr(unsafe.Pointer(&a)), uint32(unsafe.Sizeof(a)), nil); err != nil || a.ActiveProcesses == 0 {
			return
		}
		time.Sleep(pollInterval)
	}
}

// beforeReap has nothing to do: the job, not a process group id, names
// the tree.
func (*sysTree) beforeReap(*Tree) {}

// release closes the job (killing anything still in it).
func (s *sysTree) release() {
	if s.job != 0 {
		windows.CloseHandle(s.job)
		s.job = 0
	}
}

// EnableSubreaper returns errors.ErrUnsupported: on Windows the job object
// already holds every process a tree starts, detached or not.
func EnableSubreaper() error { return errors.ErrUnsupported }

func sweep() {}
