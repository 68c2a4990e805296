//go:build !unix

package cli

import "io"

// ReaderGone cannot tell here whether anybody still reads w: a client
// that went away is noticed when a write to it fails.
func ReaderGone(io.Writer, <-chan struct{}) bool { return false }
