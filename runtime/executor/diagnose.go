package executor

import (
	"cmp"
	"context"
	"os"
	"path/filepath"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// GuestMemoryInGoHeap reports that a strict-mode interpreter's memory
// (up to code_execution.memory_limit_mb per running script or kernel)
// is allocated in the Go heap on this platform, which cannot reserve
// address space for it: a program that sets a Go memory limit
// (debug.SetMemoryLimit, GOMEMLIMIT) must leave room for it there. Where
// it is false (Linux, macOS and the other Unix systems) that memory is a
// mapping outside the Go heap, bounded by its own cap.
const GuestMemoryInGoHeap = strict.GuestMemoryInGoHeap

// Diagnosis is what an executor would run scripts with, as
// [Executor.Diagnose] finds it: for a health check, `doctor`, or a log
// line at start-up. Nothing in it is secret.
type Diagnosis struct {
	// Strict is the strict-mode interpreter.
	Strict StrictInterpreter
	// Project is project mode's interpreter on this host.
	Project ProjectInterpreter
	// CacheDir is where compiled interpreters are cached.
	CacheDir string
	// SpillDir is where the full stdout of a truncated run is saved.
	SpillDir string
	// Landlock says whether the local processes a run starts (the
	// project-mode child, terminal commands) are kept from writing the
	// executor's state by Linux's Landlock: "ABI 7, enforced (...)",
	// "off (code_execution.landlock: off)" or "not available: <reason>".
	Landlock string
	// Protected lists what they may not write, when Landlock applies.
	Protected []string
	// Cgroups says whether each run's processes get a cgroup of their own
	// (Linux), and which of project mode's limits hold.
	Cgroups Cgroups
	// SessionStore is the store of suspended session kernels.
	SessionStore SessionStore
}

// SessionStore describes code_execution.session_store.
type SessionStore struct {
	// Spec is the setting ("" when off).
	Spec string
	// Err is why the store is not used (it could not be opened, or its key
	// is malformed); nil when it is, or is off.
	Err error
	// Images and Bytes count the images it holds; UsageErr is why they
	// could not be counted.
	Images   int
	Bytes    int64
	UsageErr error
	// Encrypted: images are encrypted with HERMES_SESSION_STORE_KEY.
	Encrypted bool
}

// Cgroups says how the processes a run starts are held together
// (internal/cgroup): where the executor can make cgroups, each run's
// processes are in one of their own, killed as one when the run ends and
// when the executor dies, and project mode's limits are enforced there.
type Cgroups struct {
	// Used is true when each run's processes get a cgroup.
	Used bool
	// Detail is a sentence: where the cgroups are, or why none is used.
	Detail string
	// Memory and Processes say how code_execution.project_memory_limit_mb
	// and code_execution.process_limit are enforced ("enforced with
	// memory.max (cgroup v2)"), or why not ("NOT enforced (...)").
	Memory, Processes string
}

// StrictInterpreter describes the WASI CPython strict mode runs.
type StrictInterpreter struct {
	// Description says what was built, from what.
	Description string
	// Source is "embedded" or the path given in $HERMES_WASM_INTERPRETER.
	Source string
	// SHA256 and StdlibSHA256 are the pins of the module and of its
	// standard library zip; RecipeSHA256 the recipe they were built from.
	SHA256, StdlibSHA256, RecipeSHA256 string
	// Size and StdlibSize are their sizes in bytes.
	Size, StdlibSize int
	// Err is nil when both files are present and match the pins, else
	// what is wrong and what to do.
	Err error
	// Snapshot is the file of the interpreter snapshot strict runs start
	// from (runtime/internal/strict/snapshot.go), and SnapshotSize its size: 0 when
	// no run has made it yet.
	Snapshot     string
	SnapshotSize int64
}

// ProjectInterpreter describes the python project mode would use now.
type ProjectInterpreter struct {
	// Choice is the interpreter found ($VIRTUAL_ENV, $CONDA_PREFIX, PATH)
	// and the candidates skipped, with why; an empty Path means project
	// mode falls back to the embedded WASI CPython.
	Choice native.Choice
	// Transport is how scripts reach the tools: "unix" or "tcp".
	Transport string
	// Sandbox is code_execution.sandbox: "none" (the host's python) or
	// "wasm" (the sandboxed project mode).
	Sandbox string
	// PackageDirs are the site-packages dirs of Choice's interpreter, which
	// the sandboxed project mode makes importable read-only (pure-Python
	// packages only).
	PackageDirs []string
}

// Diagnose reports the interpreters the executor would run scripts with:
// the strict one (its pins, verified; nothing is compiled) and the host
// python project mode resolves with the executor's environment.
func (e *Executor) Diagnose(ctx context.Context) Diagnosis {
	d := Diagnosis{
		CacheDir: e.cacheDir,
		SpillDir: e.spillDir(),
		Strict: StrictInterpreter{
			Description:  pyodideassets.Description,
			Source:       cmp.Or(os.Getenv(pyodideassets.InterpreterEnv), "embedded"),
			SHA256:       pyodideassets.SHA256,
			StdlibSHA256: pyodideassets.StdlibSHA256,
			RecipeSHA256: pyodideassets.RecipeSHA256,
			Size:         pyodideassets.Size,
			StdlibSize:   pyodideassets.StdlibSize,
		},
		Project: ProjectInterpreter{
			Choice:    native.Resolve(ctx, e.getenv),
			Transport: cmp.Or(e.transport, native.DefaultTransport()),
			Sandbox:   e.cfg.CodeExecution.Sandbox,
		},
	}
	d.SessionStore = SessionStore{Spec: e.cfg.CodeExecution.SessionStore, Err: e.storeErr}
	if g, ok := e.images.(*sessionstore.Guarded); ok && e.durable {
		d.SessionStore.Encrypted = g.Encrypted()
		d.SessionStore.Images, d.SessionStore.Bytes, d.SessionStore.UsageErr = g.Usage()
	}
	if d.Project.Choice.Path != "" {
		d.Project.PackageDirs = native.SiteDirs(ctx, d.Project.Choice.Path, "", filepath.Join(e.cacheDir, native.ProbeCacheName))
	}
	switch st := landlock.Probe(); {
	case e.landlock == nil:
		d.Landlock = "off (code_execution.landlock: off)"
	case st.Enforced:
		d.Landlock = st.String()
		d.Protected = e.landlock.Protect
		if e.landlock.Confine {
			d.Landlock += "; writes confined to the working dir and the temp dir (code_execution.confine_tools_to_workdir)"
		}
	default:
		d.Landlock = st.String()
	}
	cg := cgroup.Current()
	d.Cgroups = Cgroups{Used: cg.Used, Detail: cg.String(), Memory: cg.Memory.String(), Processes: cg.Processes.String()}
	d.Strict.Err = pyodideassets.VerifyLoaded()
	if d.Strict.Err == nil && e.cacheDir != "" {
		d.Strict.Snapshot = strict.SnapshotFile(e.cacheDir, pyodideassets.SHA256, pyodideassets.StdlibSHA256)
		if fi, err := os.Stat(d.Strict.Snapshot); err == nil {
			d.Strict.SnapshotSize = fi.Size()
		}
	}
	return d
}

// spillDir is where the full stdout of truncated runs is saved.
func (e *Executor) spillDir() string { return filepath.Join(e.home, "cache", "exec") }
