// Package engine is the contract both execution engines implement ([Engine],
// [Kernel], [Job], [Outcome]) and the layer they share: the request and
// result types, environment scrubbing ([ChildEnv]), the streaming
// stdout/stderr limits, the tool-call broker with its budget, the generated
// hermes_tools module (its Python sources are in python/), and the code that
// turns an engine's outcome into a result. Nothing security-relevant is
// written twice: strict mode (runtime/internal/strict) and project mode (native) both
// run through [Execute]. It imports config and internal/wire (not the
// tools: their names are config's); its importers are runtime/executor, the
// engines (runtime/internal/strict, internal/nativeengine), internal/approval (the interrupt type),
// internal/hardening (ScrubEnv, to split the executor's own environment) and
// the CLI's mcp front end (PyTruthy, for reset).
package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"
)

// Request is one execution as the executor hands it to [Execute].
type Request struct {
	// Code is the Python source of the script.
	Code string
	// Mode is config.ModeStrict or config.ModeProject; it is echoed in the result.
	Mode string
	// Embedded is set when a project-mode run uses the embedded
	// interpreter (the sandboxed project mode, or no python on the host):
	// the result says "sandbox": "wasm", and a failure's hint speaks of
	// that interpreter.
	Embedded bool
	// Workdir is the absolute session working directory the tools act on.
	Workdir string
	// Timeout is the wall-clock limit of the whole run. Zero means 300 s.
	Timeout time.Duration
	// MaxToolCalls is the tool-call budget of the run; negative means 0.
	MaxToolCalls int
	// Env is the interpreter's final environment, built once by the caller
	// with [ChildEnv]; a kernel ignores it (its env was frozen when it
	// started).
	Env []string
	// SpillDir is where a truncated stdout is saved in full.
	SpillDir string
	// MemoryLimitMB caps the guest's memory in strict mode.
	MemoryLimitMB int
	// DiskLimitMB caps what a strict-mode guest stores in its dir; zero or
	// less means no cap.
	DiskLimitMB int
	// ProcessLimits cap a project-mode run's processes.
	ProcessLimits ProcessLimits
	// Tools runs one tool call; the broker wraps it with the budget,
	// whitelist and log.
	Tools ToolFunc
	// Enabled is the enabled tools, intersected with the seven (see
	// ToolSet); nil means all. The broker enforces it; the interpreter
	// learns it from HERMES_RPC_TOOLS in Env (see [ChildEnv]).
	Enabled []string
	// Logger receives the run's log events (nil discards them): "stdout
	// spill failed" when a truncated stdout could not be saved in SpillDir.
	Logger *slog.Logger
	// Output, when not nil, receives the script's stdout and stderr while
	// it runs (live output): in order per stream, from one goroutine at a
	// time, coalesced to at most one call per [LiveInterval] per stream
	// and [LiveChunkMax] bytes per call, and never after [Execute]
	// returns. The result is the same with or without it.
	Output OutputFunc
}

// ToolFunc runs one tool with its JSON arguments and returns the tool's
// result object.
type ToolFunc func(ctx context.Context, tool string, args json.RawMessage) map[string]any

// Job is what an [Engine] runs: everything is prepared by the shared layer,
// so an engine only decides where the interpreter runs.
type Job struct {
	// Code is the script source.
	Code string
	// Env is the final environment of the interpreter: scrubbed, plus the
	// injected variables. Engines add their transport variables.
	Env []string
	// Workdir is the session working dir.
	Workdir string
	// Stdout and Stderr receive the interpreter's output through the
	// streaming limits. Engines must not buffer it elsewhere, except in
	// chunks they hand over when the interpreter ends (or a kernel's cell
	// does) and, when FlushAfter is set, within FlushAfter.
	Stdout, Stderr io.Writer
	// FlushAfter, when positive, is the longest an engine may hold output
	// before handing it to Stdout or Stderr: someone follows it live
	// (Request.Output). Zero: until a chunk fills or the run ends.
	FlushAfter time.Duration
	// Broker serves the script's tool calls and receives its exit report.
	Broker *Broker
	// MemoryLimitMB caps the interpreter's memory where the engine can.
	MemoryLimitMB int
	// DiskLimitMB caps the bytes the interpreter stores in its private dir
	// where the engine can (strict mode); zero or less means no cap.
	DiskLimitMB int
	// ProcessLimits cap the interpreter's processes where the engine can
	// (project mode, with cgroups).
	ProcessLimits ProcessLimits
}

// ProcessLimits cap a project-mode run's processes together, the
// interpreter and every process it starts, where the system can (Linux,
// in the run's cgroup: internal/cgroup). A zero field means no cap.
type ProcessLimits struct {
	// MemoryMB caps their memory, in MiB
	// (code_execution.project_memory_limit_mb).
	MemoryMB int
	// Processes caps how many there may be at once, threads included
	// (code_execution.process_limit).
	Processes int
}

