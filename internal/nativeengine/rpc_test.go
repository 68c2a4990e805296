package nativeengine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

var transports = []string{native.TransportUnix, native.TransportTCP}

// skipTransport skips a subtest of transport tr where the platform lacks
// it: wine has no AF_UNIX (Windows 10 does).
func skipTransport(t *testing.T, tr string) {
	t.Helper()
	if tr == native.TransportUnix {
		testenv.SkipUnderWine(t, "wine has no AF_UNIX; the Unix-socket transport is tested on Linux")
	}
}

// rpcClient is a test client of the wire protocol on one connection.
type rpcClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

// dialAddress connects to a Server address: a socket path or tcp://HOST:PORT.
func dialAddress(address string) (net.Conn, error) {
	if hostport, ok := strings.CutPrefix(address, "tcp://"); ok {
		return net.DialTimeout("tcp", hostport, 5*time.Second)
	}
	return net.DialTimeout("unix", address, 5*time.Second)
}

func dial(t *testing.T, srv *Server) *rpcClient {
	t.Helper()
	c, err := dialAddress(srv.Address())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rpcClient{t: t, conn: c, r: bufio.NewReader(c)}
}

// send writes raw bytes (a request line must end in "\n").
func (c *rpcClient) send(raw []byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.conn.Write(raw)
	return err
}

// recv reads one response line and decodes it.
func (c *rpcClient) recv() (map[string]any, error) {
	// A guard against a hang, not a timing check: a 64 MiB request read
	// under -race on a loaded machine took more than 10 s, and once (three
	// test runs sharing two cores) more than 2 minutes.
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Minute))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("response %q is not JSON: %w", line, err)
	}
	return m, nil
}

// roundtrip sends one request object and returns the response. It is safe
// to call from any goroutine (it does not use t.FailNow).
func (c *rpcClient) roundtrip(req map[string]any) (map[string]any, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := c.send(append(b, '\n')); err != nil {
		return nil, err
	}
	return c.recv()
}

func (c *rpcClient) mustRoundtrip(req map[string]any) map[string]any {
	c.t.Helper()
	m, err := c.roundtrip(req)
	require.NoError(c.t, err)
	return m
}

// callRecorder is a ToolFunc that records its calls and echoes the args.
type callRecorder struct {
	mu    sync.Mutex
	calls []recordedCall
	n     atomic.Int64
}

type recordedCall struct {
	tool string
	args string
}

func (r *callRecorder) tool(_ context.Context, tool string, args json.RawMessage) map[string]any {
	r.n.Add(1)
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{tool, string(args)})
	r.mu.Unlock()
	var a any
	if err := json.Unmarshal(args, &a); err != nil {
		return map[string]any{"error": "bad args: " + err.Error()}
	}
	return map[string]any{"tool": tool, "args": a}
}

func listen(t *testing.T, transport string, b *engine.Broker) *Server {
	t.Helper()
	srv, err := listenRPC(context.Background(), transport, t.TempDir(), b)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestServerAddressAndToken(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			srv := listen(t, tr, engine.NewBroker((&callRecorder{}).tool, 1, nil))
			require.Len(t, srv.Token(), 64, "32 random bytes, hex")
			other := listen(t, tr, engine.NewBroker((&callRecorder{}).tool, 1, nil))
			require.NotEqual(t, srv.Token(), other.Token())
			if tr == native.TransportTCP {
				require.True(t, strings.HasPrefix(srv.Address(), "tcp://127.0.0.1:"), srv.Address())
			} else {
				require.True(t, strings.HasSuffix(srv.Address(), "rpc.sock"), srv.Address())
			}
		})
	}
}

