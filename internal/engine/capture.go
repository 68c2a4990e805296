package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/humanpath"
)

// captureLimits bounds what a [outputCapture] keeps of one output stream.
type captureLimits struct {
	// Max is the number of bytes kept whole. An output of at most Max bytes is returned
	// unchanged; a longer one is truncated to Head bytes from its start and Tail bytes from
	// its end. A negative value is treated as 0.
	Max int
	// Head is the number of bytes kept from the start of a truncated output. It is clamped
	// to [0, Max].
	Head int
	// Tail is the number of bytes kept from the end of a truncated output. It is clamped to
	// [0, Max-Head], so that head and tail never overlap.
	Tail int
	// SpillDir, when set, is the directory that receives the full text of a truncated output,
	// as stdout-<sha256hex[:12]>.txt, where the hash is of the whole output. It is created
	// with mode 0700 when needed. Default "": no spill file.
	SpillDir string
	// SpillCap is the most bytes written to the spill file; the rest of the output is still
	// hashed but not written. 0 or less means no cap.
	SpillCap int64
}

// StdoutLimits returns the limits for a script's stdout (docs/behaviour.md §5): 50,000
// bytes kept whole, else the first 20,000 and the last 30,000, with the full output (at
// most 5,000,000 bytes) spilled to spillDir when it is not "" (the executor passes
// $HERMES_HOME/cache/exec).
func StdoutLimits(spillDir string) captureLimits {
	return captureLimits{Max: 50_000, Head: 20_000, Tail: 30_000, SpillDir: spillDir, SpillCap: 5_000_000}
}

// stderrLimits are the limits for a script's stderr (docs/behaviour.md §5): the first
// 10,000 bytes, as in Hermes, which keeps only the head of stderr (the first error is what
// explains a failure; what follows is mostly its consequences). Stderr is never spilled.
var stderrLimits = captureLimits{Max: 10_000, Head: 10_000, Tail: 0}

// captureResult is what a [outputCapture] kept of its stream.
type captureResult struct {
	// Output is the captured text as valid UTF-8 (each invalid byte becomes U+FFFD): the
	// whole output, or, when Truncated, the head, a [TruncationNotice] and the tail (with
	// a Tail of 0, the head and the notice without its trailing newlines).
	Output string
	// Truncated reports whether more than Max bytes were written.
	Truncated bool
	// Total is the number of bytes written in all.
	Total int64
	// Captured is the number of bytes of the original output kept in Output: Total, or the
	// head and tail lengths when truncated (after moving the cut points to rune boundaries).
	Captured int64
	// Omitted is Total - Captured.
	Omitted int64
	// SpillPath is the file holding the full output. It is "" unless the output was truncated,
	// SpillDir was set and the spill file was written and moved into place.
	SpillPath string
	// SpillErr is the error that prevented the spill file from being written, or nil. Such
	// an error never reaches the script: its writes always succeed.
	SpillErr error
}

// outputCapture is an io.Writer that keeps a bounded view of a stream (a script's stdout or stderr)
// and, when the stream outgrows its limit, optionally spills the full text to a file.
//
// Memory stays bounded whatever is written: at most Max bytes until the stream exceeds Max,
// then Head bytes plus a Tail-byte ring buffer. outputCapture is safe for concurrent use; each Write
// is recorded atomically.
//
// Call [outputCapture.Finish] to get the result, or [outputCapture.Discard] on an error path to remove any
// temporary spill file.
type outputCapture struct {
	mu  sync.Mutex
	lim captureLimits

	total     int64
	truncated bool
	done      bool // Finish or Discard was called: further writes are ignored.
	discarded bool
	result    *captureResult

	buf  []byte // the whole stream, while total <= Max
	head []byte // the first Head bytes, once truncated
	ring []byte // the last Tail bytes, once truncated, as a ring of len Tail
	rpos int    // next write position in ring
	rlen int    // bytes of ring in use

	hash      hash.Hash // sha256 of the whole stream, when SpillDir is set
	spill     *os.File  // temporary spill file, once truncated
	spilled   int64     // bytes written to spill
	spillErr  error
	spillPath string
}

// newCapture returns a Capture with the given limits, normalized as documented on
// [captureLimits].
func newCapture(l captureLimits) *outputCapture {
	l.Max = max(l.Max, 0)
	l.Head = min(max(l.Head, 0), l.Max)
	l.Tail = min(max(l.Tail, 0), l.Max-l.Head)
	c := &outputCapture{lim: l}
	if l.SpillDir != "" {
		c.hash = sha256.New()
	}
	return c
}

