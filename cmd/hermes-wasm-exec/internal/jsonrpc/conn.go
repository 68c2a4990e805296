package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/wire"
)

// MaxUnauthenticatedLine bounds a line (its newline not counted) of a
// connection that must authenticate and has not yet: a peer without the
// token cannot make this side hold more than this of its input. As on the
// project-mode tool socket (native), a longer line closes the connection.
const MaxUnauthenticatedLine = 4 << 10

// AuthenticateMethod is the method a connection with Options.Token calls
// first, with params {"token": "..."}. A connection without a token gets
// {"authenticated": true} for it.
const AuthenticateMethod = "authenticate"

// Options configures a connection.
type Options struct {
	// MaxLine bounds one line (one message, its newline not counted) once
	// the connection needs no authentication or has authenticated. A
	// longer line gets an error and is skipped, never held whole.
	MaxLine int
	// Token, when set, is what the client must give authenticate before
	// anything else: until then every other call is answered
	// CodeUnauthorized, and a line over MaxUnauthenticatedLine (or a wrong
	// token) closes the connection.
	Token string
	// AuthTimeout, with Token, is how long the connection has to
	// authenticate: when it passes first, the client gets an error and
	// the connection is closed. It needs a closer with SetReadDeadline (a
	// net.Conn); 0 means no limit.
	AuthTimeout time.Duration
	// Authenticated, when set, is called each time authenticate
	// succeeds.
	Authenticated func()
	// Handle is called by the connection's reader for each request and
	// notification but authenticate, in the order they arrive. It answers
	// with Conn.Reply; work that takes time goes in Conn.Go, so that the
	// next line is read meanwhile.
	Handle func(*Request)
	// Debugf receives the debug log; Infof what is worth telling at every
	// log level. nil discards.
	Debugf, Infof func(string, ...any)
}

// Conn is one client's connection: a stream of lines both ways.
type Conn struct {
	opts   Options
	r      io.Reader
	closer io.Closer // nil for stdin/stdout
	authed atomic.Bool

	wmu sync.Mutex
	w   io.Writer

	calls sync.WaitGroup // the handlers started with Go
	eof   chan struct{}  // closed when nothing more can be read

	// gone is closed when the client can no longer be written to (a
	// write failed, or Lost was called).
	gone     chan struct{}
	goneOnce sync.Once

	// pending holds this connection's requests to the client that await
	// an answer, by id. An answer is looked up here only: one that
	// arrives on another connection, or after the first answer, finds
	// nothing.
	mu      sync.Mutex
	pending map[string]chan answer
}

// NewConn returns a connection that reads r and writes w; closer (nil for
// stdin/stdout) ends it. Serve runs it.
func NewConn(r io.Reader, w io.Writer, closer io.Closer, opts Options) *Conn {
	if opts.Debugf == nil {
		opts.Debugf = func(string, ...any) {}
	}
	if opts.Infof == nil {
		opts.Infof = func(string, ...any) {}
	}
	return &Conn{
		opts: opts, r: r, w: w, closer: closer,
		eof: make(chan struct{}), gone: make(chan struct{}),
		pending: map[string]chan answer{},
	}
}

// Close closes the connection's stream (nothing for stdin/stdout).
func (c *Conn) Close() {
	if c.closer != nil {
		c.closer.Close()
	}
}

// Lost marks the client as gone: nothing more is written to it, and a
// socket connection is closed (its reader ends). See Gone.
func (c *Conn) Lost() {
	c.goneOnce.Do(func() {
		close(c.gone)
		c.Close()
	})
}

// Gone is closed once the client can no longer be written to: a write
// failed, or Lost was called.
func (c *Conn) Gone() <-chan struct{} { return c.gone }

// Go runs f, a request's handler, in its own goroutine; Serve waits for it
// before it returns.
func (c *Conn) Go(f func()) {
	c.calls.Add(1)
	go func() {
		defer c.calls.Done()
		f()
	}()
}