func TestServerGoodCall(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			rec := &callRecorder{}
			b := engine.NewBroker(rec.tool, 10, nil)
			srv := listen(t, tr, b)
			c := dial(t, srv)

			args := map[string]any{"path": "a/b.txt", "offset": float64(3), "nested": map[string]any{"x": []any{"y", true}}}
			resp := c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": args})
			require.Equal(t, map[string]any{"tool": "read_file", "args": args}, resp)

			// Several requests on the same connection are answered in order.
			for i := 0; i < 5; i++ {
				resp := c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "terminal", "args": map[string]any{"command": fmt.Sprint("echo ", i)}})
				require.Equal(t, fmt.Sprint("echo ", i), resp["args"].(map[string]any)["command"])
			}

			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.Len(t, rec.calls, 6)
			require.Equal(t, "read_file", rec.calls[0].tool)
			require.JSONEq(t, `{"path":"a/b.txt","offset":3,"nested":{"x":["y",true]}}`, rec.calls[0].args)
			n, log := b.Made()
			require.Equal(t, 6, n)
			require.Len(t, log, 6)
		})
	}
}

func TestServerUnauthorized(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			rec := &callRecorder{}
			b := engine.NewBroker(rec.tool, 10, nil)
			srv := listen(t, tr, b)
			c := dial(t, srv)

			good := srv.Token()
			bad := []map[string]any{
				{"tool": "read_file", "args": map[string]any{"path": "x"}},                         // missing
				{"token": "", "tool": "read_file", "args": map[string]any{"path": "x"}},            // empty
				{"token": "nope", "tool": "read_file", "args": map[string]any{"path": "x"}},        // wrong
				{"token": good[:len(good)-1], "tool": "read_file", "args": map[string]any{}},       // prefix
				{"token": good + "0", "tool": "read_file", "args": map[string]any{}},               // longer
				{"token": strings.ToUpper(good), "tool": "read_file", "args": map[string]any{}},    // case
				{"token": 12345, "tool": "read_file", "args": map[string]any{}},                    // not a string
				{"token": "nope", "op": "exit", "exit": map[string]any{"kind": "exception"}},       // exit op
				{"token": nil, "op": "exit", "exit": map[string]any{"kind": "exit", "code": 2}},    // exit op, null
				{"op": "exit", "exit": map[string]any{"kind": "exception", "traceback": "forged"}}, // exit op, missing
			}
			for _, req := range bad {
				resp := c.mustRoundtrip(req)
				if _, isString := req["token"].(string); !isString && req["token"] != nil {
					// A token of the wrong JSON type fails to decode.
					require.True(t, strings.HasPrefix(resp["error"].(string), "Malformed tool request"), resp)
					continue
				}
				require.Equal(t, map[string]any{"error": engine.ErrUnauthorized}, resp, "request %v", req)
			}
			require.Zero(t, rec.n.Load(), "no tool ran")
			n, _ := b.Made()
			require.Zero(t, n, "no budget used")
			require.Nil(t, b.Report(), "no exit report taken")

			// The connection still works for a good request.
			resp := c.mustRoundtrip(map[string]any{"token": good, "tool": "read_file", "args": map[string]any{"path": "x"}})
			require.Equal(t, "read_file", resp["tool"])
			require.EqualValues(t, 1, rec.n.Load())
		})
	}
}

func TestServerMalformed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			rec := &callRecorder{}
			srv := listen(t, tr, engine.NewBroker(rec.tool, 10, nil))
			c := dial(t, srv)
			for _, raw := range []string{"not json\n", "\n", "{\n", "[1,2]\n", `{"token": "` + srv.Token() + `", "tool": ` + "\n"} {
				require.NoError(t, c.send([]byte(raw)))
				resp, err := c.recv()
				require.NoError(t, err)
				msg, _ := resp["error"].(string)
				require.True(t, strings.HasPrefix(msg, "Malformed tool request"), "%q -> %v", raw, resp)
			}
			require.Zero(t, rec.n.Load())
			resp := c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": map[string]any{"path": "ok"}})
			require.Equal(t, "read_file", resp["tool"])
		})
	}
}

func TestServerOversizeFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 64 MiB")
	}
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			rec := &callRecorder{}
			srv := listen(t, tr, engine.NewBroker(rec.tool, 10, nil))
			c := dial(t, srv)
			// Before the connection has shown the token, a line over 4 KiB
			// is refused and the connection closed: a peer without the
			// token cannot make the host buffer big frames.
			stranger := dial(t, srv)
			require.NoError(t, stranger.send(append(bytes.Repeat([]byte("x"), 5000), '\n')))
			resp, err := stranger.recv()
			require.NoError(t, err)
			require.Contains(t, resp["error"], "Unauthorized: a connection must send")
			_, err = stranger.recv()
			require.Error(t, err, "closed")

			resp = c.mustRoundtrip(map[string]any{"token": "guess", "op": "hello"})
			require.Equal(t, engine.ErrUnauthorized, resp["error"])
			resp = c.mustRoundtrip(map[string]any{"token": srv.Token(), "op": "hello"})
			require.Equal(t, map[string]any{"ok": true}, resp)

			// A request just over engine.MaxRequest, with a valid prefix, in one line.
			prefix := `{"token": "` + srv.Token() + `", "tool": "read_file", "args": {"path": "`
			big := make([]byte, 0, engine.MaxRequest+64)
			big = append(big, prefix...)
			big = append(big, bytes.Repeat([]byte("a"), engine.MaxRequest-len(prefix))...)
			big = append(big, `"}}`...)
			big = append(big, '\n')
			require.Greater(t, len(big)-1, engine.MaxRequest)

			sent := make(chan error, 1)
			go func() { sent <- c.send(big) }()
			resp, err = c.recv()
			require.NoError(t, err)
			require.NoError(t, <-sent)
			require.Contains(t, resp["error"], "too large")
			require.Zero(t, rec.n.Load(), "the oversize request did not run")

			// The same connection still works.
			resp = c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": map[string]any{"path": "after"}})
			require.Equal(t, map[string]any{"path": "after"}, resp["args"])
			require.EqualValues(t, 1, rec.n.Load())
		})
	}
}

func TestServerParallelConnections(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			rec := &callRecorder{}
			b := engine.NewBroker(rec.tool, 1000, nil)
			srv := listen(t, tr, b)
			const workers, calls = 8, 20
			clients := make([]*rpcClient, workers)
			for i := range clients {
				clients[i] = dial(t, srv)
			}
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				go func(w int) {
					for i := 0; i < calls; i++ {
						want := fmt.Sprintf("w%d-c%d", w, i)
						resp, err := clients[w].roundtrip(map[string]any{"token": srv.Token(), "tool": "search_files", "args": map[string]any{"pattern": want}})
						if err != nil {
							errs <- err
							return
						}
						got, _ := resp["args"].(map[string]any)
						if got["pattern"] != want {
							errs <- fmt.Errorf("worker %d call %d got %v", w, i, resp)
							return
						}
					}
					errs <- nil
				}(w)
			}
			for w := 0; w < workers; w++ {
				require.NoError(t, <-errs)
			}
			n, log := b.Made()
			require.Equal(t, workers*calls, n)
			require.Len(t, log, workers*calls)
			require.EqualValues(t, workers*calls, rec.n.Load())
		})
	}
}

func TestServerBudgetAcrossConnections(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			const max, callers = 5, 8
			var entered atomic.Int64
			all := make(chan struct{})
			b := engine.NewBroker(func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				// The allowed calls wait for each other: they only all
				// finish if the server runs them in parallel.
				if entered.Add(1) == max {
					close(all)
				}
				select {
				case <-all:
					return map[string]any{"ok": true}
				case <-time.After(2 * time.Minute):
					return map[string]any{"error": "calls were not served in parallel"}
				}
			}, max, nil)
			srv := listen(t, tr, b)
			clients := make([]*rpcClient, callers)
			for i := range clients {
				clients[i] = dial(t, srv)
			}
			type result struct {
				resp map[string]any
				err  error
			}
			results := make(chan result, callers)
			for i := 0; i < callers; i++ {
				go func(c *rpcClient) {
					resp, err := c.roundtrip(map[string]any{"token": srv.Token(), "tool": "web_search", "args": map[string]any{"query": "q"}})
					results <- result{resp, err}
				}(clients[i])
			}
			ok, limited := 0, 0
			for i := 0; i < callers; i++ {
				r := <-results
				require.NoError(t, r.err)
				if r.resp["ok"] == true {
					ok++
					continue
				}
				require.Contains(t, r.resp["error"], "Tool call limit reached (5)")
				limited++
			}
			require.Equal(t, max, ok)
			require.Equal(t, callers-max, limited)
			require.EqualValues(t, max, entered.Load())
			n, _ := b.Made()
			require.Equal(t, max, n)
		})
	}
}

