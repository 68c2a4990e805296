//go:build !unix && !windows

package hostfuncs

import (
	"os"
	"os/exec"
)

// shellCommand runs command with sh -c.
func shellCommand(command string) *exec.Cmd {
	return exec.Command("sh", "-c", command)
}

// killTree kills the command; this platform has no process groups.
func killTree(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// exitCodeOf reports a finished command's exit code.
func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	return ps.ExitCode()
}
