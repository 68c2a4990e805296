package hardening

// reexecSupported is false: Windows has no exec that keeps the process,
// and a process's environment block is readable by whoever may open the
// process (PROCESS_VM_READ), which the same user may. SECURITY.md says so.
const reexecSupported = false

func reexec([]byte, []string) error { return nil }

// SetNonDumpable does nothing on Windows.
func SetNonDumpable() error { return nil }
