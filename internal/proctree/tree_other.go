//go:build !unix && !windows

package proctree

import (
	"errors"
	"os/exec"
	"time"
)

// sysTree is empty here: there are no process groups, so a tree is its
// command only.
type sysTree struct{}

func prepare(*exec.Cmd) {}

func attach(*exec.Cmd) (sysTree, error) { return sysTree{}, nil }

// stop kills the command (no grace: there is no SIGTERM here).
func (*sysTree) stop(t *Tree, _ time.Duration) {
	if !t.waited.Load() {
		t.cmd.Process.Kill()
	}
}

func (*sysTree) beforeReap(*Tree) {}

func (*sysTree) release() {}

// EnableSubreaper returns errors.ErrUnsupported on this system.
func EnableSubreaper() error { return errors.ErrUnsupported }

func sweep() {}
