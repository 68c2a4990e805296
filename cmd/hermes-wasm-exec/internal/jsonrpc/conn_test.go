package jsonrpc

import (
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// TestServeOversizeLastLine: a last line over MaxLine without its newline
// (the client went away mid-line) is still answered as too large, as a
// terminated one is; a short unterminated last line is still handled.
func TestServeOversizeLastLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, input, want string
		handled           int
	}{
		{"oversize", `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n" + strings.Repeat("x", 200), "the line is larger than 100 bytes", 1},
		{"short", `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"m"}`, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			var handled atomic.Int32
			c := NewConn(strings.NewReader(tc.input), &out, nil, Options{MaxLine: 100, Handle: func(*Request) { handled.Add(1) }})
			c.Serve()
			require.Equal(t, int32(tc.handled), handled.Load())
			if tc.want != "" {
				require.Contains(t, out.String(), tc.want)
			} else {
				require.Empty(t, out.String())
			}
		})
	}
}

// TestUnauthenticatedClientThatNeverReads: a client that sends requests
// before authenticate and never reads the answers is closed at the auth
// deadline all the same. Before, the reply blocked the read loop (and with
// it the read deadline) for good: enough such clients held every
// unauthenticated slot of `serve --listen tcp`.
func TestUnauthenticatedClientThatNeverReads(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe() // unbuffered: a write waits for a read
	defer client.Close()
	c := NewConn(server, server, server, Options{Token: "secret", AuthTimeout: 200 * time.Millisecond, MaxLine: 1 << 20})
	done := make(chan struct{})
	go func() {
		c.Serve()
		server.Close()
		close(done)
	}()
	go func() {
		for range 100 {
			if _, err := client.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"execute","params":{}}` + "\n")); err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a client that never reads kept the connection open past the auth deadline")
	}
}
