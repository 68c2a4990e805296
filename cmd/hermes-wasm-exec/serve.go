package main

// `hermes-wasm-exec serve`: a long-lived executor behind JSON-RPC 2.0, one
// JSON object per line, on stdin/stdout or on a Unix socket or loopback TCP
// port that several clients share. See the serve flags in the usage text
// and docs/serve.md for the protocol.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/hostfuncs"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/wire"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// ServeTokenEnv holds the token TCP clients must authenticate with; when
// it is unset, serve generates one and writes it to --token-file.
const ServeTokenEnv = "HERMES_SERVE_TOKEN"

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
	// Server-defined codes.
	rpcShuttingDown = -32000
	rpcUnauthorized = -32001
)

// maxRPCLine bounds one line (one JSON-RPC message, its newline not
// counted) of a client that needs no authentication or has authenticated:
// a script is at most maxScript, and JSON escaping can double it. A longer
// line gets an error and is skipped, never held whole.
const maxRPCLine = 64 << 20

// maxUnauthenticatedLine bounds a line (its newline not counted) of a
// connection that must authenticate and has not yet: a peer without the
// token cannot make the server hold more than this of its input. As on the
// project-mode tool socket (native), a longer line closes the connection.
const maxUnauthenticatedLine = 4 << 10

// requestIDBytes is the size of the random part of a server-to-client
// request id: 128 bits, so that an answer cannot be forged by guessing.
const requestIDBytes = 16

// shutdownGrace bounds how long shutdown waits for interrupted calls to
// report before the executor is closed under them.
const shutdownGrace = 15 * time.Second

var serveMethods = []string{"execute", "open_session", "register_skill", "describe", "interrupt", "close_session", "shutdown", "authenticate"}

func serveCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stderr = &lockedWriter{w: stderr}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	listen := fs.String("listen", "", "")
	tokenFile := fs.String("token-file", "", "")
	cfgPath := fs.String("config", "", "")
	logLevel := fs.String("log-level", "info", "")
	transport := fs.String("rpc-transport", "", "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hermes-wasm-exec serve: "+format+"\n", a...)
		return exitUsage
	}
	if len(pos) > 0 {
		return fail("unexpected argument %q (serve takes only flags)", pos[0])
	}
	if *logLevel != "info" && *logLevel != "debug" {
		return fail("--log-level must be info or debug, not %q", *logLevel)
	}
	if *transport != "" && *transport != native.TransportUnix && *transport != native.TransportTCP {
		return fail("--rpc-transport must be unix or tcp, not %q", *transport)
	}
	network, address := "", ""
	if *listen != "" {
		var ok bool
		network, address, ok = strings.Cut(*listen, ":")
		switch {
		case !ok || address == "" || (network != "unix" && network != "tcp"):
			return fail("--listen must be unix:PATH or tcp:127.0.0.1:PORT, not %q", *listen)
		case network == "tcp":
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return fail("--listen %q: %v", *listen, err)
			}
			if host == "localhost" {
				host = "127.0.0.1"
				address = net.JoinHostPort(host, port)
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return fail("--listen %q: only loopback addresses (127.0.0.1, ::1) are allowed: serve runs code and must not be reachable from the network", *listen)
			}
		}
	}
	token := ""
	if network == "tcp" {
		token = os.Getenv(ServeTokenEnv)
		if token == "" && *tokenFile == "" {
			return fail("--listen tcp:... needs a token: set %s, or give --token-file FILE to have one generated and written there", ServeTokenEnv)
		}
	}
	cfg, ok := loadConfig(*cfgPath, stderr, *logLevel)
	if !ok {
		return exitUsage
	}

	logf := debugLogf(*logLevel, stderr)
	infof := func(format string, a ...any) { fmt.Fprintf(stderr, "hermes-wasm-exec serve: "+format+"\n", a...) }

	var ln net.Listener
	generated := false
	if network != "" {
		if network == "tcp" && token == "" {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				infof("cannot generate a token: %v", err)
				return exitFailed
			}
			token = hex.EncodeToString(b)
			if err := writeTokenFile(*tokenFile, token); err != nil {
				infof("%v", err)
				return exitFailed
			}
			generated = true
			defer os.Remove(*tokenFile)
		}
		ln, err = listenOn(network, address)
		if err != nil {
			infof("%v", err)
			return exitFailed
		}
		defer ln.Close()
		if network == "unix" {
			defer os.Remove(address)
		}
	}

	ex := executor.New(executor.Options{Config: &cfg, Logf: logf, Warnf: warnLogf(stderr), Progress: stderr, RPCTransport: *transport})
	s := newServer(ex, logf, infof)
	s.token = token
	s.cfg = cfg
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	defer catchSIGPIPE()()
	ex.StartWarmPool(s.ctx)

	var stdioDone, clientGone <-chan struct{}
	switch {
	case ln == nil:
		infof("serving JSON-RPC 2.0 on stdin/stdout, one JSON object per line")
		c := s.newConn(stdin, stdout, nil, false)
		stdioDone, clientGone = c.done, c.gone
		go c.serve()
		// The calls in flight still answer after stdin's end, as long as
		// somebody reads stdout: once nobody does, the client is gone.
		watched := make(chan struct{})
		defer close(watched)
		go func() {
			if readerGone(stdout, watched) {
				c.lost()
			}
		}()
	default:
		where := network + ":" + ln.Addr().String()
		switch {
		case network == "tcp" && generated:
			infof("listening on %s (call authenticate first: the token is in %s)", where, *tokenFile)
		case network == "tcp":
			infof("listening on %s (call authenticate first with the token from %s)", where, ServeTokenEnv)
		default:
			infof("listening on %s", where)
		}
		go s.accept(ln, network == "tcp")
	}
	select {
	case <-s.shutdownReq:
		logf("serve: shutdown requested")
	case <-stdioDone:
		logf("serve: stdin closed")
	case <-clientGone:
		infof("the client is gone (nobody reads stdout any more): interrupting the running calls and shutting down")
	case sig := <-sigs:
		infof("%v: shutting down", sig)
	}
	if ln != nil {
		ln.Close()
	}
	s.stop()
	// Bounded: a delegated tool that ignores its context must not hang the exit.
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 30*time.Second)
	ex.Close(closeCtx)
	cancelClose()
	return exitOK
}

