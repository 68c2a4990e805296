//go:build unix

package native

import (
	"os"
	"os/exec"
	"syscall"
)

// processTree is the child and everything it starts: on Unix, the process
// group the child leads.
type processTree struct {
	pgid int
}

// prepare makes cmd start in a new process group of its own.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	platformAttr(cmd.SysProcAttr)
}

// attach returns the tree of a started child.
func attach(p *os.Process) (*processTree, error) {
	return &processTree{pgid: p.Pid}, nil
}

// terminate asks the whole group to stop (SIGTERM).
func (t *processTree) terminate() { syscall.Kill(-t.pgid, syscall.SIGTERM) }

// kill ends every process left in the group (SIGKILL).
func (t *processTree) kill() { syscall.Kill(-t.pgid, syscall.SIGKILL) }

// release frees what attach took.
func (t *processTree) release() {}

// gracefulTerminate reports whether terminate gives processes a chance to
// clean up (a grace period is worth waiting for).
const gracefulTerminate = true