func TestServerExitOp(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			rec := &callRecorder{}
			b := engine.NewBroker(rec.tool, 0, nil)
			srv := listen(t, tr, b)
			c := dial(t, srv)
			report := map[string]any{"kind": "exception", "code": 1, "type": "ValueError", "message": "boom", "traceback": "Traceback...\nValueError: boom\n"}

			resp := c.mustRoundtrip(map[string]any{"token": "wrong", "op": "exit", "exit": report})
			require.Equal(t, engine.ErrUnauthorized, resp["error"])
			require.Nil(t, b.Report())

			resp = c.mustRoundtrip(map[string]any{"token": srv.Token(), "op": "exit", "exit": report})
			require.Equal(t, map[string]any{"ok": true}, resp)
			got := b.Report()
			require.NotNil(t, got)
			require.Equal(t, engine.ExitReport{Kind: "exception", Code: 1, Type: "ValueError", Message: "boom", Traceback: "Traceback...\nValueError: boom\n"}, *got)
			require.Zero(t, rec.n.Load())
		})
	}
}

func TestServerCloseWhileCallBlocked(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			entered := make(chan struct{})
			toolErr := make(chan error, 1)
			b := engine.NewBroker(func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				close(entered)
				select {
				case <-ctx.Done():
					toolErr <- ctx.Err()
				case <-time.After(2 * time.Minute):
					toolErr <- errors.New("ctx was not cancelled")
				}
				return map[string]any{"late": true}
			}, 5, nil)
			srv, err := listenRPC(context.Background(), tr, t.TempDir(), b)
			require.NoError(t, err)
			blocked := dial(t, srv)
			idle := dial(t, srv)
			// Make sure the idle connection has been accepted and served.
			resp := idle.mustRoundtrip(map[string]any{"token": "x", "tool": "read_file"})
			require.Equal(t, engine.ErrUnauthorized, resp["error"])

			require.NoError(t, blocked.send([]byte(`{"token": "`+srv.Token()+`", "tool": "terminal", "args": {"command": "sleep 100"}}`+"\n")))
			select {
			case <-entered:
			case <-time.After(time.Minute):
				t.Fatal("the tool call did not start")
			}

			closed := make(chan error, 1)
			start := time.Now()
			go func() { closed <- srv.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not return while a tool call was blocked")
			}
			// Not after the blocked call's 2 minutes (loose for a loaded
			// machine).
			require.Less(t, time.Since(start), 30*time.Second)
			require.ErrorIs(t, <-toolErr, context.Canceled)

			// Both client connections were closed by the server: reads end
			// without a response.
			for _, c := range []*rpcClient{blocked, idle} {
				_, err := c.recv()
				require.Error(t, err)
				var ne net.Error
				require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection was not closed: %v", err)
			}
			// No new connections.
			if c, err := dialAddress(srv.Address()); err == nil {
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, rerr := c.Read(make([]byte, 1))
				c.Close()
				require.Error(t, rerr)
			}

			require.NoError(t, srv.Close(), "Close is idempotent")
			require.NoError(t, srv.Close())
			if tr == native.TransportUnix {
				require.NoFileExists(t, srv.Address(), "the socket file is removed")
			}
		})
	}
}

func TestServerCloseWithoutConnections(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			srv, err := listenRPC(context.Background(), tr, t.TempDir(), engine.NewBroker((&callRecorder{}).tool, 1, nil))
			require.NoError(t, err)
			require.NoError(t, srv.Close())
			require.NoError(t, srv.Close())
		})
	}
}

func TestServerParentContextCancelsCalls(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			entered := make(chan struct{})
			b := engine.NewBroker(func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				close(entered)
				select {
				case <-ctx.Done():
					return map[string]any{"error": "cancelled: " + ctx.Err().Error()}
				case <-time.After(10 * time.Second):
					return map[string]any{"error": "not cancelled"}
				}
			}, 5, nil)
			srv, err := listenRPC(ctx, tr, t.TempDir(), b)
			require.NoError(t, err)
			defer srv.Close()
			c := dial(t, srv)
			require.NoError(t, c.send([]byte(`{"token": "`+srv.Token()+`", "tool": "terminal", "args": {}}`+"\n")))
			<-entered
			cancel()
			resp, err := c.recv()
			require.NoError(t, err)
			require.Equal(t, "cancelled: context canceled", resp["error"])
		})
	}
}