// listenOn listens on a Unix socket (0600; a stale socket file left by a
// dead server is replaced) or a loopback TCP address.
func listenOn(network, address string) (net.Listener, error) {
	if network == "unix" {
		if fi, err := os.Lstat(address); err == nil {
			if fi.Mode()&os.ModeSocket == 0 {
				return nil, fmt.Errorf("%s exists and is not a socket", address)
			}
			if c, err := net.DialTimeout("unix", address, time.Second); err == nil {
				c.Close()
				return nil, fmt.Errorf("%s is in use by a running server", address)
			}
			os.Remove(address)
		}
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s:%s: %w", network, address, err)
	}
	if network == "unix" {
		if err := os.Chmod(address, 0o600); err != nil {
			ln.Close()
			return nil, fmt.Errorf("cannot restrict %s to its owner: %w", address, err)
		}
	}
	return ln, nil
}

// writeTokenFile writes a generated token to path, readable by its owner
// only.
func writeTokenFile(path, token string) error {
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() && fi.Mode()&os.ModeSymlink == 0 {
			return fmt.Errorf("cannot write the token file: %s exists and is not a file", path)
		}
		// Replace it (a symlink itself, never its target): a token file
		// left by an earlier server, or a file the caller chose.
		os.Remove(path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("cannot write the token file: %w", err)
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("cannot write the token file: %w", err)
	}
	return nil
}

// backend is what the server asks of the executor (an interface so that
// the framing fuzz test can run without interpreters).
type backend interface {
	Execute(ctx context.Context, req executor.Request) (engine.Result, error)
	Interrupt(session, reason string) bool
	CloseSession(ctx context.Context, session string)
	RegisterSessionSkillEnv(session string, names ...string) ([]string, error)
}

// server is the executor behind every connection.
type server struct {
	ex    backend
	logf  func(string, ...any)
	infof func(string, ...any)
	token string // required by authenticate on TCP connections
	// cfg is the configuration in effect: describe builds the tool's
	// schema from it, and an argument error names its mode.
	cfg config.Config

	// ctx is the parent of every call's context; stop cancels it with an
	// interrupt, so running calls end as interrupted.
	ctx    context.Context
	cancel context.CancelCauseFunc

	shutdownReq  chan struct{} // closed by the shutdown method
	shutdownOnce sync.Once

	mu      sync.Mutex
	closing bool
	calls   sync.WaitGroup
	conns   map[*conn]struct{}
	tails   map[string]chan struct{}           // per session: the last call's "done" in the FIFO
	running map[string]context.CancelCauseFunc // per session: the call holding its turn
}

func newServer(ex backend, logf, infof func(string, ...any)) *server {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &server{
		ex: ex, logf: logf, infof: infof,
		ctx: ctx, cancel: cancel,
		shutdownReq: make(chan struct{}),
		conns:       map[*conn]struct{}{},
		tails:       map[string]chan struct{}{},
		running:     map[string]context.CancelCauseFunc{},
	}
}

// requestShutdown asks the main loop to stop the server.
func (s *server) requestShutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdownReq) })
}

// stop interrupts every running call, waits (a bounded time) for them to
// report, and closes every connection.
func (s *server) stop() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel(&engine.InterruptError{Reason: "the server is shutting down"})
	done := make(chan struct{})
	go func() {
		s.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		s.infof("calls still running after %v; closing anyway", shutdownGrace)
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// accept serves the connections of a listener until it is closed.
func (s *server) accept(ln net.Listener, needAuth bool) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.infof("accept: %v", err)
			}
			return
		}
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			nc.Close()
			continue
		}
		c := s.newConn(nc, nc, nc, needAuth)
		s.logf("serve: client connected from %s", nc.RemoteAddr())
		go func() {
			c.serve()
			c.close()
		}()
	}
}

// begin registers a request handler; false when the server is stopping.
func (s *server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.calls.Add(1)
	return true
}

// ticket is an execute call's place in its session's queue.
type ticket struct {
	session string
	prev    chan struct{} // closed when the call before it is done; nil if none
	mine    chan struct{} // closed when this call is done
}

// enqueue takes a place in session's queue. It is called in the order
// requests arrive (by the connection's reader), so that calls of one
// session run one at a time, in that order.
func (s *server) enqueue(session string) *ticket {
	tk := &ticket{session: session, mine: make(chan struct{})}
	s.mu.Lock()
	tk.prev = s.tails[session]
	s.tails[session] = tk.mine
	s.mu.Unlock()
	return tk
}

