//go:build unix

package hostfuncs

import (
	"os"
	"os/exec"
	"syscall"
)

// shellCommand runs command with sh -c in a new process group, so that the
// whole group can be killed at once.
func shellCommand(command string) *exec.Cmd {
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		if p, err := exec.LookPath("sh"); err == nil {
			sh = p
		}
	}
	cmd := exec.Command(sh, "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// killTree sends SIGKILL to the command's whole process group. It is a
// no-op once every member is gone.
func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// exitCodeOf reports a finished command's exit code, 128+N when a signal N
// ended it (as shells do).
func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
