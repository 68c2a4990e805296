//go:build unix

package cpustat

import (
	"syscall"
	"time"
)

// Process is the CPU time (user and system) this process has used so
// far, for benchmarks (and `hermes-wasm-exec bench`) that report CPU per
// operation: on a machine shared with other work it varies much less than
// the wall time. ok is false where it is not known.
func Process() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