// turn waits until every earlier call of the ticket's session is done and
// registers cancel as the session's running call. Call the returned
// function when the call is done.
func (s *server) turn(tk *ticket, cancel context.CancelCauseFunc) func() {
	if tk.prev != nil {
		<-tk.prev
	}
	s.mu.Lock()
	s.running[tk.session] = cancel
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.running, tk.session)
		if s.tails[tk.session] == tk.mine {
			delete(s.tails, tk.session)
		}
		s.mu.Unlock()
		close(tk.mine)
	}
}

// conn is one client: stdin/stdout, or one socket connection.
type conn struct {
	s        *server
	r        io.Reader
	closer   io.Closer // nil for stdio
	needAuth bool
	authed   atomic.Bool

	wmu sync.Mutex
	w   io.Writer

	calls sync.WaitGroup // this connection's running handlers
	done  chan struct{}  // closed when serve returns
	eof   chan struct{}  // closed when nothing more can be read

	// gone is closed when the client can no longer be written to (a
	// write failed, or nobody reads stdout any more): see lost.
	gone     chan struct{}
	goneOnce sync.Once

	maxLine int // the longest line once authenticated (maxRPCLine; tests lower it)

	// pending holds this connection's server requests that await an
	// answer, by id. An answer is looked up here only: one that arrives
	// on another connection, or after the first answer, finds nothing.
	mu        sync.Mutex
	pending   map[string]chan answer
	delegates map[string][]string // per session: the tools this client runs itself (open_session)
}

func (s *server) newConn(r io.Reader, w io.Writer, closer io.Closer, needAuth bool) *conn {
	c := &conn{
		s: s, r: r, w: w, closer: closer, needAuth: needAuth, maxLine: maxRPCLine,
		done: make(chan struct{}), eof: make(chan struct{}), gone: make(chan struct{}),
		pending:   map[string]chan answer{},
		delegates: map[string][]string{},
	}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c
}

func (c *conn) close() {
	if c.closer != nil {
		c.closer.Close()
	}
}

// lost marks the client as gone: nothing more can reach it. A socket
// connection is closed (its reader ends); for stdin/stdout, serveCmd
// interrupts the running calls and shuts the server down.
func (c *conn) lost() {
	c.goneOnce.Do(func() {
		close(c.gone)
		c.close()
	})
}

// rpcMessage is any JSON-RPC 2.0 message: request, notification or
// response.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

func invalidParams(format string, a ...any) *rpcError {
	return &rpcError{Code: rpcInvalidParams, Message: "Invalid params: " + fmt.Sprintf(format, a...)}
}

var nullID = json.RawMessage("null")

// send writes one message as one line.
func (c *conn) send(m any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		c.s.infof("cannot encode a response: %v", err)
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.gone:
		return
	default:
	}
	if _, err := c.w.Write(buf.Bytes()); err != nil {
		c.s.logf("serve: write: %v", err)
		c.lost()
	}
}

// reply answers request id (nothing for a notification).
func (c *conn) reply(id json.RawMessage, result any, rerr *rpcError) {
	if id == nil {
		if rerr != nil {
			c.s.infof("notification failed: %s", rerr.Message)
		}
		return
	}
	if rerr != nil {
		c.send(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *rpcError       `json:"error"`
		}{"2.0", id, rerr})
		return
	}
	c.send(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
}

// serve reads the connection's messages until it ends, then waits for its
// running calls to answer.
func (c *conn) serve() {
	defer func() {
		c.calls.Wait()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
		close(c.done)
	}()
	defer close(c.eof)
	var r *bufio.Reader
	gated := c.needAuth && !c.authed.Load()
	if gated {
		// Until authenticate succeeds, the buffer is the limit: nothing
		// more than one line of maxUnauthenticatedLine is ever read ahead.
		r = bufio.NewReaderSize(c.r, maxUnauthenticatedLine+1)
	} else {
		r = bufio.NewReaderSize(c.r, 64<<10)
	}
	for {
		max := c.maxLine
		if gated {
			max = maxUnauthenticatedLine
		}
		line, err := wire.ReadLine(r, max, !gated)
		switch {
		case errors.Is(err, wire.ErrLineTooLarge) && gated:
			c.s.infof("a client that has not authenticated sent a line over %d KiB; connection closed", maxUnauthenticatedLine>>10)
			if nc, ok := c.closer.(net.Conn); ok {
				// A client that does not read must not hold the server up.
				_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			}
			c.reply(nullID, nil, &rpcError{Code: rpcInvalidRequest, Message: fmt.Sprintf("Invalid request: a line sent before authenticate is limited to %d KiB; closing the connection (call authenticate with the server's token first)", maxUnauthenticatedLine>>10)})
			return
		case errors.Is(err, wire.ErrLineTooLarge):
			c.reply(nullID, nil, &rpcError{Code: rpcInvalidRequest, Message: fmt.Sprintf("Invalid request: the line is larger than %s, the limit for one message; it was skipped", sizeString(c.maxLine))})
			continue
		case errors.Is(err, io.ErrUnexpectedEOF) && len(line) > 0:
			c.handle(line) // a last line without its newline
			return
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.s.logf("serve: read: %v", err)
			}
			return
		}
		if !c.handle(line) {
			return
		}
		if gated && c.authed.Load() {
			// Authenticated: from now on lines up to maxLine. The new
			// reader starts with what the small one has read ahead.
			gated = false
			r = bufio.NewReaderSize(r, 64<<10)
		}
	}
}

