package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// defaultTimeout is the run timeout when a request sets none.
const defaultTimeout = config.DefaultTimeout * time.Second

// DefaultInterruptReason is the reason given when an interrupt names none.
const DefaultInterruptReason = "user sent a new message"

// Interrupt is a cancellation cause that marks a run as interrupted and
// names why (executor.InterruptError is one): the result's output ends with
// the reason. Another cause, or none, gives DefaultInterruptReason.
type Interrupt interface {
	error
	InterruptReason() string
}

// InterruptError is the Interrupt of the layers below the executor (and
// their tests); embedders use executor.InterruptError.
type InterruptError struct {
	// Reason is shown to the agent; empty means DefaultInterruptReason.
	Reason string
}

// Error returns "execution interrupted: " and the reason.
func (e *InterruptError) Error() string { return "execution interrupted: " + e.InterruptReason() }

// InterruptReason implements Interrupt.
func (e *InterruptError) InterruptReason() string {
	if e == nil || e.Reason == "" {
		return DefaultInterruptReason
	}
	return e.Reason
}

// NoCodeMessage is Hermes's error for a call whose code is missing, empty or
// only whitespace (executor.NoCodeMessage is the same text).
const NoCodeMessage = "No code provided. execute_code requires a non-empty 'code' parameter containing Python source. To run shell commands, use terminal(command=...) instead."

// baseInject holds the variables every interpreter gets, in both modes
// (docs/behaviour.md §4); transports and TZ are added on top.
var baseInject = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8", "PYTHONUTF8=1"}

// BaseInject returns the variables every interpreter gets (a copy).
func BaseInject() []string { return slices.Clone(baseInject) }

// errTimedOut is the cause of a run context whose timeout fired.
var errTimedOut = errors.New("script timed out")

// The texts below are Hermes's (tools/code_execution_tool.py and
// tools/code_kernel.py of NousResearch/hermes-agent), so that an agent
// sees what it would see there.

// timeoutMessage is the exact error of a timed-out run:
// "Script timed out after {N}s and was killed.". The output ends with it
// too, after "⏰ " and a blank line (see Execute).
func timeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("Script timed out after %ss and was killed.", Seconds(timeout))
}

// KernelTimeoutMessage is the exact error of a call whose session kernel
// was killed by the timeout: "Cell timed out after {N}s; the session
// kernel was killed and its state was lost. The next execute_code call
// starts a fresh kernel.".
func KernelTimeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("Cell timed out after %ss; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.", Seconds(timeout))
}

// KernelInterruptedMessage is the exact error of a call whose session
// kernel was killed by an interrupt. (The reason is in the output's
// InterruptMarker.)
const KernelInterruptedMessage = "Interrupted; the session kernel was killed and its state was lost."

// interruptedMessage is the error of an interrupted one-shot run (Hermes
// gives none there; the result says why all the same).
func interruptedMessage(reason string) string {
	return "Execution interrupted: " + cmp.Or(reason, DefaultInterruptReason)
}

// InterruptMarker is the line an interrupted run's output ends with:
// "[execution interrupted — {reason}]".
func InterruptMarker(reason string) string {
	return "[execution interrupted — " + cmp.Or(reason, DefaultInterruptReason) + "]"
}

