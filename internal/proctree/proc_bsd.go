//go:build unix && !linux && !darwin

package proctree

import (
	"errors"
	"syscall"
	"time"
)

func platformPrepare(*syscall.SysProcAttr) {}

// snapshot is not available here: a tree is its process group only.
func snapshot() ([]procInfo, bool) { return nil, false }

func lookup(int) (procInfo, bool) { return procInfo{}, false }

// waitExited is not available here: Wait marks the tree reaped only after
// the reap, leaving a short window in which a group signal may reach a
// group that took the pid over.
func waitExited(int) bool { return false }

func open(pid int, start uint64) (handle, bool) { return pidHandle{pid, start}, false }

func waitAny(_ []handle, d time.Duration) { time.Sleep(d) }

// EnableSubreaper returns errors.ErrUnsupported on this system.
func EnableSubreaper() error { return errors.ErrUnsupported }

func sweep() {}
