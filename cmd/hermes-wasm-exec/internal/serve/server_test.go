package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/listen"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// rpcTimeout bounds the wait for any one response in these tests.
const rpcTimeout = 3 * time.Minute

// padded pads a request line with spaces to n bytes (its newline not
// counted).
func padded(line string, n int) string {
	return line + strings.Repeat(" ", n-len(line))
}

// testMsg is the part of a message from the server these tests read.
type testMsg struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestServeUnauthenticatedLines runs a TCP server in this process, with
// a stand-in executor, to watch its heap: a connection that has not
// authenticated cannot make it hold more than a 4 KiB line. Not parallel:
// other tests would move the heap it measures.
func TestServeUnauthenticatedLines(t *testing.T) {
	addr := tcpServer(t, 0, 0, nil)
	dial := func(t *testing.T) net.Conn {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		require.NoError(t, nc.SetDeadline(time.Now().Add(rpcTimeout)))
		return nc
	}

	t.Run("4 KiB is the limit until authenticate", func(t *testing.T) {
		nc := dial(t)
		r := bufio.NewReader(nc)
		// A line of exactly 4 KiB is read...
		_, err := io.WriteString(nc, padded(`{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"token":"tok"}}`, 4<<10)+"\n")
		require.NoError(t, err)
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"authenticated":true}}`, line)
		// ...and once authenticated, longer lines are too.
		_, err = io.WriteString(nc, padded(`{"jsonrpc":"2.0","id":2,"method":"close_session","params":{"session":"s"}}`, 1<<20)+"\n")
		require.NoError(t, err)
		line, err = r.ReadString('\n')
		require.NoError(t, err)
		require.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{"closed":true}}`, line)

		// One byte more before authenticate: an error, and the
		// connection is closed (all 4097 bytes are read, so it ends
		// cleanly and the error arrives).
		nc = dial(t)
		_, err = io.WriteString(nc, "{"+strings.Repeat("a", 4<<10))
		require.NoError(t, err)
		out, err := io.ReadAll(nc)
		require.NoError(t, err, "the server closes the connection")
		var m testMsg
		require.NoError(t, json.Unmarshal(out, &m), string(out))
		require.Equal(t, "null", string(m.ID))
		require.NotNil(t, m.Error)
		require.Equal(t, -32600, m.Error.Code)
		require.Contains(t, m.Error.Message, "a line sent before authenticate is limited to 4 KiB; closing the connection")
		require.Equal(t, 1, bytes.Count(out, []byte("\n")), string(out))
	})

	t.Run("60 MB lines from 8 connections", func(t *testing.T) {
		const conns, total, chunk = 8, 60 << 20, 1 << 20
		var before goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		data := bytes.Repeat([]byte("a"), chunk)
		written := make([]int, conns)
		werr, rerr := make([]error, conns), make([]error, conns)
		ncs := make([]net.Conn, conns)
		var wg sync.WaitGroup
		for i := range conns {
			ncs[i] = dial(t)
			wg.Add(2)
			go func() {
				defer wg.Done()
				for written[i] < total {
					n, err := ncs[i].Write(data)
					written[i] += n
					if err != nil {
						werr[i] = err
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				// The server closes the connection: reading ends (EOF or
				// reset), it does not time out.
				_, rerr[i] = io.Copy(io.Discard, ncs[i])
				if testenv.UnderWine() {
					// wine does not fail a send that is pending when the
					// peer resets the connection (Linux and Windows do):
					// the write would wait for its deadline. Closing our
					// end ends it.
					ncs[i].Close()
				}
			}()
		}
		wg.Wait()
		// Measured while the connections are still open (but under wine):
		// an old server held every byte sent so far.
		var after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("heap grew by %d KiB; bytes written per connection: %v; write errors: %v; read errors: %v", grew>>10, written, werr, rerr)
		require.Less(t, grew, int64(16<<20), "the server held unauthenticated input")
		for i := range ncs {
			require.Error(t, werr[i], "connection %d: the server took all %d bytes", i, total)
			require.Less(t, written[i], total)
			var ne net.Error
			require.False(t, errors.As(rerr[i], &ne) && ne.Timeout(), "connection %d stays open", i)
		}
	})
}

// tcpServer runs a TCP server with token "tok" in this process, with a
// stand-in executor, its listener capped at maxUnauth connections that
// have not authenticated (0: no cap), each with authTimeout to
// authenticate (0: no limit); infof gets its log lines (nil: none). It
// returns the address; the test's cleanup stops it.
func tcpServer(t *testing.T, authTimeout time.Duration, maxUnauth int, infof func(string, ...any)) string {
	t.Helper()
	nop := func(string, ...any) {}
	if infof == nil {
		infof = nop
	}
	s := newServer(fakeBackend{}, nop, infof)
	s.token = "tok"
	s.authTimeout = authTimeout
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := listen.Gated(raw, maxUnauth, infof)
	accepting := make(chan struct{})
	go func() {
		s.accept(ln, true)
		close(accepting)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-accepting
		s.stop()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			s.mu.Lock()
			n := len(s.conns)
			s.mu.Unlock()
			if n == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "connections still served")
		}
	})
	return raw.Addr().String()
}

// TestServeOpenSessionSkillEnvKeepsDelegation: an open_session that only
// registers skill variables leaves the session's delegation as it is (a
// client that runs terminal in its own sandbox must not see it moved back
// to this host by registering a skill); an explicit empty delegate_tools
// still ends it.
func TestServeOpenSessionSkillEnvKeepsDelegation(t *testing.T) {
	t.Parallel()
	nop := func(string, ...any) {}
	ex := executor.New(executor.Options{HermesHome: t.TempDir(), Environ: []string{}})
	defer ex.Close(context.Background())
	s := newServer(executorBackend{ex}, nop, nop)
	defer s.cancel(nil)
	c := s.newClient(strings.NewReader(""), io.Discard, nil, false)
	answer := func(params string) string {
		t.Helper()
		res, rerr := c.openSession(json.RawMessage(params))
		require.Nil(t, rerr)
		out, err := json.Marshal(res)
		require.NoError(t, err)
		return string(out)
	}
	delegated := func() []string { return ex.DelegatedTools("s", c.id) }
	require.JSONEq(t, `{"session": "s", "delegate_tools": ["terminal"]}`, answer(`{"session": "s", "delegate_tools": ["terminal"]}`))
	require.JSONEq(t, `{"session": "s", "delegate_tools": ["terminal"], "skill_env": ["SKILL_TOKEN"], "skill_env_refused": []}`,
		answer(`{"session": "s", "skill_env": ["SKILL_TOKEN"]}`))
	require.Equal(t, []string{"terminal"}, delegated(), "registering a skill kept the delegation")
	require.JSONEq(t, `{"session": "s", "delegate_tools": [], "skill_env": [], "skill_env_refused": []}`,
		answer(`{"session": "s", "delegate_tools": [], "skill_env": []}`))
	require.Empty(t, delegated(), "an empty delegate_tools ends it")
}