// Seconds renders d in seconds as the messages show them ("{N}s"), without
// a fraction when it is whole.
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// Execute runs req on eng with the shared limits: it gives the interpreter
// req.Env (built by the caller with [ChildEnv]), streams stdout and stderr
// through their caps, serves tool
// calls through the broker, enforces the timeout, and builds the result.
// The returned error is non-nil only when the script could not be started
// at all (for instance a missing interpreter); the result then says so too.
func Execute(ctx context.Context, eng Engine, req Request) (Result, error) {
	start := time.Now()
	res := Result{Mode: req.Mode, ToolCalls: []ToolCall{}}
	if req.Embedded && req.Mode == config.ModeProject {
		res.Sandbox = config.SandboxWasm
	}
	if strings.TrimSpace(req.Code) == "" {
		res.Status = config.StatusError
		res.Error = NoCodeMessage
		res.Output = res.Error
		res.DurationSeconds = RoundMillis(time.Since(start))
		return res, nil
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	env := req.Env
	kernel, isKernel := eng.(Kernel)
	if isKernel { // a kernel's env was frozen when it started
		env = nil
	}

	broker := NewBroker(req.Tools, req.MaxToolCalls, req.Enabled)
	stdout := newCapture(StdoutLimits(req.SpillDir))
	stderr := newCapture(stderrLimits)
	job := &Job{
		Code:          req.Code,
		Env:           env,
		Workdir:       req.Workdir,
		Stdout:        stdout,
		Stderr:        stderr,
		Broker:        broker,
		MemoryLimitMB: req.MemoryLimitMB,
		DiskLimitMB:   req.DiskLimitMB,
		ProcessLimits: req.ProcessLimits,
	}
	var live *liveOutput
	if req.Output != nil {
		// The captures see the output first: the result is the same with
		// or without someone following it.
		live = newLiveOutput(req.Output, LiveInterval, LiveChunkMax)
		job.Stdout = teeWriter{stdout, liveWriter{live, 0}}
		job.Stderr = teeWriter{stderr, liveWriter{live, 1}}
		job.FlushAfter = LiveInterval
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	outcome, runErr := eng.Run(runCtx, job)
	if live != nil {
		// The engine has handed over all the run's output: the last of it
		// goes out now, and nothing after Execute returns.
		live.close()
	}

	out := stdout.Finish()
	errOut := stderr.Finish()
	res.ToolCallsMade, res.ToolCalls = broker.Made()
	res.StdoutTruncated = out.Truncated
	res.StdoutBytesCaptured = out.Captured
	res.StdoutBytesTotal = out.Total
	res.StdoutBytesOmitted = out.Omitted
	if out.Truncated {
		res.StdoutSpillPath = out.SpillPath
		res.Warning = truncatedWarning(out.SpillPath)
		if out.SpillErr != nil && req.SpillDir != "" && req.Logger != nil {
			req.Logger.Warn("stdout spill failed", "dir", req.SpillDir, "error", out.SpillErr.Error())
		}
	}

	// A kernel that is gone after a timeout or an interrupt was killed by
	// it (one whose call never started is left as it was).
	killed := isKernel && !kernel.Alive()
	report := broker.Report()
	reason := ""    // why it was interrupted
	raised := false // ended by an uncaught exception
	switch {
	case errors.Is(context.Cause(runCtx), errTimedOut) && ctx.Err() == nil:
		res.Status = config.StatusTimeout
		res.ExitCode = intPtr(-1)
		res.Error = timeoutMessage(timeout)
		if killed {
			res.Error = KernelTimeoutMessage(timeout)
		}
	case ctx.Err() != nil:
		reason = interruptReason(ctx)
		res.Status = config.StatusInterrupted
		res.ExitCode = intPtr(-1)
		res.Error = interruptedMessage(reason)
		if killed {
			res.Error = KernelInterruptedMessage
		}
	case runErr != nil:
		res.Status = config.StatusError
		res.Error = runErr.Error()
	case report != nil && report.Kind == "exception":
		res.Status = config.StatusError
		res.Error = strings.TrimRight(report.Traceback, "\n")
		raised = true
		res.ExitCode = intPtr(outcome.ExitCode)
	case outcome.Crash != "":
		res.Status = config.StatusError
		res.Error = outcome.Crash
		res.ExitCode = intPtr(outcome.ExitCode)
	default:
		code := outcome.ExitCode
		res.ExitCode = intPtr(code)
		if code == 0 {
			res.Status = config.StatusSuccess
		} else {
			res.Status = config.StatusError
			res.Error = fmt.Sprintf("Script exited with code %d", code)
		}
	}
	res.Output = resultOutput(out, errOut, res.Status, res.Error, reason)
	explain(&res, req, outcome, report, raised, broker)
	res.DurationSeconds = RoundMillis(time.Since(start))
	return res, runErr
}

// interruptReason is the reason of ctx's interrupt: that of an Interrupt
// cause, else DefaultInterruptReason.
func interruptReason(ctx context.Context) string {
	var interrupt Interrupt
	if errors.As(context.Cause(ctx), &interrupt) {
		if r := interrupt.InterruptReason(); r != "" {
			return r
		}
	}
	return DefaultInterruptReason
}

// ChildEnv is an interpreter's environment in either mode, one-shot or
// kernel: environ scrubbed with opts (docs/behaviour.md §4), then
// baseInject, inject and the tool set (HERMES_RPC_TOOLS for enabled, when
// it is not all seven) set.
func ChildEnv(environ []string, opts EnvOptions, inject, enabled []string) []string {
	env, _ := ScrubEnv(environ, opts)
	set := append(slices.Clone(baseInject), inject...)
	if tools := ToolsInject(enabled); tools != "" {
		set = append(set, tools)
	}
	return MergeEnv(env, set)
}

// MergeEnv returns env with each KEY=VALUE of inject set, replacing an
// earlier value of the same name.
func MergeEnv(env, inject []string) []string {
	out := make([]string, 0, len(env)+len(inject))
	names := make(map[string]bool, len(inject))
	for _, kv := range inject {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, inject...)
}

func intPtr(n int) *int { return &n }

// RoundMillis is d in seconds to the millisecond, as the result's
// durations are.
func RoundMillis(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
