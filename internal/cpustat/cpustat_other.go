//go:build !unix

package cpustat

import "time"

// Process is the CPU time this process has used so far; not known off
// Unix (ok is false).
func Process() (cpu time.Duration, ok bool) { return 0, false }
