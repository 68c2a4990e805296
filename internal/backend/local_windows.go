//go:build windows

package backend

import (
	"os"
)

// createNoWindow keeps the console of the command hidden.
const createNoWindow = 0x08000000

// exitCodeOf reports a finished command's exit code.
func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	return ps.ExitCode()
}
