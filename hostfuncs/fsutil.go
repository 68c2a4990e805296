package hostfuncs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// sniffSize is how much of a file's head is inspected to decide whether it
// is text.
const sniffSize = 8 << 10

// displayPath renders abs for a result: relative to the working dir when it
// lies inside it, absolute otherwise.
func (t *Tools) displayPath(abs string) string {
	rel, err := t.px.rel(t.workdir, abs)
	if err != nil || t.px.outside(rel) {
		return abs
	}
	return rel
}

// readHead reads up to n bytes from the start of r.
func readHead(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	got, err := io.ReadFull(r, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return buf[:got], err
}

// looksBinary reports whether sample, the head of a file, is not text: it
// holds a NUL byte or is not valid UTF-8 (a multi-byte sequence cut at the
// very end of the sample is allowed). truncated says whether the file goes
// on past the sample.
func looksBinary(sample []byte, truncated bool) bool {
	if bytes.IndexByte(sample, 0) >= 0 {
		return true
	}
	if utf8.Valid(sample) {
		return false
	}
	if !truncated {
		return true
	}
	// Allow one incomplete multi-byte sequence cut by the sample's end.
	for cut := 1; cut < utf8.UTFMax && cut <= len(sample); cut++ {
		head, tail := sample[:len(sample)-cut], sample[len(sample)-cut:]
		if utf8.Valid(head) && utf8.RuneStart(tail[0]) && !utf8.FullRune(tail) {
			return false
		}
	}
	return true
}

// binaryKinds names common binary formats by their leading bytes.
var binaryKinds = []struct {
	magic string
	name  string
}{
	{"\x89PNG\r\n\x1a\n", "PNG image"},
	{"\xff\xd8\xff", "JPEG image"},
	{"GIF87a", "GIF image"},
	{"GIF89a", "GIF image"},
	{"%PDF-", "PDF document"},
	{"PK\x03\x04", "ZIP archive"},
	{"\x1f\x8b", "gzip data"},
	{"BZh", "bzip2 data"},
	{"\xfd7zXZ\x00", "xz data"},
	{"\x7fELF", "ELF executable"},
	{"MZ", "Windows executable"},
	{"\xcf\xfa\xed\xfe", "Mach-O executable"},
	{"SQLite format 3\x00", "SQLite database"},
	{"\x00asm", "WebAssembly module"},
}

// describeBinary names the kind of binary data sample holds.
func describeBinary(sample []byte) string {
	for _, k := range binaryKinds {
		if bytes.HasPrefix(sample, []byte(k.magic)) {
			return k.name
		}
	}
	return "binary data"
}

// formatSize renders a byte count for people.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// fileKind describes a non-regular file mode for error messages.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file"
	}
}

// lineScanner reads a stream line by line without ever holding more than
// maxBytes of one line: the rest of an overlong line is skipped and the line
// is flagged as cut. Lines end at "\n"; a trailing "\r" is dropped, so CRLF
// files read like LF files. A final line without a newline still counts.
type lineScanner struct {
	r        *bufio.Reader
	maxBytes int
	buf      []byte
	cut      bool
	err      error
}

// newLineScanner returns a scanner over r keeping at most maxBytes of each
// line.
func newLineScanner(r io.Reader, maxBytes int) *lineScanner {
	return &lineScanner{r: bufio.NewReaderSize(r, 64<<10), maxBytes: maxBytes}
}

// Scan advances to the next line, reporting false at the end of the stream
// or on a read error (see err).
func (s *lineScanner) Scan() bool {
	s.buf = s.buf[:0]
	s.cut = false
	read := 0
	keep := s.maxBytes + 2 // room for a "\r\n" terminator
	for {
		chunk, err := s.r.ReadSlice('\n')
		read += len(chunk)
		if room := keep - len(s.buf); room > 0 {
			take := chunk
			if len(take) > room {
				take = take[:room]
			}
			s.buf = append(s.buf, take...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if read == 0 {
				return false
			}
		case err != nil:
			s.err = err
			return false
		}
		break
	}
	dropped := read > len(s.buf)
	s.buf = bytes.TrimSuffix(s.buf, []byte("\n"))
	s.buf = bytes.TrimSuffix(s.buf, []byte("\r"))
	if dropped || len(s.buf) > s.maxBytes {
		s.cut = true
		if len(s.buf) > s.maxBytes {
			s.buf = s.buf[:s.maxBytes]
		}
	}
	return true
}

// Bytes returns the current line (at most maxBytes, without terminator);
// valid until the next Scan.
func (s *lineScanner) Bytes() []byte { return s.buf }

// Cut reports whether the current line was longer than maxBytes.
func (s *lineScanner) Cut() bool { return s.cut }

// lineTruncMarker ends a line shortened to its character limit.
const lineTruncMarker = "... [truncated]"

// clipLine renders a scanned line as valid UTF-8 of at most maxChars
// characters, marking a cut with [lineTruncMarker].
func clipLine(b []byte, cut bool, maxChars int) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if !cut && len(s) <= maxChars {
		return s
	}
	n := 0
	for i := range s {
		if n == maxChars {
			return s[:i] + lineTruncMarker
		}
		n++
	}
	if cut {
		return s + lineTruncMarker
	}
	return s
}