// Outcome is what an engine reports after the interpreter ended.
type Outcome struct {
	// ExitCode is the interpreter's exit status.
	ExitCode int
	// Crash describes an abnormal end that is not an exit status, such as a
	// wasm trap; empty otherwise.
	Crash string
	// OutOfMemory is set when the OOM killer ended a process of the run
	// because the run was past ProcessLimits.MemoryMB.
	OutOfMemory bool
	// ProcessLimitHit is set when a process of the run could not start
	// because the run was at ProcessLimits.Processes.
	ProcessLimitHit bool
	// Left, when not nil, lists the files the script left in a private dir
	// that the engine discards (strict mode): after a one-shot run, or, in a
	// kernel, those the call created or changed, which go when the kernel
	// ends.
	Left *LeftFiles
	// Refused are the file-safety refusals of the sandboxed project mode's
	// file system in this run or call, the first few distinct messages (the
	// file tools'), and RefusedTotal how many accesses were refused in all:
	// what the script's own file access was denied.
	Refused      []string
	RefusedTotal int
	// Missing are paths (relative to the private dir, slash-separated)
	// a strict-mode script looked for there and did not find; Execute
	// reports those the working dir has.
	Missing []string
}

// LeftFiles are the files a strict-mode script created or changed in its
// private dir, which is discarded (the engine's own staged files are not
// among them).
type LeftFiles struct {
	// Files are the first MaxLeftFiles of them (in lexical order of their
	// paths, a directory's files after its name), each relative to the dir.
	Files []DiscardedFile
	// More is how many more there are.
	More int
	// Kernel: the dir is a session kernel's, discarded when the kernel
	// ends (not after this call).
	Kernel bool
}

// MaxLeftFiles is how many discarded files a result lists at most.
const MaxLeftFiles = 20

// DiscardedFile is one entry of a result's discarded_files.
type DiscardedFile struct {
	// Path is the file's path relative to the script's dir (its cwd),
	// with forward slashes.
	Path string `json:"path"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
}

// Engine runs jobs in one mode. Run blocks until the interpreter has ended
// and every resource it used is released; ctx carries the timeout and
// interrupts, and an engine must stop the interpreter promptly when ctx is
// done.
type Engine interface {
	Run(ctx context.Context, job *Job) (Outcome, error)
}

// ToolCall is one entry of a result's tool_calls log.
type ToolCall struct {
	Tool       string  `json:"tool"`
	DurationMS float64 `json:"duration_ms"`
	OK         bool    `json:"ok"`
}

// Result is the JSON object every execution returns (docs/behaviour.md §6).
type Result struct {
	Status          string  `json:"status"`
	Output          string  `json:"output"`
	ToolCallsMade   int     `json:"tool_calls_made"`
	DurationSeconds float64 `json:"duration_seconds"`
	ExitCode        *int    `json:"exit_code"`
	Mode            string  `json:"mode"`
	// Sandbox is "wasm" when a project-mode run ran in the embedded WASI
	// interpreter (the sandboxed project mode, or no python on the host);
	// absent otherwise (strict mode is always that sandbox).
	Sandbox             string     `json:"sandbox,omitempty"`
	StdoutTruncated     bool       `json:"stdout_truncated"`
	StdoutBytesCaptured int64      `json:"stdout_bytes_captured"`
	StdoutBytesTotal    int64      `json:"stdout_bytes_total"`
	StdoutBytesOmitted  int64      `json:"stdout_bytes_omitted"`
	Error               string     `json:"error,omitempty"`
	Hint                string     `json:"hint,omitempty"`
	Warning             string     `json:"warning,omitempty"`
	StdoutSpillPath     string     `json:"stdout_spill_path,omitempty"`
	ToolCalls           []ToolCall `json:"tool_calls"`
	// DiscardedFiles are files a strict-mode script left in its private
	// dir, which is discarded (up to MaxLeftFiles of them; see LeftFiles),
	// and DiscardedFilesOmitted how many more there are.
	DiscardedFiles        []DiscardedFile `json:"discarded_files,omitempty"`
	DiscardedFilesOmitted int             `json:"discarded_files_omitted,omitempty"`
	// Blocked is true when the script was not approved and never ran.
	Blocked bool `json:"blocked,omitempty"`
	// Kernel describes the session kernel the call ran in; nil for a
	// one-shot run.
	Kernel *KernelInfo `json:"kernel,omitempty"`
}

// KernelInfo is a result's kernel object (docs/behaviour.md §6, §7).
type KernelInfo struct {
	// Reused is true when the call ran in a kernel that already existed.
	Reused bool `json:"reused"`
	// ExecutionCount is how many calls the kernel has run, this one
	// included.
	ExecutionCount int `json:"execution_count"`
	// StateReset is true when the call asked for reset and got a fresh
	// kernel.
	StateReset bool `json:"state_reset"`
	// Ended is true when the kernel is gone after this call (sys.exit,
	// timeout, interrupt, crash): the next call starts a fresh one.
	Ended bool `json:"ended"`
	// Note explains what happened to the kernel's state, when it matters.
	Note string `json:"note,omitempty"`
	// WaitedSeconds is how long the call waited for a kernel because
	// every one of max_session_kernels ran a call (absent when it did
	// not wait). The wait does not count against the script's timeout,
	// which it is bounded by.
	WaitedSeconds float64 `json:"waited_seconds,omitempty"`
	// Resumed is true when the kernel was resumed from the session store
	// before the call ran; ResumeSeconds is how long that took.
	Resumed       bool    `json:"resumed,omitempty"`
	ResumeSeconds float64 `json:"resume_seconds,omitempty"`
}
