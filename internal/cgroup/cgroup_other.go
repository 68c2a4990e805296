//go:build !linux

package cgroup

import (
	"os/exec"
	"runtime"
	"time"
)

// Group is a tree's cgroup; there are none on this system, so a *Group is
// always nil and each method does nothing.
type Group struct{}

// New returns nil: there are no cgroups on this system.
func New(Limits) *Group { return nil }

// Current reports that cgroups are not used here.
func Current() Status { return withoutCgroups("not Linux") }

// IsWatcher reports false: there is no watcher here.
func IsWatcher(int) bool { return false }

// MountPoints returns nil: there are no cgroups on this system.
func MountPoints() []string { return nil }

// Shutdown does nothing here.
func Shutdown() {}

// Start starts cmd.
func (*Group) Start(cmd *exec.Cmd) error { return cmd.Start() }

// Prepare does nothing where there are no cgroups.
func (*Group) Prepare(*exec.Cmd) {}

// Join does nothing where there are no cgroups.
func (*Group) Join() {}

// Joiner returns nil: there is nothing to join here.
func (*Group) Joiner() func() { return nil }

// Pids returns nil.
func (*Group) Pids() []int { return nil }

// Populated returns false.
func (*Group) Populated() bool { return false }

// Kill does nothing.
func (*Group) Kill() {}

// Events returns no events.
func (*Group) Events() Events { return Events{} }

// Remove does nothing.
func (*Group) Remove() {}

// Settle reports true: there are no cgroups here.
func Settle(time.Duration) bool { return true }

// OnThreadOfItsOwn runs f on a new goroutine locked to an OS thread that
// ends when f returns.
func OnThreadOfItsOwn(f func()) {
	go func() {
		runtime.LockOSThread()
		f()
	}()
}