// send writes one message as one line.
func (c *Conn) send(m any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		c.opts.Infof("cannot encode a response: %v", err)
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
		c.opts.Debugf("write: %v", err)
		c.Lost()
	}
}

// Reply answers request id with result, or with rerr when it is not nil.
// A notification (id nil) gets nothing; its error is logged.
func (c *Conn) Reply(id json.RawMessage, result any, rerr *Error) {
	if id == nil {
		if rerr != nil {
			c.opts.Infof("notification failed: %s", rerr.Message)
		}
		return
	}
	if rerr != nil {
		c.send(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *Error          `json:"error"`
		}{"2.0", id, rerr})
		return
	}
	c.send(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
}

// Serve reads the connection's messages until it ends, then waits for the
// handlers started with Go.
func (c *Conn) Serve() {
	defer c.calls.Wait()
	defer close(c.eof)
	var r *bufio.Reader
	gated := c.opts.Token != "" && !c.authed.Load()
	if gated {
		// Until authenticate succeeds, the buffer is the limit: nothing
		// more than one line of MaxUnauthenticatedLine is ever read ahead.
		r = bufio.NewReaderSize(c.r, MaxUnauthenticatedLine+1)
		if d, ok := c.closer.(readDeadliner); ok && c.opts.AuthTimeout > 0 {
			_ = d.SetReadDeadline(time.Now().Add(c.opts.AuthTimeout))
		}
		// Writes too: a client that sends requests and never reads their
		// answers would otherwise block the reply, and with it this loop
		// and its read deadline, for good, holding one of the few
		// unauthenticated slots.
		if d, ok := c.closer.(writeDeadliner); ok && c.opts.AuthTimeout > 0 {
			_ = d.SetWriteDeadline(time.Now().Add(c.opts.AuthTimeout))
		}
	} else {
		r = bufio.NewReaderSize(c.r, 64<<10)
	}
	for {
		max := c.opts.MaxLine
		if gated {
			max = MaxUnauthenticatedLine
		}
		line, err := wire.ReadLine(r, max, !gated)
		switch {
		case errors.Is(err, wire.ErrLineTooLarge) && gated:
			c.opts.Infof("a client that has not authenticated sent a line over %d KiB; connection closed", MaxUnauthenticatedLine>>10)
			c.rejectSlowly()
			c.Reply(nullID, nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("Invalid request: a line sent before authenticate is limited to %d KiB; closing the connection (call authenticate with the server's token first)", MaxUnauthenticatedLine>>10)})
			return
		case errors.Is(err, wire.ErrLineTooLarge):
			c.Reply(nullID, nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("Invalid request: the line is larger than %s, the limit for one message; it was skipped", sizeString(c.opts.MaxLine))})
			continue
		case errors.Is(err, os.ErrDeadlineExceeded) && gated:
			c.opts.Debugf("a client did not authenticate within %v; connection closed", c.opts.AuthTimeout)
			c.rejectSlowly()
			c.Reply(nullID, nil, &Error{Code: CodeUnauthorized, Message: fmt.Sprintf("Unauthorized: authenticate was not called within %v; closing the connection (call authenticate with the server's token first)", c.opts.AuthTimeout)})
			return
		case errors.Is(err, io.ErrUnexpectedEOF) && len(line) > 0:
			c.handle(line) // a last line without its newline
			return
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.opts.Debugf("read: %v", err)
			}
			return
		}
		if !c.handle(line) {
			return
		}
		if gated && c.authed.Load() {
			// Authenticated: from now on lines up to MaxLine. The new
			// reader starts with what the small one has read ahead.
			gated = false
			r = bufio.NewReaderSize(r, 64<<10)
		}
	}
}

// readDeadliner is a connection whose reads can be given a deadline.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// writeDeadliner is a connection whose writes can be given a deadline.
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// rejectSlowly bounds the write of the last answer to a client that has
// not authenticated: one that does not read must not hold the server up.
func (c *Conn) rejectSlowly() {
	if nc, ok := c.closer.(net.Conn); ok {
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	}
}

