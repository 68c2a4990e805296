//go:build windows

package listen

import "net"

// listenUnix binds a Unix socket at path. Windows has no file modes: the
// socket file gets its dir's ACL, so put it in a dir only the user may
// open.
func listenUnix(path string) (net.Listener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	return &unixListener{UnixListener: ln, path: path}, nil
}
