//go:build !linux

package landlock

import "runtime"

// Probe reports what Landlock does on this host: nothing, off Linux.
func Probe() Status {
	return Status{Reason: "Landlock is a Linux feature; this is " + runtime.GOOS}
}

// Launch runs start as it is: there is no Landlock off Linux.
func (p *Policy) Launch(start func() error) (release func(), err error) {
	return func() {}, start()
}

// Explain says nothing: nothing is refused off Linux.
func (p *Policy) Explain(path, workdir string) string { return "" }
