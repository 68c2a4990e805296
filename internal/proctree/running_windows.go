package proctree

import "golang.org/x/sys/windows"

// stillActive is GetExitCodeProcess's code of a process still running.
const stillActive = 259

// Running reports whether a process with id pid exists and has not
// exited. A process this user may not open counts as running.
func Running(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return err == windows.ERROR_ACCESS_DENIED
	}
	defer windows.CloseHandle(h)
	var code uint32
	if windows.GetExitCodeProcess(h, &code) != nil {
		return true
	}
	return code == stillActive
}
