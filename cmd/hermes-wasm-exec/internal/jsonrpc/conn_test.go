package jsonrpc

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// brokenPipe is a client's stdout whose reader is gone.
type brokenPipe struct{ writes atomic.Int32 }

func (b *brokenPipe) Write([]byte) (int, error) {
	b.writes.Add(1)
	return 0, syscall.EPIPE
}

// TestServeWriteFailure: a failed write marks the client gone (serve
// then shuts down), and nothing more is written to it.
func TestServeWriteFailure(t *testing.T) {
	t.Parallel()
	w := &brokenPipe{}
	c := NewConn(strings.NewReader(""), w, nil, Options{})
	c.Reply(json.RawMessage(`1`), map[string]bool{"ok": true}, nil)
	select {
	case <-c.Gone():
	default:
		t.Fatal("a failed write did not mark the client gone")
	}
	c.Reply(json.RawMessage(`2`), map[string]bool{"ok": true}, nil)
	require.Equal(t, int32(1), w.writes.Load(), "no write after the client is gone")
}

// TestRequestIDs: the ids of requests to the client are "srv-" and 128
// random bits, never twice the same.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		require.Regexp(t, `^srv-[0-9a-f]{32}$`, id)
		require.False(t, seen[id], "a request id came twice")
		seen[id] = true
	}
}
