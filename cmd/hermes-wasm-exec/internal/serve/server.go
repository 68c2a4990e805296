package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/jsonrpc"
	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/listen"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

var serveMethods = []string{"execute", "open_session", "register_skill", "describe", "interrupt", "close_session", "fork_session", "shutdown", jsonrpc.AuthenticateMethod}

// backend is what the server asks of the executor (an interface so that
// the framing fuzz test can run without interpreters).
type backend interface {
	// Start starts a call, taking its session's place in the queue at once
	// (executor.Executor.Start): calls of one session run in the order
	// they arrive.
	Start(ctx context.Context, req executor.Request) pending
	Interrupt(session, reason string) bool
	CloseSession(ctx context.Context, session string)
	ForkSession(ctx context.Context, from, to string) (int, error)
	RegisterSessionSkillEnv(session string, names ...string) ([]string, error)
	// OpenSession, DelegatedTools and ForgetClient keep each connection's
	// delegation on the executor's session (executor.SessionOptions).
	OpenSession(session string, opts executor.SessionOptions) error
	DelegatedTools(session, client string) []string
	ForgetClient(client string)
}

// pending is a started call.
type pending interface {
	Wait() (executor.Result, error)
}

// executorBackend is the executor as a backend.
type executorBackend struct{ *executor.Executor }

func (b executorBackend) Start(ctx context.Context, req executor.Request) pending {
	return b.Executor.Start(ctx, req)
}

// server is the executor behind every connection.
type server struct {
	ex    backend
	logf  func(string, ...any)
	infof func(string, ...any)
	token string // required by authenticate on TCP connections
	// authTimeout is how long a TCP connection has to authenticate
	// (--auth-timeout); 0: no limit.
	authTimeout time.Duration
	// maxLine is the longest line of a client once authenticated
	// (maxRPCLine; tests lower it).
	maxLine int
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
	conns   map[*client]struct{}
}

func newServer(ex backend, logf, infof func(string, ...any)) *server {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &server{
		ex: ex, logf: logf, infof: infof, maxLine: maxRPCLine,
		ctx: ctx, cancel: cancel,
		shutdownReq: make(chan struct{}),
		conns:       map[*client]struct{}{},
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
	s.cancel(&executor.InterruptError{Reason: "the server is shutting down"})
	done := make(chan struct{})
	go func() {
		s.calls.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cli.ShutdownGrace):
		s.infof("calls still running after %v; closing anyway", cli.ShutdownGrace)
	}
	s.mu.Lock()
	conns := make([]*client, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.conn.Close()
	}
}

// accept serves the connections of a listener until it is closed.
func (s *server) accept(ln net.Listener, needAuth bool) {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors in a flood, say: wait and go on, as
			// net/http does, rather than stop accepting for good.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.infof("accept: %v; retrying in %v", err, backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if closing {
			nc.Close()
			continue
		}
		c := s.newClient(nc, nc, nc, needAuth)
		s.logf("serve: client connected from %s", nc.RemoteAddr())
		go func() {
			c.serve()
			c.conn.Close()
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

// client is one connection: its JSON-RPC connection, and its name on the
// executor's sessions (the tools it runs itself for a session, from
// open_session, are registered there under it).
type client struct {
	s    *server
	conn *jsonrpc.Conn
	id   string // executor.SessionOptions.Client
}

// clients numbers the connections, for their names on the executor.
var clients atomic.Uint64

// newClient serves a connection on r and w (closer ends it; nil for
// stdin/stdout); needAuth: it must authenticate with the server's token
// first.
func (s *server) newClient(r io.Reader, w io.Writer, closer io.Closer, needAuth bool) *client {
	c := &client{s: s, id: fmt.Sprintf("serve-%d", clients.Add(1))}
	opts := jsonrpc.Options{
		MaxLine: s.maxLine,
		Handle:  c.handle,
		Debugf:  func(format string, a ...any) { s.logf("serve: "+format, a...) },
		Infof:   s.infof,
	}
	if needAuth {
		opts.Token = s.token
		opts.AuthTimeout = s.authTimeout
		if nc, ok := closer.(net.Conn); ok {
			// It no longer counts against --max-unauthenticated.
			opts.Authenticated = func() { listen.Authenticated(nc) }
		}
	}
	c.conn = jsonrpc.NewConn(r, w, closer, opts)
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c
}

// serve serves the connection until it ends and its running calls have
// answered.
func (c *client) serve() {
	c.conn.Serve()
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	c.s.ex.ForgetClient(c.id)
}

// handle answers a request in arrival order: the session methods at once
// (so that an execute sent after one sees its effect), the others once
// they have their place (an execute in its session's queue) in a handler
// of their own.
func (c *client) handle(r *jsonrpc.Request) {
	id, method, params := r.ID, r.Method, r.Params
	switch method {
	case "shutdown":
		c.conn.Reply(id, struct{}{}, nil)
		c.s.requestShutdown()
		return
	case "open_session", "register_skill", "describe":
		// Answered here, in arrival order, so that an execute sent after
		// it sees its delegation and skill variables.
		var result any
		var rerr *jsonrpc.Error
		switch method {
		case "open_session":
			result, rerr = c.openSession(params)
		case "register_skill":
			result, rerr = c.registerSkill(params)
		default:
			result, rerr = c.describe(params)
		}
		c.conn.Reply(id, result, rerr)
		return
	case "execute", "interrupt", "close_session", "fork_session":
	default:
		c.conn.Reply(id, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %q (methods: %s)", method, strings.Join(serveMethods, ", "))})
		return
	}
	var req executor.Request
	var override []string
	var stream bool
	if method == "execute" {
		var rerr *jsonrpc.Error
		var problem string
		if req, override, stream, problem, rerr = executeRequest(params); rerr != nil {
			c.conn.Reply(id, nil, rerr)
			return
		}
		if problem != "" {
			// Hermes's answer to a misdirected call: a result the model
			// reads, not a protocol error.
			mode, _ := config.NormalizeMode(cmp.Or(req.Mode, c.s.cfg.CodeExecution.Mode))
			c.conn.Reply(id, cli.ArgumentResult(mode, problem), nil)
			return
		}
	}
	if !c.s.begin() {
		c.conn.Reply(id, nil, &jsonrpc.Error{Code: jsonrpc.CodeShuttingDown, Message: "The server is shutting down"})
		return
	}
	var call func() (any, *jsonrpc.Error)
	if method == "execute" {
		call = c.execute(id, req, override, stream) // takes the session's place now, in arrival order
	}
	c.conn.Go(func() {
		defer c.s.calls.Done()
		var result any
		var rerr *jsonrpc.Error
		switch method {
		case "execute":
			result, rerr = call()
		case "interrupt":
			result, rerr = c.interrupt(params)
		case "close_session":
			result, rerr = c.closeSession(params)
		case "fork_session":
			result, rerr = c.forkSession(params)
		}
		c.conn.Reply(id, result, rerr)
	})
}
