package executor

import "github.com/hermes-agent/hermes-wasm-exec/internal/engine"

// Result is the JSON object every execution returns (docs/behaviour.md §6):
// its JSON is the `run` command's output and the result of `serve`'s
// execute and of the MCP tool.
type Result struct {
	// Status is config.StatusSuccess, StatusError, StatusTimeout or
	// StatusInterrupted.
	Status string `json:"status"`
	// Output is what the script printed (stdout; stderr follows
	// "--- stderr ---" when the call failed), truncated to the inline
	// limit, with the timeout or interrupt line; when a failed call printed
	// nothing, the error.
	Output string `json:"output"`
	// ToolCallsMade counts the tool calls that ran (refused ones not).
	ToolCallsMade int `json:"tool_calls_made"`
	// DurationSeconds is the call's wall time, to the millisecond.
	DurationSeconds float64 `json:"duration_seconds"`
	// ExitCode is the script's exit status; -1 after a timeout, interrupt
	// or crash; nil when the script never ran.
	ExitCode *int `json:"exit_code"`
	// Mode is config.ModeStrict or config.ModeProject, the mode in effect.
	Mode string `json:"mode"`
	// Sandbox is config.SandboxWasm when a project-mode call ran in the
	// embedded interpreter (the sandboxed project mode, or no usable
	// python); empty otherwise.
	Sandbox string `json:"sandbox,omitempty"`
	// StdoutTruncated, StdoutBytesCaptured, StdoutBytesTotal and
	// StdoutBytesOmitted describe the stdout capture: whether the output
	// was cut to its head and tail, and the bytes kept, printed and left
	// out.
	StdoutTruncated     bool  `json:"stdout_truncated"`
	StdoutBytesCaptured int64 `json:"stdout_bytes_captured"`
	StdoutBytesTotal    int64 `json:"stdout_bytes_total"`
	StdoutBytesOmitted  int64 `json:"stdout_bytes_omitted"`
	// Error is set when Status is not success: the traceback of an
	// uncaught exception, "Script exited with code N", or the timeout,
	// interrupt, blocked or start-up message.
	Error string `json:"error,omitempty"`
	// Hint is one line on how to fix a common failure.
	Hint string `json:"hint,omitempty"`
	// Warning says what the agent should know of a call that may have
	// succeeded: truncated output (and where the full text is), files a
	// strict script left that are discarded, file accesses the sandbox
	// refused, the interpreter project mode chose.
	Warning string `json:"warning,omitempty"`
	// StdoutSpillPath is the file holding the full stdout of a truncated
	// call, when it could be saved.
	StdoutSpillPath string `json:"stdout_spill_path,omitempty"`
	// ToolCalls logs each tool call that ran, in the order they finished.
	ToolCalls []ToolCall `json:"tool_calls"`
	// DiscardedFiles are the files a strict-mode script left in its
	// private dir, which is discarded (at most 20), and
	// DiscardedFilesOmitted how many more there are.
	DiscardedFiles        []DiscardedFile `json:"discarded_files,omitempty"`
	DiscardedFilesOmitted int             `json:"discarded_files_omitted,omitempty"`
	// Blocked is true when the script was not approved and never ran.
	Blocked bool `json:"blocked,omitempty"`
	// Kernel describes the session kernel a session call ran in; nil for a
	// one-shot run.
	Kernel *KernelInfo `json:"kernel,omitempty"`
}

// ToolCall is one entry of Result.ToolCalls.
type ToolCall struct {
	// Tool is the tool's name (one of config.ToolNames).
	Tool string `json:"tool"`
	// DurationMS is how long the call took, in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// OK is false when the tool's result was an error.
	OK bool `json:"ok"`
}

// DiscardedFile is one entry of Result.DiscardedFiles.
type DiscardedFile struct {
	// Path is relative to the script's private dir (its cwd), with "/".
	Path string `json:"path"`
	// Size is in bytes.
	Size int64 `json:"size"`
}

// KernelInfo is Result.Kernel (docs/behaviour.md §7).
type KernelInfo struct {
	// Reused is true when the call ran in a kernel that already existed.
	Reused bool `json:"reused"`
	// ExecutionCount is how many calls the kernel has run, this one
	// included.
	ExecutionCount int `json:"execution_count"`
	// StateReset is true when the call asked for a reset and got a fresh
	// kernel.
	StateReset bool `json:"state_reset"`
	// Ended is true when the kernel is gone after this call (sys.exit,
	// timeout, interrupt, crash): the next call starts a fresh one.
	Ended bool `json:"ended"`
	// Note explains what happened to the kernel's state, when it matters.
	Note string `json:"note,omitempty"`
	// WaitedSeconds is how long the call waited for a kernel because every
	// one of max_session_kernels ran a call (absent when it did not wait).
	WaitedSeconds float64 `json:"waited_seconds,omitempty"`
	// Resumed is true when the call's kernel was resumed from the session
	// store (code_execution.session_store) before it ran: its state is
	// the suspended kernel's. ResumeSeconds is how long that took.
	Resumed       bool    `json:"resumed,omitempty"`
	ResumeSeconds float64 `json:"resume_seconds,omitempty"`
}

// fromEngine is the engine layer's result as this package's.
func fromEngine(r engine.Result) Result {
	out := Result{
		Status: r.Status, Output: r.Output, ToolCallsMade: r.ToolCallsMade, DurationSeconds: r.DurationSeconds,
		ExitCode: r.ExitCode, Mode: r.Mode, Sandbox: r.Sandbox,
		StdoutTruncated: r.StdoutTruncated, StdoutBytesCaptured: r.StdoutBytesCaptured,
		StdoutBytesTotal: r.StdoutBytesTotal, StdoutBytesOmitted: r.StdoutBytesOmitted,
		Error: r.Error, Hint: r.Hint, Warning: r.Warning, StdoutSpillPath: r.StdoutSpillPath,
		ToolCalls: make([]ToolCall, len(r.ToolCalls)), DiscardedFilesOmitted: r.DiscardedFilesOmitted, Blocked: r.Blocked,
	}
	for i, c := range r.ToolCalls {
		out.ToolCalls[i] = ToolCall(c)
	}
	for _, f := range r.DiscardedFiles {
		out.DiscardedFiles = append(out.DiscardedFiles, DiscardedFile(f))
	}
	if r.Kernel != nil {
		k := KernelInfo(*r.Kernel)
		out.Kernel = &k
	}
	return out
}