// sizeString writes a line limit for a message: "64 MiB", "4 KiB", or
// bytes.
func sizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// handle dispatches one line; false ends the connection.
func (c *conn) handle(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return true
	}
	if !json.Valid(line) {
		c.reply(nullID, nil, &rpcError{Code: rpcParseError, Message: "Parse error: the line is not valid JSON (send one JSON-RPC 2.0 object per line)"})
		return true
	}
	if line[0] != '{' {
		msg := "Invalid request: expected a JSON object"
		if line[0] == '[' {
			msg = "Invalid request: batches are not supported; send one request object per line"
		}
		c.reply(nullID, nil, &rpcError{Code: rpcInvalidRequest, Message: msg})
		return true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.reply(nullID, nil, &rpcError{Code: rpcParseError, Message: "Parse error: " + err.Error()})
		return true
	}
	id, hasID := m["id"]
	if hasID {
		switch id = compact(id); {
		case string(id) == "null":
		case id[0] == '"':
		case id[0] == '-' || id[0] >= '0' && id[0] <= '9':
		default:
			c.reply(nullID, nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: id must be a string, a number or null"})
			return true
		}
	} else {
		id = nil
	}
	rawMethod, hasMethod := m["method"]
	if !hasMethod {
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if hasID && (hasResult || hasError) {
			c.answered(id, m)
			return true
		}
		c.reply(orNull(id), nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: method is missing"})
		return true
	}
	var method string
	if err := json.Unmarshal(rawMethod, &method); err != nil {
		c.reply(orNull(id), nil, &rpcError{Code: rpcInvalidRequest, Message: "Invalid request: method must be a string"})
		return true
	}
	var version string
	if err := json.Unmarshal(m["jsonrpc"], &version); err != nil || version != "2.0" {
		c.reply(orNull(id), nil, &rpcError{Code: rpcInvalidRequest, Message: `Invalid request: "jsonrpc" must be "2.0"`})
		return true
	}
	params := m["params"]
	c.s.logf("serve: <- %s id=%s", method, orNull(id))

	if c.needAuth && !c.authed.Load() && method != "authenticate" {
		c.reply(id, nil, &rpcError{Code: rpcUnauthorized, Message: "Unauthorized: call authenticate with the server's token first"})
		return true
	}
	switch method {
	case "authenticate":
		return c.authenticate(id, params)
	case "shutdown":
		c.reply(id, struct{}{}, nil)
		c.s.requestShutdown()
		return true
	case "open_session", "register_skill", "describe":
		// Answered here, in arrival order, so that an execute sent after
		// it sees its delegation and skill variables.
		var result any
		var rerr *rpcError
		switch method {
		case "open_session":
			result, rerr = c.openSession(params)
		case "register_skill":
			result, rerr = c.registerSkill(params)
		default:
			result, rerr = c.describe(params)
		}
		c.reply(id, result, rerr)
		return true
	case "execute", "interrupt", "close_session":
	default:
		c.reply(id, nil, &rpcError{Code: rpcMethodNotFound, Message: fmt.Sprintf("Method not found: %q (methods: %s)", method, strings.Join(serveMethods, ", "))})
		return true
	}
	var req executor.Request
	var tk *ticket
	var delegate []string
	if method == "execute" {
		var rerr *rpcError
		var override []string
		var problem string
		if req, override, problem, rerr = executeRequest(params); rerr != nil {
			c.reply(id, nil, rerr)
			return true
		}
		if problem != "" {
			// Hermes's answer to a misdirected call: a result the model
			// reads, not a protocol error.
			mode, _ := executor.NormalizeMode(cmp.Or(req.Mode, c.s.cfg.CodeExecution.Mode))
			c.reply(id, executor.ArgumentError(mode, problem), nil)
			return true
		}
		// The delegation in effect when the call arrives: its own
		// delegate_tools, or its session's from open_session.
		if delegate = override; delegate == nil {
			c.mu.Lock()
			delegate = c.delegates[req.Session]
			c.mu.Unlock()
		}
	}
	if !c.s.begin() {
		c.reply(id, nil, &rpcError{Code: rpcShuttingDown, Message: "The server is shutting down"})
		return true
	}
	if method == "execute" {
		tk = c.s.enqueue(req.Session)
	}
	c.calls.Add(1)
	go func() {
		defer c.s.calls.Done()
		defer c.calls.Done()
		var result any
		var rerr *rpcError
		switch method {
		case "execute":
			result, rerr = c.execute(id, req, delegate, tk)
		case "interrupt":
			result, rerr = c.interrupt(params)
		case "close_session":
			result, rerr = c.closeSession(params)
		}
		c.reply(id, result, rerr)
	}()
	return true
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func orNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return nullID
	}
	return id
}

func (c *conn) authenticate(id json.RawMessage, params json.RawMessage) bool {
	p, rerr := paramsObject(params, "token")
	if rerr == nil && c.needAuth {
		var tok string
		if raw, ok := p["token"]; !ok {
			rerr = invalidParams("token is required")
		} else if json.Unmarshal(raw, &tok) != nil {
			rerr = invalidParams("token must be a string")
		} else if !wire.TokenEqual(tok, []byte(c.s.token)) {
			c.reply(id, nil, &rpcError{Code: rpcUnauthorized, Message: "Unauthorized: wrong token; closing the connection"})
			c.s.infof("a client gave a wrong token; connection closed")
			return false
		}
	}
	if rerr != nil {
		c.reply(id, nil, rerr)
		return true
	}
	c.authed.Store(true)
	c.reply(id, map[string]bool{"authenticated": true}, nil)
	return true
}

