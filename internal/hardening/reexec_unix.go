//go:build unix

package hardening

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// writeAll writes data to fd, retrying short writes.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("hardening: handing the environment over: %w", err)
		}
		data = data[n:]
	}
	return nil
}
