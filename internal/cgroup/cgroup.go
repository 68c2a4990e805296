// Package cgroup puts each process tree the executor starts in a Linux
// control group of its own, so that the whole tree can be killed at once
// (cgroup.kill), also after the executor itself was killed, and so that a
// project-mode run's memory and process count can be capped.
//
// The layout, under the executor's own cgroup X (from /proc/self/cgroup):
//
//	X/hermes-<pid>-<random>/        the executor's parent cgroup P
//	X/hermes-<pid>-<random>/run-<n>  one leaf per tree ([New])
//
// P is made the first time a tree is started; a command starts directly in
// its leaf (clone3 with CLONE_INTO_CGROUP: it never runs outside it). When
// the executor dies, however it dies, a watcher process writes 1 to P's
// cgroup.kill and removes the dirs: a /bin/sh, started once per executor in
// X (outside P) in a session of its own, blocked reading a pipe whose write
// end only the executor holds. P's dir is locked (flock) while its executor
// lives, so a later executor that finds an unlocked hermes-* dir in X (its
// executor and watcher died together) kills what is left in it and removes
// it.
//
// Limits: memory.max and pids.max in the leaf where the cgroup v2 hierarchy
// has the memory and pids controllers for X's children; on a hybrid
// hierarchy (v2 for grouping only, the controllers bound to cgroup v1), the
// v1 memory and pids hierarchies' memory.limit_in_bytes and pids.max, in
// leaves of their own under the executor's v1 cgroups, which the command
// joins from the moment it is forked (see [Group.Start]).
//
// Where cgroups cannot be used (not Linux, cgroupfs not mounted or not
// writable, a kernel before 5.14, a container without a cgroup namespace),
// [New] returns nil and every method of a nil *Group does nothing: the
// caller's process-group and process-table walk are all there is, as
// before. [Current] says which applies and why.
//
// # Security
//
// A cgroup bounds what a run leaves behind by accident (a daemon started
// with setsid, a double fork), also when the executor is killed. It is not
// a boundary against a script that means to escape: a process of the same
// user may move itself to another cgroup it can write to, or kill the
// watcher, and root may do anything.
package cgroup

// Limits caps a group's processes; a zero field means no cap.
type Limits struct {
	// MemoryBytes caps the memory of every process in the group together
	// (memory.max, or memory.limit_in_bytes on cgroup v1): past it, the
	// kernel's OOM killer ends one of them.
	MemoryBytes int64
	// Processes caps how many processes (threads included) the group may
	// hold at once (pids.max): past it, fork and clone fail with EAGAIN.
	Processes int
}

// Events counts what a group's limits did.
type Events struct {
	// OOMKills is how many processes the OOM killer ended because the
	// group was past its memory limit.
	OOMKills int
	// ProcessLimitHits is how many forks failed because the group was at
	// its process limit.
	ProcessLimitHits int
}

// Sub is what happened between before and e (both counts only grow).
func (e Events) Sub(before Events) Events {
	return Events{OOMKills: e.OOMKills - before.OOMKills, ProcessLimitHits: e.ProcessLimitHits - before.ProcessLimitHits}
}

// Status says whether trees are put in cgroups, and how their limits are
// enforced.
type Status struct {
	// Used is true when each tree gets a cgroup of its own.
	Used bool
	// Reason says why cgroups are not used (Used false).
	Reason string
	// Dir is the executor's parent cgroup, P (Used true).
	Dir string
	// Parents are the cgroups the executor's dirs are made in: its own v2
	// cgroup X (P's parent), and its own cgroups of the v1 hierarchies
	// that enforce limits. An executor's dirs there are named
	// hermes-<pid>-<random>.
	Parents []string
	// Memory and Processes say how a memory and a process limit are
	// enforced, or why they are not.
	Memory, Processes Enforcement
}

// Enforcement is how one kind of limit is enforced.
type Enforcement struct {
	// By names the file that enforces the limit and where it is; empty
	// when the limit is not enforced.
	By string
	// Reason says why the limit is not enforced (By empty).
	Reason string
}

// String is e as doctor shows it.
func (e Enforcement) String() string {
	if e.By != "" {
		return "enforced with " + e.By
	}
	return "NOT enforced (" + e.Reason + ")"
}

// String is s in one sentence, as doctor shows it.
func (s Status) String() string {
	if !s.Used {
		return "not used (" + s.Reason + "): a process a run detaches can outlive the executor if the executor is killed"
	}
	return "used: each run's processes in a cgroup of their own under " + s.Dir +
		", killed with cgroup.kill when the run ends and, by a watcher process, when the executor dies"
}

// withoutCgroups is the status where cgroups are not used, for reason.
func withoutCgroups(reason string) Status {
	none := Enforcement{Reason: "no cgroups"}
	return Status{Reason: reason, Memory: none, Processes: none}
}
