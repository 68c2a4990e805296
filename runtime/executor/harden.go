package executor

import (
	"errors"

	"github.com/hermes-agent/hermes-wasm-exec/internal/hardening"
	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

// Hardening selects the process-wide protections [HardenProcess] applies.
// The CLI applies all of them; an embedder opts in, since each changes the
// whole process it is embedded in. SECURITY.md describes the threat each
// one closes.
type Hardening struct {
	// HideSecrets re-executes the program (same pid, same arguments) with
	// only the variables a script may see in its initial environment, and
	// keeps the others (provider keys, tokens, every non-allow-listed
	// variable) in the Go environment only, so that a script or terminal
	// command cannot read them from /proc/<pid>/environ, even as root.
	// Linux and macOS; nothing on Windows.
	//
	// Risk: the process starts over from main. Call HardenProcess first thing
	// in main, before any goroutine, file or listener exists; anything that
	// reads the environment through C (getenv in cgo code) no longer sees
	// the hidden variables, and a process listing shows the environment
	// without them.
	HideSecrets bool
	// NonDumpable marks the process non-dumpable (Linux PR_SET_DUMPABLE 0):
	// processes of the same non-root user, scripts and terminal commands
	// included, can no longer read its /proc/<pid>/{environ,fd,mem} or
	// ptrace it. Risk: no core dumps, and debuggers of the same user
	// cannot attach.
	NonDumpable bool
	// ReapOrphans makes the process a child subreaper (Linux
	// PR_SET_CHILD_SUBREAPER): a process a run detaches (setsid, double
	// fork, a daemon started by terminal) is re-parented to this process
	// instead of init and killed, at the latest when its run ends (under
	// concurrent runs, possibly when another run's process tree stops).
	// Without it, a process that detaches and whose parent has exited
	// survives the run. Nothing on other systems.
	//
	// Risk: the executor tells its own children from adopted orphans by a
	// registry of the processes it started. Any other child process of the
	// embedding program (started with os/exec outside the executor) is
	// taken for an orphan: it is killed, and its exit status is reaped
	// before its own Wait sees it. Turn it on only in a program that starts
	// no other child processes.
	ReapOrphans bool
}

// HardenProcess applies h to the current process. With HideSecrets it may
// not return the first time it is called: the program is re-executed and
// calls it again from main. It returns one error per protection that
// could not be applied; the others are applied regardless.
func HardenProcess(h Hardening) []error {
	var errs []error
	if h.HideSecrets {
		if err := hardening.HideSecrets(); err != nil {
			errs = append(errs, err)
		}
	}
	if h.NonDumpable {
		if err := hardening.SetNonDumpable(); err != nil {
			errs = append(errs, err)
		}
	}
	// Where the system has no subreaper there is nothing to turn on: the
	// job object or the process group is all there is.
	if h.ReapOrphans {
		if err := proctree.EnableSubreaper(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			errs = append(errs, err)
		}
	}
	return errs
}
