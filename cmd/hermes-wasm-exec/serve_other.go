//go:build !unix

package main

import "io"

// readerGone cannot tell here whether anybody still reads w: a client
// that went away is noticed when a write to it fails.
func readerGone(io.Writer, <-chan struct{}) bool { return false }
