//go:build unix

package backend

import (
	"os"
	"os/exec"
	"syscall"
)

// shellCommand runs command with sh -c. Its process tree (group, kill) is
// proctree's.
func shellCommand(command string) *exec.Cmd {
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		if p, err := exec.LookPath("sh"); err == nil {
			sh = p
		}
	}
	return exec.Command(sh, "-c", command)
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
