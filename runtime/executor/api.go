package executor

import (
	"errors"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/strict"
)

// The types of a result. They are defined with the engines (internal) and
// are the same types here, so an embedder imports only this package and
// config.
type (
	// Result is the JSON object every execution returns: status, what the
	// script printed, the tool calls it made, the limits it hit (see
	// docs/behaviour.md, "Result"). Status is one of config.StatusSuccess,
	// StatusError, StatusTimeout and StatusInterrupted; Mode is
	// config.ModeStrict or config.ModeProject.
	Result = engine.Result
	// ToolCall is one entry of Result.ToolCalls: the tool, how long the call
	// took and whether it succeeded.
	ToolCall = engine.ToolCall
	// KernelInfo is Result.Kernel, set for a call in a session kernel: the
	// kernel's id, whether it was reused, and how many calls it has served.
	KernelInfo = engine.KernelInfo
	// InterruptError names the reason of an interrupt: give one as the cause
	// of a cancelled context (context.WithCancelCause) and the result's
	// output ends with "[execution interrupted — <reason>]".
	InterruptError = engine.InterruptError
)

// Errors of this package, matched with errors.Is. A result accompanies
// each (it says the same to the agent).
var (
	// ErrClosed is returned for calls made after, or ended by, Close.
	ErrClosed = errors.New("the executor is closed")
	// ErrNoSession is the error of a session registration without a session.
	ErrNoSession = errors.New("no session given: name the session the skill's variables are for")
)

// closedError is an engine's "closed" error seen through the executor: it
// keeps the engine's message and matches [ErrClosed].
type closedError struct{ err error }

func (e closedError) Error() string        { return e.err.Error() }
func (e closedError) Unwrap() error        { return e.err }
func (e closedError) Is(target error) bool { return target == ErrClosed }

// asClosed makes an engine's "closed" error match [ErrClosed] when the
// executor itself is closed, so callers need only this package's sentinel.
// A kernel closed by CloseSession, eviction or the idle reaper while the
// executor stays open is not ErrClosed.
func (e *Executor) asClosed(err error) error {
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if !closed {
		return err
	}
	if errors.Is(err, strict.ErrClosed) || errors.Is(err, strict.ErrPoolClosed) || errors.Is(err, engine.ErrKernelClosed) {
		return closedError{err}
	}
	return err
}