// Write records p. It always returns len(p), nil: a failure to write the spill file is kept
// for [outputCapture.Finish] and never reported to the writer. Writes after Finish or Discard are
// ignored.
func (c *outputCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || len(p) == 0 {
		return len(p), nil
	}
	c.total += int64(len(p))
	if c.hash != nil {
		c.hash.Write(p)
	}
	if !c.truncated {
		if len(c.buf)+len(p) <= c.lim.Max {
			c.buf = appendBounded(c.buf, p, c.lim.Max)
			return len(p), nil
		}
		c.startTruncation(p)
		return len(p), nil
	}
	c.ringWrite(p)
	c.spillWrite(p)
	return len(p), nil
}

// appendBounded appends p to b, growing b's capacity geometrically but never beyond limit
// (len(b)+len(p) must not exceed limit).
func appendBounded(b, p []byte, limit int) []byte {
	need := len(b) + len(p)
	if need > cap(b) {
		newCap := min(max(2*cap(b), need, 512), limit)
		nb := make([]byte, len(b), newCap)
		copy(nb, b)
		b = nb
	}
	return append(b, p...)
}

// startTruncation switches from keeping everything to head + ring, with p the write that
// crossed Max.
func (c *outputCapture) startTruncation(p []byte) {
	c.truncated = true
	h := c.lim.Head
	// The head comes from buf, and from p when Head reaches past buf (only when Head+Tail
	// is less than Max, so p alone completes the head).
	c.head = make([]byte, 0, h)
	if h <= len(c.buf) {
		c.head = append(c.head, c.buf[:h]...)
	} else {
		c.head = append(c.head, c.buf...)
		c.head = append(c.head, p[:h-len(c.buf)]...)
	}
	c.ring = make([]byte, c.lim.Tail)
	if h < len(c.buf) {
		c.ringWrite(c.buf[h:])
		c.ringWrite(p)
	} else {
		c.ringWrite(p[h-len(c.buf):])
	}
	if c.lim.SpillDir != "" {
		c.openSpill()
		c.spillWrite(c.buf)
		c.spillWrite(p)
	}
	c.buf = nil
}

// ringWrite keeps the last Tail bytes of everything written through it.
func (c *outputCapture) ringWrite(p []byte) {
	n := len(c.ring)
	if n == 0 {
		return
	}
	if len(p) >= n {
		copy(c.ring, p[len(p)-n:])
		c.rpos, c.rlen = 0, n
		return
	}
	k := copy(c.ring[c.rpos:], p)
	copy(c.ring, p[k:])
	c.rpos = (c.rpos + len(p)) % n
	c.rlen = min(c.rlen+len(p), n)
}

// tail returns the ring's contents in stream order.
func (c *outputCapture) tail() []byte {
	out := make([]byte, 0, c.rlen)
	if c.rlen < len(c.ring) {
		return append(out, c.ring[:c.rlen]...)
	}
	out = append(out, c.ring[c.rpos:]...)
	return append(out, c.ring[:c.rpos]...)
}

func (c *outputCapture) openSpill() {
	if err := os.MkdirAll(c.lim.SpillDir, 0o700); err != nil {
		c.spillErr = fmt.Errorf("create spill directory: %w", err)
		return
	}
	f, err := os.CreateTemp(c.lim.SpillDir, ".stdout-*.tmp")
	if err != nil {
		c.spillErr = fmt.Errorf("create spill file: %w", err)
		return
	}
	c.spill = f
}

// spillWrite appends p to the spill file, up to SpillCap bytes in all.
func (c *outputCapture) spillWrite(p []byte) {
	if c.spill == nil || c.spillErr != nil {
		return
	}
	if c.lim.SpillCap > 0 {
		room := c.lim.SpillCap - c.spilled
		if room <= 0 {
			return
		}
		if int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := c.spill.Write(p)
	c.spilled += int64(n)
	if err != nil {
		c.spillErr = fmt.Errorf("write spill file: %w", err)
	}
}

// removeSpill closes and deletes the temporary spill file, if any.
func (c *outputCapture) removeSpill() {
	if c.spill == nil {
		return
	}
	name := c.spill.Name()
	c.spill.Close()
	os.Remove(name)
	c.spill = nil
}

// Finish stops capturing and returns the result. When the output was truncated and a spill
// file was written, Finish closes it and renames it atomically to its final name. Finish is
// idempotent: later calls return the same result.
func (c *outputCapture) Finish() captureResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.result != nil {
		return *c.result
	}
	c.done = true
	r := captureResult{Total: c.total, Truncated: c.truncated}
	if !c.truncated {
		r.Output = validUTF8(c.buf)
		r.Captured = c.total
	} else {
		head := trimIncompleteRune(c.head)
		tail := skipContinuation(c.tail())
		r.Captured = int64(len(head) + len(tail))
		r.Omitted = r.Total - r.Captured
		var b strings.Builder
		b.Grow(len(head) + len(tail) + 128)
		b.WriteString(validUTF8(head))
		notice := truncationNotice(r.Omitted, r.Total)
		if c.lim.Tail == 0 {
			notice = strings.TrimRight(notice, "\n")
		}
		b.WriteString(notice)
		b.WriteString(validUTF8(tail))
		r.Output = b.String()
		c.finishSpill()
		r.SpillPath = c.spillPath
	}
	r.SpillErr = c.spillErr
	c.buf, c.head, c.ring = nil, nil, nil
	c.result = &r
	return r
}

