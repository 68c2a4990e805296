package listen

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestListenUnixNoWindow: the socket never exists at its path with a
// wider mode than 0600, even for an instant under a umask of 0: inotify
// sees the path appear by a rename (of a socket already 0600, bound in a
// private dir), never created there by bind and changed afterwards (a
// chmod after bind leaves a window in which any user may connect). Not
// parallel: it changes the umask.
func TestListenUnixNoWindow(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	require.NoError(t, err)
	defer unix.Close(fd)
	_, err = unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_ATTRIB|unix.IN_MOVED_TO)
	require.NoError(t, err)

	sock := filepath.Join(dir, "s.sock")
	ln, err := Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The events are queued by now: the calls that made them returned.
	var seen []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			break
		}
		require.NoError(t, err)
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if string(bytes.TrimRight(name, "\x00")) != "s.sock" {
				continue
			}
			switch {
			case ev.Mask&unix.IN_CREATE != 0:
				seen = append(seen, "create")
			case ev.Mask&unix.IN_ATTRIB != 0:
				seen = append(seen, "attrib")
			case ev.Mask&unix.IN_MOVED_TO != 0:
				seen = append(seen, "moved_to")
			}
		}
	}
	require.Equal(t, []string{"moved_to"}, seen, "the socket's path must appear once, already owner-only")
}
