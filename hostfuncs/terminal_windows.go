//go:build windows

package hostfuncs

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// createNoWindow keeps the console of the command hidden.
const createNoWindow = 0x08000000

// shellCommand runs command with cmd /C in a new process group. The command
// line is passed verbatim (cmd.exe does its own parsing).
func shellCommand(command string) *exec.Cmd {
	comspec := os.Getenv("COMSPEC")
	if comspec == "" {
		comspec = `C:\Windows\System32\cmd.exe`
	}
	cmd := exec.Command(comspec)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CmdLine:       syscall.EscapeArg(comspec) + ` /d /s /c "` + command + `"`,
		CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | createNoWindow,
	}
	return cmd
}

// killTree kills the command and its descendants (taskkill /T), falling
// back to killing the command alone.
func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	kill := exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid))
	kill.SysProcAttr = &syscall.SysProcAttr{CreationFlags: createNoWindow}
	if kill.Run() != nil {
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
