// Package landlock keeps the processes a run starts (the project-mode
// child, terminal commands) from writing the executor's own state, with
// Linux's Landlock: the compiled-code cache and the interpreter snapshot,
// the configuration, token and credential stores, other profiles. It also
// scopes their signals and abstract Unix sockets to what they started
// themselves, so that a script cannot signal the executor or another
// session's processes.
//
// Landlock restricts the calling thread and what it creates, for good; the
// executor itself must stay unrestricted. So a [Policy]'s Launch runs the
// fork on a thread of its own: a goroutine locked to an OS thread (never
// the main thread) restricts that thread, forks the command from it, and
// keeps it parked until the command has been reaped, because the kernel
// sends a child's parent-death signal (proctree's Pdeathsig) when the
// thread that forked it exits. Then the goroutine returns still locked, and
// the Go runtime ends the thread instead of reusing it.
//
// # Security
//
// Landlock is an allow-list of where writes may happen, and a right given
// on a directory covers its whole subtree: "everywhere but the executor's
// state" is built by walking from each allowed root down to every
// protected path and granting every entry beside that path, never the
// directories on it (see plan). So no process of a run can create, remove
// or rename an entry directly in a directory that holds protected state
// (the Hermes home, and the user's home above it, say), though it can
// write the files already there and everything in the directories beside.
// Reads are not restricted: project mode is not a sandbox for reads. What
// the rules grant is fixed when a process starts: an entry created later
// directly in such a directory is not writable by processes started
// before. Bind mounts and hard links made beforehand reach a protected
// file by another path, which the rules do not cover; as root, a process
// can still write the disk device, load modules or ask a service to act
// for it. This is defence in depth for project mode (SECURITY.md).
package landlock

import (
	"fmt"
	"os"
)

// Policy is what the processes of a run may write. A nil *Policy restricts
// nothing.
type Policy struct {
	// Protect lists the executor's state: files and directories (absolute,
	// existing or not) nothing the run starts may write, create, remove or
	// rename, nor create when they are missing.
	Protect []string
	// Confine limits writes to Writable (and a few device files, such as
	// /dev/null) instead of everywhere but Protect
	// (code_execution.confine_tools_to_workdir). Protect still holds inside
	// Writable.
	Confine bool
	// Writable lists, under Confine, the directories the run may write:
	// its working dir and the temp dirs. See [Policy.ForWorkdir].
	Writable []string
}

// ForWorkdir returns p for a run in workdir: under Confine, the working
// dir and the system temp dir are the writable roots. A nil p stays nil.
func (p *Policy) ForWorkdir(workdir string) *Policy {
	if p == nil {
		return nil
	}
	q := *p
	q.Writable = nil
	if p.Confine {
		q.Writable = append(q.Writable, workdir, os.TempDir())
	}
	return &q
}

// Status is what Landlock does for the processes of a run on this host.
type Status struct {
	// ABI is the kernel's Landlock ABI version, 0 when it has none.
	ABI int
	// Enforced is true when [Policy.Launch] restricts what it starts.
	Enforced bool
	// Signals and Sockets are true when the processes' signals and their
	// connections to abstract Unix sockets are scoped to their own domain
	// (ABI 6).
	Signals, Sockets bool
	// Reason says why Landlock is not enforced, or what it lacks.
	Reason string
}

// String is the status as doctor shows it: "ABI 7, enforced (...)" or
// "not available: <reason>".
func (s Status) String() string {
	if !s.Enforced {
		return "not available: " + s.Reason
	}
	scope := "signals and abstract Unix sockets scoped to the run's own processes"
	switch {
	case !s.Signals && !s.Sockets:
		scope = "signals not scoped (" + s.Reason + ")"
	case !s.Signals:
		scope = "abstract Unix sockets scoped, signals not (" + s.Reason + ")"
	}
	return fmt.Sprintf("ABI %d, enforced (no writes to the executor's state; %s)", s.ABI, scope)
}