func TestServerUnknownTransport(t *testing.T) {
	dir := t.TempDir()
	srv, err := listenRPC(context.Background(), "pipe", dir, engine.NewBroker((&callRecorder{}).tool, 1, nil))
	require.Error(t, err)
	require.Nil(t, srv)
	require.Contains(t, err.Error(), `"pipe"`)
	require.Contains(t, err.Error(), `"unix"`)
	require.Contains(t, err.Error(), `"tcp"`)
	require.NoFileExists(t, dir+"/rpc.sock")
}

func TestServerUnixDirMissing(t *testing.T) {
	skipTransport(t, native.TransportUnix)
	dir := t.TempDir() + "/does-not-exist"
	_, err := listenRPC(context.Background(), native.TransportUnix, dir, engine.NewBroker((&callRecorder{}).tool, 1, nil))
	require.Error(t, err)
	require.Contains(t, err.Error(), "rpc.sock")
}

func TestDefaultTransport(t *testing.T) {
	if runtime.GOOS == "windows" {
		require.Equal(t, native.TransportTCP, native.DefaultTransport())
	} else {
		require.Equal(t, native.TransportUnix, native.DefaultTransport())
	}
}

// settledGoroutines waits for the goroutine count to hold still (earlier
// tests' goroutines finish exiting) and returns it.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		time.Sleep(10 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			break
		}
		n = m
	}
	return n
}

// TestServerNoGoroutineLeak must not run in parallel with other tests: it
// compares runtime.NumGoroutine before and after.
func TestServerNoGoroutineLeak(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			before := settledGoroutines()

			entered := make(chan struct{}, 1)
			b := engine.NewBroker(func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				if tool == "terminal" {
					entered <- struct{}{}
					select {
					case <-ctx.Done():
					case <-time.After(5 * time.Second):
					}
				}
				return map[string]any{"ok": true}
			}, 100, nil)
			srv, err := listenRPC(context.Background(), tr, t.TempDir(), b)
			require.NoError(t, err)
			var conns []net.Conn
			for i := 0; i < 6; i++ {
				c, err := dialAddress(srv.Address())
				require.NoError(t, err)
				conns = append(conns, c)
				cl := &rpcClient{t: t, conn: c, r: bufio.NewReader(c)}
				if i%2 == 0 {
					cl.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": map[string]any{}})
				}
				if i == 5 {
					require.NoError(t, cl.send([]byte(`{"token": "`+srv.Token()+`", "tool": "terminal", "args": {}}`+"\n")))
					<-entered
				}
			}
			// One connection the client already closed.
			conns[1].Close()
			require.NoError(t, srv.Close())
			for _, c := range conns {
				c.Close()
			}

			deadline := time.Now().Add(30 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left after Close")
		})
	}
}

func TestServerPeerGoneMidCall(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			skipTransport(t, tr)
			entered := make(chan struct{}, 1)
			release := make(chan struct{})
			returned := make(chan struct{}, 1)
			b := engine.NewBroker(func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
				if tool == "terminal" {
					entered <- struct{}{}
					<-release
					defer func() { returned <- struct{}{} }()
					return map[string]any{"output": strings.Repeat("x", 1<<20)}
				}
				return map[string]any{"ok": true}
			}, 10, nil)
			srv := listen(t, tr, b)
			gone := dial(t, srv)
			require.NoError(t, gone.send([]byte(`{"token": "`+srv.Token()+`", "tool": "terminal", "args": {}}`+"\n")))
			<-entered
			require.NoError(t, gone.conn.Close())
			close(release)
			<-returned
			// The answer went to a closed connection; the server goes on.
			for i := 0; i < 3; i++ {
				c := dial(t, srv)
				resp := c.mustRoundtrip(map[string]any{"token": srv.Token(), "tool": "read_file", "args": map[string]any{}})
				require.Equal(t, true, resp["ok"])
			}
			require.NoError(t, srv.Close())
		})
	}
}
