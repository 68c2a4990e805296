//go:build unix

package listen

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// readTokenFile reads an existing token file (os.ErrNotExist when there
// is none), refusing one that is not the user's own secret: a symlink
// (never followed: O_NOFOLLOW), not a regular file, owned by another
// user, open to group or others, or with another hard link. The checks
// are made on the open file, so it cannot be swapped between check and
// read.
func readTokenFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, errors.New("is a symlink: give the token file's own path (a symlink is never followed)")
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, errors.New("is not a regular file")
	case !ok:
		return nil, errors.New("cannot tell its owner")
	case int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("is owned by uid %d, not by this user (uid %d): a token file must be the server's own (remove it to have one generated)", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("is open to group or others (mode %04o): a token others can read is no secret; chmod 600 it", fi.Mode().Perm())
	case uint64(st.Nlink) > 1:
		return nil, fmt.Errorf("has %d hard links: a token file must have one name (copy the token into a file of its own)", st.Nlink)
	}
	return io.ReadAll(io.LimitReader(f, maxTokenFile+1))
}
