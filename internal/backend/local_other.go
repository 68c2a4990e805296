//go:build !unix && !windows

package backend

import (
	"os"
	"os/exec"
)

// shellCommand runs command with sh -c.
func shellCommand(command string) *exec.Cmd {
	return exec.Command("sh", "-c", command)
}

// exitCodeOf reports a finished command's exit code.
func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	return ps.ExitCode()
}
