//go:build windows

package listen

import (
	"errors"
	"io"
	"os"
)

// readTokenFile reads an existing token file (os.ErrNotExist when there
// is none), refusing a symlink (never followed) and anything that is not
// a regular file. Windows has no modes to check: the file's ACL is the
// user's to keep (a generated one gets a DACL for the user alone).
func readTokenFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, errors.New("is a symlink: give the token file's own path (a symlink is never followed)")
	case !fi.Mode().IsRegular():
		return nil, errors.New("is not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxTokenFile+1))
}
