//go:build unix

package strict

import (
	"os"
	"syscall"
)

// allocated is the disk space the file of fi takes (its blocks), or -1
// when unknown.
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return -1
}
