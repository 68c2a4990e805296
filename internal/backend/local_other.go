//go:build !unix && !windows

package backend

import (
	"os"
	"os/exec"
)

// LocalShell is the dialect of the shell that runs a terminal() command
// on this host: "sh" (POSIX sh) off Windows.
func LocalShell() string { return ShellSh }

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