// paramsObject decodes params as an object whose keys are all in known.
func paramsObject(params json.RawMessage, known ...string) (map[string]json.RawMessage, *rpcError) {
	p := map[string]json.RawMessage{}
	if len(params) == 0 || string(compact(params)) == "null" {
		return p, nil
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("params must be an object with named parameters (%s)", strings.Join(known, ", "))
	}
	for k := range p {
		if !slices.Contains(known, k) {
			return nil, invalidParams("unknown parameter %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	for k, v := range p {
		if string(compact(v)) == "null" {
			delete(p, k) // null means "not given"
		}
	}
	return p, nil
}

func stringParam(p map[string]json.RawMessage, name string, required bool) (string, *rpcError) {
	raw, ok := p[name]
	if !ok {
		if required {
			return "", invalidParams("%s is required", name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalidParams("%s must be a string", name)
	}
	return s, nil
}

func sessionParam(p map[string]json.RawMessage, required bool) (string, *rpcError) {
	s, rerr := stringParam(p, "session", required)
	if rerr != nil {
		return "", rerr
	}
	if _, given := p["session"]; given && strings.TrimSpace(s) == "" {
		return "", invalidParams("session must be a non-empty string")
	}
	return s, nil
}

// sessionOrDefault is the optional session parameter of the session
// methods (open_session, register_skill): "default" when absent.
func sessionOrDefault(p map[string]json.RawMessage) (string, *rpcError) {
	s, rerr := sessionParam(p, false)
	if s == "" && rerr == nil {
		s = "default"
	}
	return s, rerr
}

// executeParams are execute's parameters. command is not one: it is
// accepted only to answer a terminal call sent to execute_code with
// Hermes's message (executor.CommandNotCodeMessage).
var executeParams = []string{"code", "session", "mode", "workdir", "reset", "parent_session", "kind", "tools", "enabled_tools", "timeout", "max_tool_calls", "delegate_tools", "skill_env", "command"}

// toolListParam decodes a list of tool names: as in Hermes, names that are
// not one of the seven (vision_analyze, delegate_task, ...) are dropped
// silently, and so are duplicates. nil when the parameter is absent.
func toolListParam(p map[string]json.RawMessage, name string) ([]string, *rpcError) {
	raw, ok := p[name]
	if !ok {
		return nil, nil
	}
	var tools []string
	if json.Unmarshal(raw, &tools) != nil {
		return nil, invalidParams("%s must be a list of tool names (%s)", name, strings.Join(hostfuncs.Names, ", "))
	}
	out := []string{}
	for _, t := range tools {
		if slices.Contains(hostfuncs.Names, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// toolsParam decodes the enabled tools, "tools" or its Hermes spelling
// "enabled_tools" (not both).
func toolsParam(p map[string]json.RawMessage) ([]string, *rpcError) {
	_, hasTools := p["tools"]
	if _, hasEnabled := p["enabled_tools"]; hasEnabled {
		if hasTools {
			return nil, invalidParams("give tools or enabled_tools, not both (they are the same parameter)")
		}
		return toolListParam(p, "enabled_tools")
	}
	return toolListParam(p, "tools")
}

// namesParam decodes a list of environment variable names; nil when the
// parameter is absent.
func namesParam(p map[string]json.RawMessage, name string) ([]string, *rpcError) {
	raw, ok := p[name]
	if !ok {
		return nil, nil
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		return nil, invalidParams("%s must be a list of environment variable names", name)
	}
	return names, nil
}

// executeRequest turns execute's params into an executor request, and
// returns the call's own delegate_tools (nil when not given). problem is
// Hermes's message for a misdirected call (a command instead of code, a
// code that is not a string): the call is then answered with it.
func executeRequest(params json.RawMessage) (req executor.Request, delegate []string, problem string, rerr *rpcError) {
	p, rerr := paramsObject(params, executeParams...)
	if rerr != nil {
		return req, nil, "", rerr
	}
	// Hermes looks at the arguments as sent, nulls included.
	raw := map[string]json.RawMessage{}
	_ = json.Unmarshal(params, &raw)
	if req.Code, problem = executor.CodeArgument(raw); problem != "" {
		req.Mode, _ = stringParam(p, "mode", false)
		return req, nil, problem, nil
	}
	if req, rerr = executeParamsRequest(p, req.Code); rerr != nil {
		return req, nil, "", rerr
	}
	delegate, rerr = toolListParam(p, "delegate_tools")
	return req, delegate, "", rerr
}

func executeParamsRequest(p map[string]json.RawMessage, code string) (executor.Request, *rpcError) {
	req := executor.Request{Code: code}
	var rerr *rpcError
	if len(req.Code) > maxScript {
		return req, invalidParams("code is larger than %d MiB", maxScript>>20)
	}
	req.Code = strings.TrimPrefix(req.Code, "\ufeff")
	if req.Session, rerr = sessionParam(p, false); rerr != nil {
		return req, rerr
	}
	if req.Session == "" {
		req.Session = "default"
	}
	if req.Mode, rerr = stringParam(p, "mode", false); rerr != nil {
		return req, rerr
	}
	if req.Mode != "" {
		mode, ok := executor.NormalizeMode(req.Mode)
		if !ok {
			return req, invalidParams("mode must be \"strict\" or \"project\", not %q", req.Mode)
		}
		req.Mode = mode
	}
	if req.Workdir, rerr = stringParam(p, "workdir", false); rerr != nil {
		return req, rerr
	}
	if raw, ok := p["reset"]; ok {
		if json.Unmarshal(raw, &req.Reset) != nil {
			return req, invalidParams("reset must be true or false")
		}
	}
	if req.ParentSession, rerr = stringParam(p, "parent_session", false); rerr != nil {
		return req, rerr
	}
	if req.Kind, rerr = stringParam(p, "kind", false); rerr != nil {
		return req, rerr
	}
	switch req.Kind {
	case "", config.KindCLI, config.KindGateway, config.KindAutomation:
	default:
		return req, invalidParams("kind must be \"cli\", \"gateway\" or \"automation\", not %q", req.Kind)
	}
	if req.Tools, rerr = toolsParam(p); rerr != nil {
		return req, rerr
	}
	if req.SkillEnv, rerr = namesParam(p, "skill_env"); rerr != nil {
		return req, rerr
	}
	if raw, ok := p["timeout"]; ok {
		var secs float64
		if json.Unmarshal(raw, &secs) != nil || secs <= 0 || secs > 86400 || math.IsNaN(secs) {
			return req, invalidParams("timeout must be a number of seconds greater than 0 and at most 86400, not %s", raw)
		}
		req.Timeout = time.Duration(secs * float64(time.Second))
	}
	if raw, ok := p["max_tool_calls"]; ok {
		n, err := strconv.Atoi(string(compact(raw)))
		if err != nil || n < 0 {
			return req, invalidParams("max_tool_calls must be a whole number of 0 or more, not %s", raw)
		}
		req.MaxToolCalls = &n
	}
	return req, nil
}

// execute runs a script for request id once its session's earlier calls
// are done; this connection approves what needs approval, and runs the
// delegated tools.
func (c *conn) execute(id json.RawMessage, req executor.Request, delegate []string, tk *ticket) (any, *rpcError) {
	req.Approver = executor.ApproverFunc(func(ctx context.Context, ar executor.ApprovalRequest) (executor.Decision, error) {
		return c.approve(ctx, id, ar)
	})
	if len(delegate) > 0 {
		req.ToolHandlers = make(map[string]executor.ToolHandler, len(delegate))
		for _, tool := range delegate {
			req.ToolHandlers[tool] = func(ctx context.Context, args json.RawMessage) map[string]any {
				return c.toolCall(ctx, id, req.Session, tool, args)
			}
		}
	}
	ctx, cancel := context.WithCancelCause(c.s.ctx)
	defer cancel(nil)
	done := c.s.turn(tk, cancel)
	defer done()
	start := time.Now()
	res, err := c.s.ex.Execute(ctx, req)
	if err != nil {
		c.s.logf("serve: execute id=%s: %v", orNull(id), err)
	}
	c.s.logf("serve: -> execute id=%s session=%s status=%s in %v", orNull(id), req.Session, res.Status, time.Since(start).Round(time.Millisecond))
	return res, nil
}

func (c *conn) interrupt(params json.RawMessage) (any, *rpcError) {
	p, rerr := paramsObject(params, "session", "reason")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionParam(p, true)
	if rerr != nil {
		return nil, rerr
	}
	reason, rerr := stringParam(p, "reason", false)
	if rerr != nil {
		return nil, rerr
	}
	interrupted := c.s.ex.Interrupt(session, reason)
	c.s.mu.Lock()
	cancel := c.s.running[session]
	c.s.mu.Unlock()
	if cancel != nil {
		// Also end the call's context: this stops a call that is still
		// waiting for an approval or for its interpreter to start.
		cancel(&engine.InterruptError{Reason: reason})
		interrupted = true
	}
	return map[string]bool{"interrupted": interrupted}, nil
}

func (c *conn) closeSession(params json.RawMessage) (any, *rpcError) {
	p, rerr := paramsObject(params, "session")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionParam(p, true)
	if rerr != nil {
		return nil, rerr
	}
	c.s.ex.CloseSession(c.s.ctx, session)
	// The session is gone for every client: so are their delegations.
	c.s.mu.Lock()
	conns := make([]*conn, 0, len(c.s.conns))
	for cc := range c.s.conns {
		conns = append(conns, cc)
	}
	c.s.mu.Unlock()
	for _, cc := range conns {
		cc.mu.Lock()
		delete(cc.delegates, session)
		cc.mu.Unlock()
	}
	return map[string]bool{"closed": true}, nil
}

// openSession records the tools this connection runs itself for a
// session: its later execute calls send their calls of those tools back
// as tool_call requests. An empty list ends the delegation. skill_env
// registers skill variables for the session (as register_skill names); a
// call with skill_env and no delegate_tools leaves the delegation as it is.
func (c *conn) openSession(params json.RawMessage) (any, *rpcError) {
	p, rerr := paramsObject(params, "session", "delegate_tools", "skill_env")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionOrDefault(p)
	if rerr != nil {
		return nil, rerr
	}
	tools, rerr := toolListParam(p, "delegate_tools")
	if rerr != nil {
		return nil, rerr
	}
	names, rerr := namesParam(p, "skill_env")
	if rerr != nil {
		return nil, rerr
	}
	// A call that only registers skill variables leaves the delegation as
	// it is: without delegate_tools, it would otherwise end it, and the
	// tools the client runs itself (in its own sandbox, say) would run here.
	keep := tools == nil && names != nil
	if tools == nil {
		tools = []string{}
	}
	var refused []string
	if names != nil {
		var err error
		if refused, err = c.s.ex.RegisterSessionSkillEnv(session, names...); err != nil {
			return nil, invalidParams("%v", err)
		}
	}
	c.mu.Lock()
	switch {
	case keep:
		tools = nonNil(slices.Clone(c.delegates[session]))
	case len(tools) == 0:
		delete(c.delegates, session)
	default:
		c.delegates[session] = tools
	}
	c.mu.Unlock()
	result := map[string]any{"session": session, "delegate_tools": tools}
	if names != nil {
		result["skill_env"] = withoutNames(names, refused)
		result["skill_env_refused"] = nonNil(refused)
	}
	if !keep {
		c.s.logf("serve: session %s delegates %v to its client", session, tools)
	}
	return result, nil
}

// registerSkill registers for a session the environment variables a skill
// declares (required_environment_variables in its SKILL.md frontmatter):
// given as names, as the path of a SKILL.md (or of the skill's directory)
// the server reads, or as the SKILL.md's content. Host-managed credentials
// are refused. The session's running kernel sees them after a reset.
func (c *conn) registerSkill(params json.RawMessage) (any, *rpcError) {
	p, rerr := paramsObject(params, "session", "names", "path", "content")
	if rerr != nil {
		return nil, rerr
	}
	session, rerr := sessionOrDefault(p)
	if rerr != nil {
		return nil, rerr
	}
	names, rerr := namesParam(p, "names")
	if rerr != nil {
		return nil, rerr
	}
	path, rerr := stringParam(p, "path", false)
	if rerr != nil {
		return nil, rerr
	}
	content, rerr := stringParam(p, "content", false)
	if rerr != nil {
		return nil, rerr
	}
	_, hasPath := p["path"]
	_, hasContent := p["content"]
	if names == nil && !hasPath && !hasContent {
		return nil, invalidParams("give the skill's variables: names (a list), path (its SKILL.md or directory) or content (its SKILL.md text)")
	}
	declared := slices.Clone(names)
	if hasPath {
		more, err := executor.ParseSkillFile(path)
		if err != nil {
			return nil, invalidParams("path: %v", err)
		}
		declared = append(declared, more...)
	}
	if hasContent {
		more, err := executor.SkillEnvFromMarkdown(content)
		if err != nil {
			return nil, invalidParams("content: %v", err)
		}
		declared = append(declared, more...)
	}
	declared = withoutNames(declared, nil) // once each, in order
	refused, err := c.s.ex.RegisterSessionSkillEnv(session, declared...)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	c.s.logf("serve: session %s: skill variables %v registered, %v refused", session, withoutNames(declared, refused), refused)
	return map[string]any{
		"session":    session,
		"names":      declared,
		"registered": withoutNames(declared, refused),
		"refused":    nonNil(refused),
	}, nil
}

// describe returns the execute_code tool for a model, as Hermes's
// build_execute_code_schema builds it ({"name", "description",
// "parameters"}), for the mode ("" = configured) and enabled tools (all
// seven when absent) given.
func (c *conn) describe(params json.RawMessage) (any, *rpcError) {
	p, rerr := paramsObject(params, "mode", "tools", "enabled_tools")
	if rerr != nil {
		return nil, rerr
	}
	mode, rerr := stringParam(p, "mode", false)
	if rerr != nil {
		return nil, rerr
	}
	if mode != "" {
		if _, ok := executor.NormalizeMode(mode); !ok {
			return nil, invalidParams("mode must be \"strict\" or \"project\", not %q", mode)
		}
	}
	tools, rerr := toolsParam(p)
	if rerr != nil {
		return nil, rerr
	}
	return executor.ExecuteCodeSchema(c.s.cfg, mode, tools), nil
}

// withoutNames is names less those in drop, never nil.
func withoutNames(names, drop []string) []string {
	out := []string{}
	for _, n := range names {
		if !slices.Contains(drop, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// nonNil is s, or an empty list for nil (JSON [] rather than null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// approve asks this connection's client to approve ar for the execute
// request id, and waits for its answer (until ctx is done, which the
// executor's approval timeout ensures). An error answer, a malformed
// result or a closed connection mean no approval.
func (c *conn) approve(ctx context.Context, id json.RawMessage, ar executor.ApprovalRequest) (executor.Decision, error) {
	params := map[string]any{"type": ar.Type, "session": ar.Session}
	if ar.Type == config.ApproveScript {
		params["code"] = ar.Code
	} else {
		params["command"] = ar.Command
	}
	if ar.Reason != "" {
		params["reason"] = ar.Reason
	}
	m, err := c.request(ctx, "approve", id, params, ar.Type)
	if err != nil {
		return executor.Decision{}, err
	}
	var d struct {
		Approved *bool  `json:"approved"`
		Scope    string `json:"scope"`
	}
	if json.Unmarshal(m.Result, &d) != nil || d.Approved == nil {
		return executor.Decision{}, errors.New(`the client's answer is not {"approved": true|false, "scope": ...}`)
	}
	switch d.Scope {
	case "", config.ScopeOnce, config.ScopeSession, config.ScopeAlways:
	default:
		return executor.Decision{}, fmt.Errorf("the client's answer has an unknown scope %q (once, session or always)", d.Scope)
	}
	return executor.Decision{Approved: *d.Approved, Scope: d.Scope}, nil
}

// toolCall runs a call of a delegated tool: it asks this connection's
// client with a tool_call request for the execute request id, and waits
// for its answer until ctx (the script's run) is done. The client's result
// object is the tool's result; an error answer, another result or a
// closed connection are an error result the script sees.
func (c *conn) toolCall(ctx context.Context, id json.RawMessage, session, tool string, args json.RawMessage) map[string]any {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	params := map[string]any{"tool": tool, "args": args, "session": session}
	fail := func(err error) map[string]any {
		return map[string]any{"error": fmt.Sprintf("Delegated tool %s failed: %v", tool, err)}
	}
	m, err := c.request(ctx, "tool_call", id, params, tool)
	if err != nil {
		return fail(err)
	}
	// Numbers stay as the client wrote them (no float64 rounding).
	dec := json.NewDecoder(bytes.NewReader(m.Result))
	dec.UseNumber()
	var res map[string]any
	if err := dec.Decode(&res); err != nil || res == nil {
		return fail(errors.New("the client's result is not a JSON object"))
	}
	return res
}

// request sends the client a server-to-client request (approve,
// tool_call) for the execute request id (its params get "request_id"
// unless the execute was a notification), and waits for its answer until
// ctx is done. An error answer and a closed connection are errors. what
// names the request in the debug log.
func (c *conn) request(ctx context.Context, method string, id json.RawMessage, params map[string]any, what string) (*rpcMessage, error) {
	select {
	case <-c.eof:
		return nil, errors.New("the client's connection is closed")
	default:
	}
	sid := newRequestID()
	ch := make(chan answer, 1)
	c.mu.Lock()
	c.pending[sid] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, sid)
		c.mu.Unlock()
	}()
	if id != nil {
		params["request_id"] = id
	}
	idJSON, _ := json.Marshal(sid)
	c.send(rpcMessage{JSONRPC: "2.0", ID: idJSON, Method: method, Params: params})
	c.s.logf("serve: -> %s %s (%s) for request %s", method, logID(sid), what, orNull(id))
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, a.err
		}
		return &rpcMessage{Result: a.result}, nil
	case <-c.eof:
		return nil, errors.New("the client's connection closed before it answered")
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// newRequestID returns a fresh id for a server-to-client request: "srv-"
// and 128 random bits in hex. Whoever answers must have read the request:
// a process that can write into the client's stream (a helper a script
// left behind, writing to /proc/<serve>/fd/0) cannot guess it.
func newRequestID() string {
	b := make([]byte, requestIDBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand aborts the program instead)
	return "srv-" + hex.EncodeToString(b)
}

// answered routes a client's response to the server request it answers:
// only to a request of this connection that still waits, and only once. A
// response with any other id (unknown, already answered, given up on, or
// sent on another connection) is dropped, and never answered. A response
// with a waiting id that is not a proper JSON-RPC 2.0 response (no
// "jsonrpc": "2.0", or both result and error, or a malformed error) reaches
// the request as an error: no approval, a failed tool call.
func (c *conn) answered(id json.RawMessage, m map[string]json.RawMessage) {
	var sid string
	if json.Unmarshal(id, &sid) != nil {
		sid = ""
	}
	c.mu.Lock()
	ch, ok := c.pending[sid]
	delete(c.pending, sid)
	c.mu.Unlock()
	if !ok {
		c.s.logf("serve: dropped a response with id %s: no request of this connection with that id waits for an answer (unknown, already answered or given up)", logID(string(id)))
		return
	}
	a := answer{result: m["result"]}
	_, hasResult := m["result"]
	rawErr, hasError := m["error"]
	if hasError && string(compact(rawErr)) == "null" {
		hasError = false // some clients send "error": null beside a result
	}
	var version string
	switch {
	case json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0":
		a.err = errors.New(`the client's answer is not a JSON-RPC 2.0 response ("jsonrpc" must be "2.0")`)
	case hasResult && hasError:
		a.err = errors.New("the client's answer has both a result and an error")
	case !hasError && !hasResult:
		a.err = errors.New("the client's answer has neither a result nor an error")
	case hasError:
		var e rpcError
		if json.Unmarshal(rawErr, &e) != nil {
			a.err = errors.New("the client answered with a malformed error object")
		} else {
			a.err = fmt.Errorf("the client answered with an error: %s", e.Message)
		}
	}
	if a.err != nil {
		c.s.logf("serve: the answer to %s is an error: %v", logID(sid), a.err)
	}
	ch <- a
}

// logID shortens a request id for the debug log: enough to tell requests
// apart, not enough to answer one from a copy of the log.
func logID(id string) string {
	if len(id) > 12 {
		return strings.ToValidUTF8(id[:12], "") + "…"
	}
	return id
}

// answer is a client's answer to a server request: its result, or why
// there is none.
type answer struct {
	result json.RawMessage
	err    error
}

// lockedWriter serializes writes (stderr is shared by logs and the
// executor's progress notices).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
