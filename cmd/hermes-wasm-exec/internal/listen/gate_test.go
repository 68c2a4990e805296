package listen

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGated: at most max connections that have not authenticated are
// open; one beyond is closed at once, and said once (rate limited, with a
// count); a connection that authenticates, or closes, frees its place.
func TestGated(t *testing.T) {
	t.Parallel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var lines []string
	ln := Gated(raw, 2, func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(f, a...))
	})
	setLogEvery := func(d time.Duration) {
		g := ln.(*gatedListener).g
		g.mu.Lock()
		g.logEvery = d
		g.mu.Unlock()
	}
	setLogEvery(time.Hour)
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	})
	dial := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	// closedAtOnce: the server closes c without a byte (a read that ends
	// in EOF, not in the generous deadline).
	closedAtOnce := func(c net.Conn) {
		t.Helper()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
		n, err := c.Read(make([]byte, 1))
		require.Equal(t, 0, n)
		require.ErrorIs(t, err, io.EOF)
	}
	a, b := dial(), dial()
	sa, sb := <-accepted, <-accepted
	require.True(t, Unauthenticated(sa))
	// Two wait to authenticate: the next ones are refused (the accept
	// queue is first in, first out, so they come after a and b).
	c := dial()
	closedAtOnce(c)
	d := dial()
	closedAtOnce(d)
	mu.Lock()
	require.Len(t, lines, 1, "one line for the refusals of a period")
	require.Contains(t, lines[0], "refused a connection from "+c.LocalAddr().String()+": 2 connections have not authenticated yet, the cap (--max-unauthenticated)")
	mu.Unlock()

	// One authenticates: its place is free.
	Authenticated(sa)
	Authenticated(sa) // idempotent
	require.False(t, Unauthenticated(sa))
	e := dial()
	se := <-accepted
	// One closes (the server side, as it does at the deadline): free too;
	// closing the authenticated one frees nothing more.
	require.NoError(t, sb.Close())
	require.NoError(t, sa.Close())
	f := dial()
	<-accepted
	g := dial()
	closedAtOnce(g)
	setLogEvery(0)
	h := dial()
	closedAtOnce(h)
	mu.Lock()
	require.Len(t, lines, 2)
	require.Contains(t, lines[1], "(with this one, 3 refused since the last such line)")
	mu.Unlock()
	_, _, _, _ = a, b, e, f
	require.True(t, Unauthenticated(se))
}

// TestGatedNoCap: max 0 admits every connection.
func TestGatedNoCap(t *testing.T) {
	t.Parallel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := Gated(raw, 0, nil)
	defer ln.Close()
	for range 5 {
		c, err := net.Dial("tcp", raw.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		sc, err := ln.Accept()
		require.NoError(t, err)
		defer sc.Close()
	}
	// A connection of another listener is left alone.
	require.False(t, Unauthenticated(nil))
	Authenticated(nil)
}
