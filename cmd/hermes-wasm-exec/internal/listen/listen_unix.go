//go:build unix

package listen

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// listenUnix binds a socket that only its owner may connect to, with no
// moment when anyone else could: it is bound in a new dir only the owner
// may enter (0700), made 0600 there, then renamed to path (the same
// file system: the new dir is beside path). A chmod after binding at
// path would leave a window, however short, in which the socket has the
// umask's mode.
func listenUnix(path string) (net.Listener, error) {
	// A short name: the socket's path while it is bound there must fit
	// the 104 bytes of sun_path (macOS; 108 on Linux) too.
	dir, err := os.MkdirTemp(filepath.Dir(path), ".hs-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		if len(tmp) >= 104 {
			return nil, fmt.Errorf("%w (the path is too long for a socket: give a shorter one)", err)
		}
		return nil, err
	}
	// The socket file is moved: the listener must not remove the old name.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	return &unixListener{UnixListener: ln, path: path}, nil
}
