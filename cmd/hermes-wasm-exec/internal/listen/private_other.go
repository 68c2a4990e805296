//go:build !windows

package listen

import "os"

// createPrivate creates path (which must not exist) for writing, readable
// and writable by its owner only: mode 0600.
func createPrivate(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}