// finishSpill closes the temporary spill file and moves it to its final name.
func (c *outputCapture) finishSpill() {
	if c.spill == nil {
		return
	}
	if c.spillErr != nil {
		c.removeSpill()
		return
	}
	tmp := c.spill.Name()
	if err := c.spill.Close(); err != nil {
		c.spill = nil
		os.Remove(tmp)
		c.spillErr = fmt.Errorf("close spill file: %w", err)
		return
	}
	c.spill = nil
	sum := hex.EncodeToString(c.hash.Sum(nil))
	final := filepath.Join(c.lim.SpillDir, "stdout-"+sum[:12]+".txt")
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		c.spillErr = fmt.Errorf("move spill file into place: %w", err)
		return
	}
	c.spillPath = final
}

// Discard stops capturing and removes any temporary spill file; use it on error paths where
// the result will not be reported. A spill file already moved into place by an earlier
// Finish is left alone. A Finish after Discard returns the in-memory result without a spill
// file. Discard is idempotent.
func (c *outputCapture) Discard() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	if c.discarded {
		return
	}
	c.discarded = true
	if c.spill != nil {
		c.removeSpill()
		if c.spillErr == nil {
			c.spillErr = errDiscarded
		}
	}
}

// errDiscarded is the SpillErr of a truncated capture whose spill file was discarded.
var errDiscarded = errors.New("spill file discarded")

// truncationNotice is the text placed between the head and the tail of a truncated output:
//
//	"\n\n... [OUTPUT TRUNCATED - {omitted} bytes omitted out of {total} total] ...\n\n"
//
// with both numbers written with comma thousands separators (1,234,567).
func truncationNotice(omitted, total int64) string {
	return "\n\n... [OUTPUT TRUNCATED - " + commas(omitted) + " bytes omitted out of " +
		commas(total) + " total] ...\n\n"
}

// commas formats n with comma thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, ch := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// validUTF8 converts b to a string, replacing each invalid byte with U+FFFD.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}

// trimIncompleteRune drops a multi-byte sequence cut short at the end of b (the rest of it
// was omitted), so the head ends on a rune boundary.
func trimIncompleteRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// skipContinuation drops the continuation bytes at the start of b (the start of their rune
// was omitted), at most utf8.UTFMax-1 of them, so the tail starts on a rune boundary.
func skipContinuation(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// truncatedWarning is the warning of a result whose stdout was truncated:
// with the full output saved at spillPath, "execute_code stdout was
// truncated (head/tail shown); the script did run. FULL output saved to
// {path} — page it with read_file(path="{path}", offset=...) instead of
// re-running." (the read_file call's path a Python literal: r"C:\..." on
// Windows); without (spillPath ""), "execute_code stdout was
// truncated; the script did run, but only the captured head/tail output is
// included. Re-run only with narrower output if the omitted data is
// required.".
func truncatedWarning(spillPath string) string {
	if spillPath == "" {
		return "execute_code stdout was truncated; the script did run, but only the captured head/tail output is included. Re-run only with narrower output if the omitted data is required."
	}
	return "execute_code stdout was truncated (head/tail shown); the script did run. FULL output saved to " + spillPath +
		" — page it with read_file(path=" + humanpath.PyLiteral(spillPath) + ", offset=...) instead of re-running."
}

// resultOutput is a result's output: what the script printed, then, when
// the run did not succeed, its stderr, and the line its status adds (the
// error when nothing was printed, Hermes's timeout line, the interrupt
// marker with reason).
func resultOutput(out, errOut captureResult, status, errText, reason string) string {
	output := out.Output
	if status != config.StatusSuccess && errOut.Total > 0 {
		// The separator's newline ends what was printed; with nothing
		// printed the output starts with the separator itself.
		if output != "" {
			output += "\n"
		}
		output += "--- stderr ---\n" + errOut.Output
	}
	switch status {
	case config.StatusError:
		if output == "" {
			output = errText
		}
	case config.StatusTimeout:
		// As Hermes: the message goes in the output too (an empty result
		// reads as "nothing happened"), after a blank line.
		output = joinNonEmpty(output, "\n\n", "⏰ "+errText)
	case config.StatusInterrupted:
		output = joinNonEmpty(output, "\n", InterruptMarker(reason))
	}
	return output
}

// joinNonEmpty is output+sep+line, or line alone when output is empty.
func joinNonEmpty(output, sep, line string) string {
	if output == "" {
		return line
	}
	return output + sep + line
}
