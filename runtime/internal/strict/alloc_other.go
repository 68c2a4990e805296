//go:build !unix

package strict

import "os"

// allocated is the disk space the file of fi takes: unknown (-1) where a
// stat carries no block count (Windows), so the budget counts apparent
// sizes there.
func allocated(os.FileInfo) int64 { return -1 }
