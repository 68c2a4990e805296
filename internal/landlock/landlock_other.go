//go:build !linux

package landlock

import "runtime"

// Probe reports what Landlock does on this host: nothing, off Linux.
func Probe() Status {
	return Status{Reason: "Landlock is a Linux feature; this is " + runtime.GOOS}
}

// Launch runs before (when not nil) and start as they are: there is no
// Landlock off Linux, and before (a cgroup join) does nothing there.
func (p *Policy) Launch(before func(), start func() error) (release func(), err error) {
	if before != nil {
		before()
	}
	return func() {}, start()
}

// Explain says nothing: nothing is refused off Linux.
func (p *Policy) Explain(path, workdir string) string { return "" }
