//go:build unix

package cli

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ReaderGone reports whether nobody reads w any more: w is a pipe whose
// read end is closed (POLLERR) or a socket or terminal that hung up
// (POLLHUP). It polls until that happens (true) or stop is closed, or w
// is not a file it can poll (false).
func ReaderGone(w io.Writer, stop <-chan struct{}) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	for {
		select {
		case <-stop:
			return false
		default:
		}
		var revents int16
		var perr error
		// Events 0: only POLLERR, POLLHUP and POLLNVAL are reported. The
		// timeout bounds how long a closed stop goes unseen.
		if err := rc.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd)}}
			_, perr = unix.Poll(fds, 250)
			revents = fds[0].Revents
		}); err != nil {
			return false
		}
		switch {
		case perr != nil && !errors.Is(perr, unix.EINTR):
			return false
		case revents&(unix.POLLERR|unix.POLLHUP) != 0:
			return true
		case revents&unix.POLLNVAL != 0:
			return false
		}
	}
}
