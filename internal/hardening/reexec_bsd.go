//go:build unix && !linux

package hardening

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const reexecSupported = true

// reexec hands data over in a pipe whose buffer holds it (the write end is
// non-blocking, so an environment too large for the buffer is an error,
// not a hang) and executes os.Executable().
func reexec(data []byte, env []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("hardening: %w", err)
	}
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return fmt.Errorf("hardening: pipe: %w", err)
	}
	r, w := p[0], p[1]
	unix.CloseOnExec(w)
	if err := unix.SetNonblock(w, true); err != nil {
		unix.Close(r)
		unix.Close(w)
		return fmt.Errorf("hardening: %w", err)
	}
	err = writeAll(w, data)
	unix.Close(w)
	if err != nil {
		unix.Close(r)
		return fmt.Errorf("%w: the %d bytes of variables to hide are more than a pipe holds; start the program with fewer or shorter non-allow-listed variables", err, len(data))
	}
	if _, err := unix.FcntlInt(uintptr(r), unix.F_SETFD, 0); err != nil {
		unix.Close(r)
		return fmt.Errorf("hardening: %w", err)
	}
	env = append(env, fmt.Sprintf("%s=%d", fdEnv, r))
	err = unix.Exec(exe, os.Args, env)
	unix.Close(r)
	return fmt.Errorf("hardening: re-executing %s: %w", exe, err)
}

// SetNonDumpable does nothing here: only Linux has PR_SET_DUMPABLE. On
// macOS another user's processes cannot read ours anyway, and the same
// user's can (see SECURITY.md).
func SetNonDumpable() error { return nil }
