package executor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// TestAsClosed: once the executor is closed, every engine's "closed" error
// reaches the caller matching ErrClosed (and still itself, with its
// message), so callers need only this package's sentinel; before, a
// kernel's "closed" (CloseSession racing a call) is not ErrClosed; other
// errors pass through unchanged.
func TestAsClosed(t *testing.T) {
	e := New(Options{HermesHome: t.TempDir()})
	require.NotErrorIs(t, e.asClosed(engine.ErrKernelClosed), ErrClosed, "the executor is open")
	require.NoError(t, e.Close(context.Background()))
	require.ErrorIs(t, e.Warm(context.Background()), ErrClosed)
	asClosed := e.asClosed
	for _, inner := range []error{strict.ErrClosed, strict.ErrPoolClosed, engine.ErrKernelClosed, fmt.Errorf("starting: %w", strict.ErrClosed)} {
		err := asClosed(inner)
		require.ErrorIs(t, err, ErrClosed, inner.Error())
		require.ErrorIs(t, err, inner)
		require.Equal(t, inner.Error(), err.Error())
	}
	require.Same(t, ErrClosed, asClosed(ErrClosed))
	other := errors.New("working dir: no such file")
	require.Same(t, other, asClosed(other))
	require.NoError(t, asClosed(nil))
}
