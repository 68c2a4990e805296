package shared

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout is the run timeout when a request sets none.
const DefaultTimeout = 300 * time.Second

// DefaultInterruptReason is the reason given when an interrupt names none.
const DefaultInterruptReason = "user sent a new message"

// InterruptError is the cancellation cause that marks a run as
// interrupted: cancel the run's context with it (context.WithCancelCause)
// and the result says `[execution interrupted — <Reason>]`.
type InterruptError struct {
	// Reason is shown to the agent; empty means DefaultInterruptReason.
	Reason string
}

func (e *InterruptError) Error() string { return "execution interrupted: " + e.reason() }

func (e *InterruptError) reason() string {
	if e == nil || e.Reason == "" {
		return DefaultInterruptReason
	}
	return e.Reason
}

// BaseInject holds the variables every interpreter gets, in both modes
// (SPEC §4); transports and TZ are added on top.
var BaseInject = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8", "PYTHONUTF8=1"}

// errTimedOut is the cause of a run context whose timeout fired.
var errTimedOut = errors.New("script timed out")

// TimeoutMessage is the exact error of a timed-out run.
func TimeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("Script timed out after %ss and was killed.", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
}

// Execute runs req on eng with the shared limits: it scrubs the
// environment, streams stdout and stderr through their caps, serves tool
// calls through the broker, enforces the timeout, and builds the result.
// The returned error is non-nil only when the script could not be started
// at all (for instance a missing interpreter); the result then says so too.
func Execute(ctx context.Context, eng Engine, req Request) (Result, error) {
	start := time.Now()
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var env []string
	if _, isKernel := eng.(Kernel); !isKernel { // a kernel's env was frozen when it started
		var dropped []string
		env, dropped = ChildEnv(req.Environ, req.Env, req.Inject)
		if line := DroppedHermesLine(dropped); line != "" {
			logf("%s", line)
		}
	}

	stdout := NewCapture(StdoutLimits(req.SpillDir))
	stderr := NewCapture(StderrLimits)
	broker := NewBroker(req.Tools, req.MaxToolCalls, req.Enabled)

	res := Result{Mode: req.Mode, ToolCalls: []ToolCall{}}
	if strings.TrimSpace(req.Code) == "" {
		stdout.Discard()
		stderr.Discard()
		res.Status = StatusError
		res.Error = "The script is empty: send Python code that prints what you need."
		res.Output = res.Error
		res.DurationSeconds = roundMillis(time.Since(start))
		return res, nil
	}

	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	outcome, runErr := eng.Run(runCtx, &Job{
		Code:          req.Code,
		Env:           env,
		Workdir:       req.Workdir,
		Stdout:        stdout,
		Stderr:        stderr,
		Broker:        broker,
		MemoryLimitMB: req.MemoryLimitMB,
		DiskLimitMB:   req.DiskLimitMB,
	})

	out := stdout.Finish()
	errOut := stderr.Finish()
	made, calls := broker.Made()
	res.ToolCallsMade = made
	res.ToolCalls = calls
	res.StdoutTruncated = out.Truncated
	res.StdoutBytesCaptured = out.Captured
	res.StdoutBytesTotal = out.Total
	res.StdoutBytesOmitted = out.Omitted
	if out.SpillPath != "" {
		res.StdoutSpillPath = out.SpillPath
		res.Warning = fmt.Sprintf("Output was truncated: %d of %d bytes omitted. The full output is saved at %s; page through it with read_file(%q, offset=1, limit=500).",
			out.Omitted, out.Total, out.SpillPath, out.SpillPath)
	} else if out.SpillErr != nil {
		res.Warning = "Output was truncated and the full output could not be saved: " + out.SpillErr.Error()
	}

	report := broker.Report()
	var tail string
	var interrupt *InterruptError
	switch {
	case errors.Is(context.Cause(runCtx), errTimedOut) && ctx.Err() == nil:
		res.Status = StatusTimeout
		res.Error = TimeoutMessage(timeout)
		tail = "⏰ " + res.Error
	case ctx.Err() != nil:
		res.Status = StatusInterrupted
		errors.As(context.Cause(ctx), &interrupt)
		res.Error = "Execution interrupted: " + interrupt.reason()
		tail = "[execution interrupted — " + interrupt.reason() + "]"
	case runErr != nil:
		res.Status = StatusError
		res.Error = runErr.Error()
	case report != nil && report.Kind == "exception":
		res.Status = StatusError
		res.Error = strings.TrimRight(report.Traceback, "\n")
		res.Hint = Hint(req.Mode, report)
		res.ExitCode = intPtr(outcome.ExitCode)
	case outcome.Crash != "":
		res.Status = StatusError
		res.Error = outcome.Crash
		res.ExitCode = intPtr(outcome.ExitCode)
	default:
		code := outcome.ExitCode
		res.ExitCode = intPtr(code)
		if code == 0 {
			res.Status = StatusSuccess
		} else {
			res.Status = StatusError
			res.Error = fmt.Sprintf("Script exited with code %d", code)
		}
	}

	output := out.Output
	if res.Status != StatusSuccess && errOut.Total > 0 {
		output += "\n--- stderr ---\n" + errOut.Output
	}
	if res.Status == StatusError && output == "" {
		output = res.Error
	}
	if tail != "" {
		if output != "" && !strings.HasSuffix(output, "\n") {
			output += "\n"
		}
		output += tail
	}
	res.Output = output
	res.DurationSeconds = roundMillis(time.Since(start))
	return res, runErr
}

// ChildEnv is an interpreter's environment in either mode: environ
// scrubbed with opts (SPEC §4), then BaseInject and inject set. dropped is
// ScrubEnv's list of dropped HERMES_* names.
func ChildEnv(environ []string, opts EnvOptions, inject []string) (env, dropped []string) {
	env, dropped = ScrubEnv(environ, opts)
	return MergeEnv(env, append(slices.Clone(BaseInject), inject...)), dropped
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

func roundMillis(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
