package hardening

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const reexecSupported = true

// reexec hands data over in a memfd (no size limit, never on disk) and
// executes /proc/self/exe, the same binary even if its path changed since.
func reexec(data []byte, env []string) error {
	fd, err := unix.MemfdCreate("hermes-hidden-env", 0) // no MFD_CLOEXEC: it must survive exec
	if err != nil {
		return fmt.Errorf("hardening: memfd_create: %w", err)
	}
	if err := writeAll(fd, data); err != nil {
		unix.Close(fd)
		return err
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		unix.Close(fd)
		return fmt.Errorf("hardening: %w", err)
	}
	env = append(env, fmt.Sprintf("%s=%d", fdEnv, fd))
	err = unix.Exec("/proc/self/exe", os.Args, env)
	unix.Close(fd)
	return fmt.Errorf("hardening: re-executing %s: %w", os.Args[0], err)
}

// SetNonDumpable marks the process non-dumpable (PR_SET_DUMPABLE 0): its
// /proc/<pid> files then belong to root, and processes of the same user,
// the executor's own children among them, can neither read its environ,
// fds or memory nor ptrace it. Root still can. Children are not affected:
// exec resets the flag.
func SetNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("hardening: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
