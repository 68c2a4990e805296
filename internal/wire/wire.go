// Package wire is the framing of every line-delimited JSON channel the
// executor speaks: the project-mode socket (native), the strict host call's
// request lines (internal/engine) and `serve`'s JSON-RPC: one bounded line
// reader and one constant-time token check, so each limit and each
// comparison is written once.
package wire

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLarge is the error of a line longer than the reader's limit.
var ErrLineTooLarge = errors.New("line too large")

// errTooLargeAtEOF is a final line, without its newline, that was too
// large: it matches ErrLineTooLarge and io.ErrUnexpectedEOF.
var errTooLargeAtEOF = fmt.Errorf("%w (the stream ended before its newline: %w)", ErrLineTooLarge, io.ErrUnexpectedEOF)

// ReadLine reads one newline-terminated line and returns it without the
// newline (a "\r" before it is kept). A line whose content is longer than
// max bytes is ErrLineTooLarge: with drain, once the rest of it has been
// read and dropped up to its newline (so the stream goes on with the next
// line), holding no more than max+1 bytes of it; without drain, at once,
// leaving the reader mid-line (the caller then ends the stream). At the
// end of the stream it returns io.EOF; a final line without a newline is
// returned with io.ErrUnexpectedEOF, so a caller decides whether a peer
// that went away mid-line sent a line. A final line without a newline that
// was too large matches both ErrLineTooLarge and io.ErrUnexpectedEOF.
// The returned slice is the caller's: later reads do not overwrite it.
func ReadLine(r *bufio.Reader, max int, drain bool) ([]byte, error) {
	var line []byte
	tooLarge := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLarge {
			n := len(line) + len(chunk)
			if err == nil {
				n-- // the newline does not count
			}
			if n > max {
				if !drain {
					return nil, ErrLineTooLarge
				}
				tooLarge, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLarge {
				return nil, ErrLineTooLarge
			}
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0 && !tooLarge:
			return nil, io.EOF
		case errors.Is(err, io.EOF) && tooLarge:
			return nil, errTooLargeAtEOF
		case errors.Is(err, io.EOF):
			return line, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// TokenEqual reports whether got is the token want, in time that does not
// depend on where they differ. An empty want matches nothing.
func TokenEqual(got string, want []byte) bool {
	return len(want) > 0 && subtle.ConstantTimeCompare([]byte(got), want) == 1
}
