//go:build !unix

package testenv

import "time"

// ProcessCPU is the CPU time this process has used so far; not known off
// Unix (ok is false).
func ProcessCPU() (cpu time.Duration, ok bool) { return 0, false }
