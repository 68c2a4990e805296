//go:build windows

package backend

import (
	"os"
	"os/exec"
	"syscall"
)

// createNoWindow keeps the console of the command hidden.
const createNoWindow = 0x08000000

// shellCommand runs command with cmd /C. The command line is passed
// verbatim (cmd.exe does its own parsing). Its process tree (process
// group, job object) is proctree's.
func shellCommand(command string) *exec.Cmd {
	comspec := os.Getenv("COMSPEC")
	if comspec == "" {
		comspec = `C:\Windows\System32\cmd.exe`
	}
	cmd := exec.Command(comspec)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CmdLine:       syscall.EscapeArg(comspec) + ` /d /s /c "` + command + `"`,
		CreationFlags: createNoWindow,
	}
	return cmd
}

// exitCodeOf reports a finished command's exit code.
func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	return ps.ExitCode()
}
