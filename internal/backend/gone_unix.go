//go:build unix

package backend

import "syscall"

// processGone reports whether no process pid exists on this host.
func processGone(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
