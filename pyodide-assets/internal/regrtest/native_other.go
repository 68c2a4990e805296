//go:build !linux

package regrtest

import (
	"context"
	"errors"
	"io"
	"time"
)

// errNotLinux says why the native side cannot run here.
var errNotLinux = errors.New("regrtest: the native reference runs in a Debian trixie chroot (debootstrap, chroot and mounts), which needs root on Linux: pass -native=false to run strict mode alone")

// Chroot is the native chroot, which only Linux has.
type Chroot struct{}

// OpenChroot fails: the native chroot needs Linux.
func OpenChroot(context.Context, func(string, ...any), io.Writer) (*Chroot, error) {
	return nil, errNotLinux
}

// Close does nothing.
func (c *Chroot) Close() {}

// Run fails: the native chroot needs Linux.
func (c *Chroot) Run(context.Context, string, time.Duration) (stdout, stderr string, timedOut bool, err error) {
	return "", "", false, errNotLinux
}
