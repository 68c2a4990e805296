package nativeengine

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/wire"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// maxSocketPath keeps Unix socket paths under the smallest sun_path limit
// (104 bytes on macOS, 108 on Linux).
const maxSocketPath = 100

// Server is the host side of project mode's tool RPC. The framing is the
// same on both transports: the script sends one JSON object per line,
//
//	{"token": "<HERMES_RPC_TOKEN>", "tool": "read_file", "args": {...}}\n
//	{"token": "<HERMES_RPC_TOKEN>", "op": "exit", "exit": {...}}\n
//
// and gets exactly one JSON object per line back, in order, on the same
// connection. The token is compared in constant time on every request; a
// bad token, malformed JSON or a line over engine.MaxRequest gets an error object
// ({"error": "..."}) and the server goes on. Until a connection has sent
// the token once (the generated module opens each connection with
// {"token": ..., "op": "hello"}), its lines are limited to 4 KiB, and a
// longer one closes it. Each connection is served by
// its own goroutine, so a script's threads (one connection each) call
// tools in parallel; the broker enforces the budget across all of them.
// The server itself only authenticates and frames: every request line
// after the hello goes to its Handler (a *engine.Broker for a one-shot run,
// a kernel's engine.Dispatcher through handlerFunc).
type Server struct {
	ln      net.Listener
	address string // the value of HERMES_RPC_SOCKET
	token   []byte
	handler callHandler
	ctx     context.Context
	cancel  context.CancelFunc
	cleanup func()

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// callHandler answers one request line of an authenticated connection with
// one response line (JSON, newline-terminated). token is the server's
// token, which the request must carry. *engine.Broker is a callHandler.
type callHandler interface {
	ServeToken(ctx context.Context, line, token []byte) []byte
}

// handlerFunc adapts a function to callHandler, such as a kernel dispatcher's
// Serve: handlerFunc(d.Serve).
type handlerFunc func(ctx context.Context, line, token []byte) []byte

// ServeToken calls f.
func (f handlerFunc) ServeToken(ctx context.Context, line, token []byte) []byte {
	return f(ctx, line, token)
}

// listenRPC starts a server for handler on transport. A Unix socket is created
// in dir (which must be private, 0700) as rpc.sock, mode 0600; when that
// path would be too long for a socket, in a fresh private dir under the
// system temp dir instead. Tool calls run with ctx; Close cancels it.
func listenRPC(ctx context.Context, transport, dir string, handler callHandler) (*Server, error) {
	var ln net.Listener
	var address string
	cleanup := func() {}
	switch transport {
	case native.TransportTCP:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listening on loopback TCP for tool calls: %w", err)
		}
		ln, address = l, "tcp://"+l.Addr().String()
	case native.TransportUnix:
		// Absolute: the address is used by a child in another working dir.
		path, err := filepath.Abs(filepath.Join(dir, "rpc.sock"))
		if err != nil {
			return nil, fmt.Errorf("locating the RPC socket: %w", err)
		}
		if len(path) > maxSocketPath {
			short, err := shortSocketDir()
			if err != nil {
				return nil, err
			}
			path = filepath.Join(short, "rpc.sock")
			cleanup = func() { os.RemoveAll(short) }
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("listening on %s for tool calls: %w", path, err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			l.Close()
			cleanup()
			return nil, fmt.Errorf("securing %s: %w", path, err)
		}
		ln, address = l, path
	default:
		return nil, fmt.Errorf("unknown RPC transport %q: use %q or %q", transport, native.TransportUnix, native.TransportTCP)
	}
	s := newServer(ctx, ln, address, handler)
	s.cleanup = cleanup
	return s, nil
}

// newServer serves handler on the connections ln accepts; address is
// what HERMES_RPC_SOCKET tells the script. Tool calls run with ctx; Close
// cancels it.
func newServer(ctx context.Context, ln net.Listener, address string, handler callHandler) *Server {
	tok := make([]byte, 32)
	rand.Read(tok) // never fails (crypto/rand)
	s := &Server{
		ln:      ln,
		address: address,
		token:   []byte(hex.EncodeToString(tok)),
		handler: handler,
		conns:   map[net.Conn]struct{}{},
		cleanup: func() {},
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go s.accept()
	return s
}

// shortSocketDir makes a private dir with a short path for a Unix socket.
func shortSocketDir() (string, error) {
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		d, err := os.MkdirTemp(parent, "hrpc-")
		if err != nil {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if len(d)+len("/rpc.sock") <= maxSocketPath {
			return d, nil
		}
		os.RemoveAll(d)
	}
	return "", errors.New("no temp dir with a path short enough for a Unix socket: set TMPDIR to a short path, or use the tcp transport")
}

// Address is the value of HERMES_RPC_SOCKET: a socket path, or
// tcp://127.0.0.1:PORT.
func (s *Server) Address() string { return s.address }

// Token is the value of HERMES_RPC_TOKEN.
func (s *Server) Token() string { return string(s.token) }

func (s *Server) accept() {
	defer s.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			// Out of file descriptors, say: wait and try again rather than
			// leave the script's next connection hanging until its timeout.
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// maxUnauthenticatedFrame bounds the lines of a connection that has not
// yet sent the token: a local peer without it cannot make the host buffer
// big frames. The generated module authenticates each connection with a
// hello line when it opens it.
const maxUnauthenticatedFrame = 4 << 10

// serve answers one connection's requests in order until it closes.
func (s *Server) serve(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
		s.wg.Done()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	authed := false
	for {
		limit := engine.MaxRequest
		if !authed {
			limit = maxUnauthenticatedFrame
		}
		line, err := wire.ReadLine(r, limit, true)
		var resp []byte
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return // the peer went away mid-request
		case errors.Is(err, wire.ErrLineTooLarge) && !authed:
			c.Write([]byte(`{"error": "Unauthorized: a connection must send this execution's HERMES_RPC_TOKEN before a request over 4 KiB."}` + "\n"))
			return
		case errors.Is(err, wire.ErrLineTooLarge):
			resp = []byte(engine.TooLargeReply) // discarded up to its newline; the connection stays usable
		case err != nil:
			return
		case !authed:
			var hello struct {
				Token string `json:"token"`
				Op    string `json:"op"`
			}
			if json.Unmarshal(line, &hello) == nil && wire.TokenEqual(hello.Token, s.token) {
				authed = true
			}
			if hello.Op == "hello" {
				resp = []byte(`{"ok": true}` + "\n")
				if !authed {
					resp = []byte(`{"error": "` + engine.ErrUnauthorized + `"}` + "\n")
				}
				break
			}
			resp = s.handler.ServeToken(s.ctx, line, s.token)
		default:
			resp = s.handler.ServeToken(s.ctx, line, s.token)
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// Close stops accepting, cancels running tool calls, closes every
// connection and waits for their goroutines. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	s.cleanup()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