// handle dispatches one line; false ends the connection.
func (c *Conn) handle(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return true
	}
	if !json.Valid(line) {
		c.Reply(nullID, nil, &Error{Code: CodeParseError, Message: "Parse error: the line is not valid JSON (send one JSON-RPC 2.0 object per line)"})
		return true
	}
	if line[0] != '{' {
		msg := "Invalid request: expected a JSON object"
		if line[0] == '[' {
			msg = "Invalid request: batches are not supported; send one request object per line"
		}
		c.Reply(nullID, nil, &Error{Code: CodeInvalidRequest, Message: msg})
		return true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.Reply(nullID, nil, &Error{Code: CodeParseError, Message: "Parse error: " + err.Error()})
		return true
	}
	id, hasID := m["id"]
	if hasID {
		switch id = compact(id); {
		case string(id) == "null":
		case id[0] == '"':
		case id[0] == '-' || id[0] >= '0' && id[0] <= '9':
		default:
			c.Reply(nullID, nil, &Error{Code: CodeInvalidRequest, Message: "Invalid request: id must be a string, a number or null"})
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
		c.Reply(IDOrNull(id), nil, &Error{Code: CodeInvalidRequest, Message: "Invalid request: method is missing"})
		return true
	}
	var method string
	if err := json.Unmarshal(rawMethod, &method); err != nil {
		c.Reply(IDOrNull(id), nil, &Error{Code: CodeInvalidRequest, Message: "Invalid request: method must be a string"})
		return true
	}
	var version string
	if err := json.Unmarshal(m["jsonrpc"], &version); err != nil || version != "2.0" {
		c.Reply(IDOrNull(id), nil, &Error{Code: CodeInvalidRequest, Message: `Invalid request: "jsonrpc" must be "2.0"`})
		return true
	}
	c.opts.Debugf("<- %s id=%s", method, IDOrNull(id))

	if c.opts.Token != "" && !c.authed.Load() && method != AuthenticateMethod {
		c.Reply(id, nil, &Error{Code: CodeUnauthorized, Message: "Unauthorized: call authenticate with the server's token first"})
		return true
	}
	if method == AuthenticateMethod {
		return c.authenticate(id, m["params"])
	}
	c.opts.Handle(&Request{ID: id, Method: method, Params: m["params"]})
	return true
}

// authenticate checks the token of an authenticate call; false (a wrong
// token) ends the connection.
func (c *Conn) authenticate(id json.RawMessage, params json.RawMessage) bool {
	p, rerr := ParamsObject(params, "token")
	if rerr == nil && c.opts.Token != "" {
		var tok string
		if raw, ok := p["token"]; !ok {
			rerr = InvalidParams("token is required")
		} else if json.Unmarshal(raw, &tok) != nil {
			rerr = InvalidParams("token must be a string")
		} else if !wire.TokenEqual(tok, []byte(c.opts.Token)) {
			c.Reply(id, nil, &Error{Code: CodeUnauthorized, Message: "Unauthorized: wrong token; closing the connection"})
			c.opts.Infof("a client gave a wrong token; connection closed")
			return false
		}
	}
	if rerr != nil {
		c.Reply(id, nil, rerr)
		return true
	}
	if c.opts.Token != "" {
		if d, ok := c.closer.(readDeadliner); ok && c.opts.AuthTimeout > 0 {
			_ = d.SetReadDeadline(time.Time{}) // authenticated: no deadline any more
		}
		if d, ok := c.closer.(writeDeadliner); ok && c.opts.AuthTimeout > 0 {
			_ = d.SetWriteDeadline(time.Time{})
		}
		if c.opts.Authenticated != nil {
			c.opts.Authenticated()
		}
	}
	c.authed.Store(true)
	c.Reply(id, map[string]bool{"authenticated": true}, nil)
	return true
}
