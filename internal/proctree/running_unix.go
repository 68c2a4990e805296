//go:build unix

package proctree

import (
	"errors"
	"syscall"
)

// Running reports whether a process with id pid exists (one of another
// user's too). A zombie counts as running until it is reaped.
func Running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
