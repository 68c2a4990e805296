package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dialTCP connects to addr, with rpcTimeout as the deadline of every read
// and write: a connection the server never closes fails the test instead
// of hanging it.
func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(rpcTimeout)))
	return nc
}

// rpc sends one request on nc and reads one line back.
func rpc(t *testing.T, nc net.Conn, r *bufio.Reader, id int, method, params string) testMsg {
	t.Helper()
	_, err := fmt.Fprintf(nc, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	require.NoError(t, err)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	var m testMsg
	require.NoError(t, json.Unmarshal([]byte(line), &m), line)
	return m
}

// TestServeAuthTimeout: connections that do not authenticate within
// --auth-timeout are told so and closed (an old server kept 500 of 500
// idle ones open for good); a connection that has authenticated is not
// cut by it.
func TestServeAuthTimeout(t *testing.T) {
	t.Parallel()
	const idle = 20
	addr := tcpServer(t, time.Second, 64, nil)

	authed := dialTCP(t, addr)
	ar := bufio.NewReader(authed)
	require.Nil(t, rpc(t, authed, ar, 1, "authenticate", `{"token":"tok"}`).Error)

	// Connected after it authenticated: their deadlines pass after the
	// one it had.
	type ended struct {
		out []byte
		err error
	}
	done := make(chan ended, idle)
	for range idle {
		nc := dialTCP(t, addr)
		go func() {
			out, err := io.ReadAll(nc) // until the server closes it
			done <- ended{out, err}
		}()
	}
	for range idle {
		e := <-done
		require.NoError(t, e.err, "the server closes an idle connection that has not authenticated (a timeout here: it kept it open)")
		var m testMsg
		require.NoError(t, json.Unmarshal(e.out, &m), string(e.out))
		require.NotNil(t, m.Error, string(e.out))
		require.Equal(t, -32001, m.Error.Code)
		require.Contains(t, m.Error.Message, "authenticate was not called within 1s; closing the connection")
	}
	// The authenticated one still serves.
	m := rpc(t, authed, ar, 2, "close_session", `{"session":"s"}`)
	require.Nil(t, m.Error)
	require.Equal(t, "2", string(m.ID))
}

// TestServeUnauthenticatedCap: beyond --max-unauthenticated connections
// that have not authenticated, a new one is closed at once, and the log
// says why; one that authenticates frees its place.
func TestServeUnauthenticatedCap(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log strings.Builder
	infof := func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&log, f+"\n", a...)
	}
	addr := tcpServer(t, 0, 3, infof)
	var waiting []net.Conn
	for range 3 {
		waiting = append(waiting, dialTCP(t, addr))
	}
	// refused: the server closes nc without a word (EOF, not the test's
	// deadline). The accept queue is first in, first out: the ones above
	// were admitted before.
	refused := func(nc net.Conn) {
		t.Helper()
		out, err := io.ReadAll(nc)
		require.NoError(t, err, "a connection beyond the cap is closed at once")
		require.Empty(t, out)
	}
	fourth := dialTCP(t, addr)
	refused(fourth)
	mu.Lock()
	require.Contains(t, log.String(), "refused a connection from "+fourth.LocalAddr().String()+": 3 connections have not authenticated yet, the cap (--max-unauthenticated)")
	mu.Unlock()

	// One authenticates: a new connection is served (its call gets an
	// answer, unauthorized).
	r0 := bufio.NewReader(waiting[0])
	require.Nil(t, rpc(t, waiting[0], r0, 1, "authenticate", `{"token":"tok"}`).Error)
	fifth := dialTCP(t, addr)
	m := rpc(t, fifth, bufio.NewReader(fifth), 1, "close_session", `{"session":"s"}`)
	require.NotNil(t, m.Error)
	require.Equal(t, -32001, m.Error.Code)
	// Now three wait again.
	refused(dialTCP(t, addr))
	// A wrong token closes its connection: its place is free.
	r1 := bufio.NewReader(waiting[1])
	require.NotNil(t, rpc(t, waiting[1], r1, 1, "authenticate", `{"token":"wrong"}`).Error)
	_, err := io.ReadAll(r1)
	require.NoError(t, err)
	sixth := dialTCP(t, addr)
	require.Equal(t, -32001, rpc(t, sixth, bufio.NewReader(sixth), 1, "close_session", `{"session":"s"}`).Error.Code)
	// The authenticated one is not counted and still serves.
	require.Nil(t, rpc(t, waiting[0], r0, 2, "close_session", `{"session":"s"}`).Error)
}

// flakyListener fails its first Accept (as one out of file descriptors
// does), then hands out the real listener's connections.
type flakyListener struct {
	net.Listener
	failed bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, fmt.Errorf("accept tcp: %w", syscall.EMFILE)
	}
	return l.Listener.Accept()
}

// TestServeAcceptErrorIsNotTheEnd: an Accept error other than a closed
// listener (EMFILE in a flood) is logged and accepting goes on; before,
// the server stopped accepting for good and kept running.
func TestServeAcceptErrorIsNotTheEnd(t *testing.T) {
	t.Parallel()
	nop := func(string, ...any) {}
	var mu sync.Mutex
	var logged []string
	s := newServer(fakeBackend{}, nop, func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, a...))
	})
	s.token = "tok"
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepting := make(chan struct{})
	go func() {
		s.accept(&flakyListener{Listener: raw}, true)
		close(accepting)
	}()
	nc := dialTCP(t, raw.Addr().String())
	require.Nil(t, rpc(t, nc, bufio.NewReader(nc), 1, "authenticate", `{"token":"tok"}`).Error)
	raw.Close()
	<-accepting
	s.stop()
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, logged)
	require.Contains(t, logged[0], "too many open files; retrying in 5ms")
}
