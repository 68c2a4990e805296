package executor

import (
	"errors"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// InterruptError names the reason of an interrupt: give one as the cause
// of a cancelled context (context.WithCancelCause) and the result's output
// ends with "[execution interrupted — <reason>]".
type InterruptError struct {
	// Reason is shown to the agent; empty means "interrupted".
	Reason string
}

// Error returns "execution interrupted: " and the reason.
func (e *InterruptError) Error() string { return "execution interrupted: " + e.InterruptReason() }

// InterruptReason is the reason shown to the agent (the engines look for
// it on a context's cause).
func (e *InterruptError) InterruptReason() string {
	if e == nil || e.Reason == "" {
		return engine.DefaultInterruptReason
	}
	return e.Reason
}

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
