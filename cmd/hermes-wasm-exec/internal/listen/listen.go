// Package listen is what `serve --listen` and `mcp --http` share about
// the listener they serve clients on: the token a TCP client must present
// (given, read from an owner-only file, or generated into one: a TCP
// listener never serves without one), a Unix socket created owner-only
// with no moment when it is wider, and the cap on connections that have
// not authenticated yet. Loopback is no trust boundary on a shared host:
// any local user can reach a loopback port, so the token is what keeps
// them out; a Unix socket's mode keeps them out instead.
//
// It imports the standard library and golang.org/x/sys; the serve and
// mcpserver packages import it.
package listen

import (
	"fmt"
	"net"
	"os"
	"time"
)

// Listen listens on a TCP address, or on a Unix socket at address that
// only its owner may connect to (mode 0600, see listenUnix). A stale
// socket file left by a dead server is replaced; a live one, or a file
// that is not a socket, is an error. Closing a Unix listener removes its
// socket file.
func Listen(network, address string) (net.Listener, error) {
	if network != "unix" {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, fmt.Errorf("cannot listen on %s:%s: %w", network, address, err)
		}
		return ln, nil
	}
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
	ln, err := listenUnix(address)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on unix:%s: %w", address, err)
	}
	return ln, nil
}

// unixListener is a Unix socket listener that reports, and removes when
// it closes, the path it was moved to.
type unixListener struct {
	*net.UnixListener
	path string
}

func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	os.Remove(l.path)
	return err
}
