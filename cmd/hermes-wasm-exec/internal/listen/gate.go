package listen

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// refusalLogEvery is the least time between two log lines about refused
// connections: a flood of connections is one line per period, with a
// count, not a line each.
const refusalLogEvery = 10 * time.Second

// Gated returns ln with a cap on the connections that have not
// authenticated yet: at most max of them (0: no cap) are open at a time.
// A connection accepted beyond the cap is closed at once, and logf says
// why (one line per refusalLogEvery at most, counting the others). A
// connection counts from its accept until Authenticated is called with
// it or it is closed. A client with the token is never held up by
// others for longer than the time they have to authenticate (serve's
// --auth-timeout, mcp's header timeout): the cap bounds what clients
// without it can hold, not the clients that have it.
func Gated(ln net.Listener, max int, logf func(string, ...any)) net.Listener {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &gatedListener{Listener: ln, g: &gate{max: max, logf: logf, logEvery: refusalLogEvery}}
}

// Authenticated tells c's listener that c has authenticated: it no
// longer counts against the cap. Idempotent; a connection from another
// listener is left alone.
func Authenticated(c net.Conn) {
	if gc, ok := c.(*gatedConn); ok {
		gc.authed.Store(true)
		gc.release()
	}
}

// Unauthenticated reports whether c is a connection of a Gated listener
// that has not authenticated (Authenticated) yet.
func Unauthenticated(c net.Conn) bool {
	gc, ok := c.(*gatedConn)
	return ok && !gc.authed.Load()
}

// gate counts the connections that have not authenticated.
type gate struct {
	max      int
	logf     func(string, ...any)
	logEvery time.Duration // refusalLogEvery; tests change it

	mu      sync.Mutex
	n       int       // connections that have not authenticated
	refused int       // refusals not logged yet
	logged  time.Time // when the last refusal was logged
}

// admit counts a new connection, or reports false (and logs, rate
// limited) when the cap is reached.
func (g *gate) admit(from net.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.max <= 0 || g.n < g.max {
		g.n++
		return true
	}
	g.refused++
	if now := time.Now(); now.Sub(g.logged) >= g.logEvery {
		more := ""
		if g.refused > 1 {
			more = fmt.Sprintf(" (with this one, %d refused since the last such line)", g.refused)
		}
		g.logf("refused a connection from %s: %d connections have not authenticated yet, the cap (--max-unauthenticated)%s", from, g.max, more)
		g.logged, g.refused = now, 0
	}
	return false
}

func (g *gate) release() {
	g.mu.Lock()
	g.n--
	g.mu.Unlock()
}

type gatedListener struct {
	net.Listener
	g *gate
}

// Accept returns the next connection the cap admits; the others are
// closed at once.
func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.g.admit(c.RemoteAddr()) {
			return &gatedConn{Conn: c, g: l.g}, nil
		}
		c.Close()
	}
}

// gatedConn is an admitted connection: it leaves the count when it
// authenticates or closes, whichever comes first.
type gatedConn struct {
	net.Conn
	g      *gate
	authed atomic.Bool
	once   sync.Once
}

func (c *gatedConn) release() { c.once.Do(c.g.release) }

func (c *gatedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection, as net/http does before it
// closes one, so that the client reads the last response (a 401) before
// the close resets the connection.
func (c *gatedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
