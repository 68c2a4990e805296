package native

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// processTree is the child and everything it starts: on Windows, a job
// object the child is assigned to right after it starts (its own children
// inherit the job). Closing the job's last handle kills them all too.
type processTree struct {
	job windows.Handle
}

// prepare starts cmd in a new process group (no console Ctrl-C from ours).
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// attach puts a started child in a new job object that kills every
// process in it when the job is closed.
func attach(p *os.Process) (*processTree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("creating a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("configuring the job object: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("opening the child process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("assigning the child to its job object: %w", err)
	}
	return &processTree{job: job}, nil
}

// terminate ends the whole job: Windows has no SIGTERM for console
// programs in another process group, so there is no graceful step.
func (t *processTree) terminate() { windows.TerminateJobObject(t.job, 1) }

// kill ends every process left in the job.
func (t *processTree) kill() { windows.TerminateJobObject(t.job, 1) }

// release closes the job (killing anything still in it).
func (t *processTree) release() { windows.CloseHandle(t.job) }

const gracefulTerminate = false
