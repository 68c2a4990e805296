package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// pattern returns n bytes of printable ASCII that vary with position, so that head and tail
// mix-ups show.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i*7%26)
	}
	return b
}

func writeChunks(t *testing.T, c *outputCapture, data []byte, chunk int) {
	t.Helper()
	for len(data) > 0 {
		n := min(chunk, len(data))
		w, err := c.Write(data[:n])
		if w != n || err != nil {
			t.Fatalf("Write = %d, %v", w, err)
		}
		data = data[n:]
	}
}

// memoryInUse reports the bytes held by the capture's internal buffers.
func memoryInUse(c *outputCapture) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cap(c.buf) + cap(c.head) + cap(c.ring)
}

func TestTruncationNotice(t *testing.T) {
	tests := []struct {
		omitted, total int64
		want           string
	}{
		{1, 50_001, "\n\n... [OUTPUT TRUNCATED - 1 bytes omitted out of 50,001 total] ...\n\n"},
		{999, 1000, "\n\n... [OUTPUT TRUNCATED - 999 bytes omitted out of 1,000 total] ...\n\n"},
		{1_234_567, 1_284_567, "\n\n... [OUTPUT TRUNCATED - 1,234,567 bytes omitted out of 1,284,567 total] ...\n\n"},
		{0, 0, "\n\n... [OUTPUT TRUNCATED - 0 bytes omitted out of 0 total] ...\n\n"},
		{100_000, 123_456_789_012, "\n\n... [OUTPUT TRUNCATED - 100,000 bytes omitted out of 123,456,789,012 total] ...\n\n"},
	}
	for _, tt := range tests {
		if got := truncationNotice(tt.omitted, tt.total); got != tt.want {
			t.Errorf("TruncationNotice(%d, %d) = %q, want %q", tt.omitted, tt.total, got, tt.want)
		}
	}
	if got := commas(-1234); got != "-1,234" {
		t.Errorf("commas(-1234) = %q", got)
	}
}

func TestCaptureSizes(t *testing.T) {
	const max, head, tail = 50_000, 20_000, 30_000
	tests := []struct {
		name      string
		n         int
		truncated bool
	}{
		{"empty", 0, false},
		{"small", 11, false},
		{"exactly Max", max, false},
		{"Max+1", max + 1, true},
		{"twice Max", 2 * max, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := pattern(tt.n)
			c := newCapture(StdoutLimits(""))
			writeChunks(t, c, data, 4096)
			r := c.Finish()
			if r.Truncated != tt.truncated || r.Total != int64(tt.n) {
				t.Fatalf("Truncated=%v Total=%d", r.Truncated, r.Total)
			}
			if !tt.truncated {
				if r.Output != string(data) || r.Captured != int64(tt.n) || r.Omitted != 0 {
					t.Fatalf("whole output not kept: captured=%d omitted=%d", r.Captured, r.Omitted)
				}
				return
			}
			omitted := int64(tt.n - head - tail)
			want := string(data[:head]) + truncationNotice(omitted, int64(tt.n)) + string(data[tt.n-tail:])
			if r.Output != want {
				t.Fatalf("output mismatch (len %d, want %d)", len(r.Output), len(want))
			}
			if r.Captured != head+tail || r.Omitted != omitted || r.SpillPath != "" || r.SpillErr != nil {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestCaptureMax1Notice(t *testing.T) {
	c := newCapture(StdoutLimits(""))
	writeChunks(t, c, pattern(50_001), 50_001)
	r := c.Finish()
	if !strings.Contains(r.Output, "[OUTPUT TRUNCATED - 1 bytes omitted out of 50,001 total]") {
		t.Fatalf("notice missing: %q", r.Output[19_990:20_100])
	}
}

func TestCaptureBoundedMemory(t *testing.T) {
	const total = 3 << 20
	data := pattern(total)
	for _, chunk := range []int{1, 64 << 10} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			lim := StdoutLimits("")
			c := newCapture(lim)
			peak := 0
			for off := 0; off < total; off += chunk {
				c.Write(data[off:min(off+chunk, total)])
				if off%(chunk*97) == 0 || off < 2*lim.Max {
					peak = max(peak, memoryInUse(c))
				}
			}
			peak = max(peak, memoryInUse(c))
			if peak > lim.Max+lim.Tail {
				t.Fatalf("peak buffer memory %d > %d", peak, lim.Max+lim.Tail)
			}
			if got := memoryInUse(c); got > lim.Head+lim.Tail {
				t.Fatalf("buffer memory after truncation %d > %d", got, lim.Head+lim.Tail)
			}
			r := c.Finish()
			want := string(data[:lim.Head]) + truncationNotice(total-50_000, total) + string(data[total-lim.Tail:])
			if r.Output != want || r.Total != total || r.Captured != 50_000 || r.Omitted != total-50_000 {
				t.Fatalf("wrong result: total=%d captured=%d omitted=%d", r.Total, r.Captured, r.Omitted)
			}
			if memoryInUse(c) != 0 {
				t.Fatal("buffers not released by Finish")
			}
		})
	}
}

func TestCaptureGrowthNeverExceedsMax(t *testing.T) {
	c := newCapture(captureLimits{Max: 1000, Head: 400, Tail: 600})
	for i := 0; i < 1000; i++ {
		c.Write([]byte{'x'})
		if m := memoryInUse(c); m > 1000 {
			t.Fatalf("after %d bytes, buffer capacity %d > Max", i+1, m)
		}
	}
}

func TestCaptureSpill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "exec")
	data := pattern(200_000)
	c := newCapture(StdoutLimits(dir))
	writeChunks(t, c, data, 777)
	r := c.Finish()
	if !r.Truncated || r.SpillErr != nil {
		t.Fatalf("got %+v", r)
	}
	sum := sha256.Sum256(data)
	want := filepath.Join(dir, "stdout-"+hex.EncodeToString(sum[:])[:12]+".txt")
	if r.SpillPath != want {
		t.Fatalf("SpillPath = %q, want %q", r.SpillPath, want)
	}
	got, err := os.ReadFile(r.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("spill content differs (len %d, want %d)", len(got), len(data))
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if goruntime.GOOS != "windows" && st.Mode().Perm() != 0o700 {
		t.Fatalf("spill dir mode %v, want 0700", st.Mode().Perm())
	}
	assertOnlyFiles(t, dir, filepath.Base(want))

	// Finish is idempotent and later writes are ignored.
	c.Write([]byte("more"))
	if r2 := c.Finish(); r2 != r {
		t.Fatalf("second Finish differs: %+v", r2)
	}
}

func TestCaptureNoSpillWhenNotTruncated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	c := newCapture(StdoutLimits(dir))
	writeChunks(t, c, pattern(50_000), 1000)
	r := c.Finish()
	if r.Truncated || r.SpillPath != "" {
		t.Fatalf("got %+v", r)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spill dir created for an untruncated output: %v", err)
	}
}

func TestCaptureSpillCap(t *testing.T) {
	dir := t.TempDir()
	lim := captureLimits{Max: 100, Head: 40, Tail: 60, SpillDir: dir, SpillCap: 1000}
	data := pattern(5000)
	c := newCapture(lim)
	writeChunks(t, c, data, 33)
	r := c.Finish()
	sum := sha256.Sum256(data) // The name hashes the whole stream, not just what was written.
	if want := filepath.Join(dir, "stdout-"+hex.EncodeToString(sum[:])[:12]+".txt"); r.SpillPath != want {
		t.Fatalf("SpillPath = %q, want %q", r.SpillPath, want)
	}
	got, err := os.ReadFile(r.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data[:1000]) {
		t.Fatalf("spill has %d bytes, want the first 1000", len(got))
	}
}

func TestCaptureSpillCapSmallerThanBuffer(t *testing.T) {
	dir := t.TempDir()
	data := pattern(500)
	c := newCapture(captureLimits{Max: 100, Head: 40, Tail: 60, SpillDir: dir, SpillCap: 10})
	writeChunks(t, c, data, 500)
	got, err := os.ReadFile(c.Finish().SpillPath)
	if err != nil || !bytes.Equal(got, data[:10]) {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestCaptureDiscard(t *testing.T) {
	dir := t.TempDir()
	c := newCapture(StdoutLimits(dir))
	writeChunks(t, c, pattern(120_000), 10_000)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("want one temporary spill file while capturing, got %d", len(entries))
	}
	c.Discard()
	c.Discard()
	assertOnlyFiles(t, dir)
	c.Write([]byte("ignored"))
	r := c.Finish()
	if r.SpillPath != "" || r.SpillErr == nil || r.Total != 120_000 {
		t.Fatalf("Finish after Discard: %+v", r)
	}
	assertOnlyFiles(t, dir)
}

func TestCaptureDiscardAfterFinishKeepsSpill(t *testing.T) {
	dir := t.TempDir()
	c := newCapture(StdoutLimits(dir))
	writeChunks(t, c, pattern(60_000), 60_000)
	r := c.Finish()
	c.Discard()
	if _, err := os.Stat(r.SpillPath); err != nil {
		t.Fatal(err)
	}
}

func TestCaptureSpillError(t *testing.T) {
	// A regular file where the spill directory should be makes the spill fail; the writer
	// never sees the error.
	parent := t.TempDir()
	blocker := filepath.Join(parent, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCapture(StdoutLimits(filepath.Join(blocker, "exec")))
	writeChunks(t, c, pattern(100_000), 1000)
	r := c.Finish()
	if !r.Truncated || r.SpillPath != "" || r.SpillErr == nil {
		t.Fatalf("got %+v", r)
	}
	if !strings.HasPrefix(r.Output, string(pattern(20_000))) {
		t.Fatal("output lost on spill error")
	}
}

func TestCaptureUTF8CutPoints(t *testing.T) {
	lim := captureLimits{Max: 20, Head: 8, Tail: 8}
	tests := []struct {
		name     string
		data     string
		wantHead string
		wantTail string
	}{
		// "é" is 2 bytes, "€" 3, "😀" 4.
		{"2-byte rune across head", "abcdefgé" + strings.Repeat("x", 20) + "12345678", "abcdefg", "12345678"},
		{"3-byte rune across head", "abcdef€" + strings.Repeat("x", 20) + "12345678", "abcdef", "12345678"},
		{"4-byte rune across head", "abcde😀" + strings.Repeat("x", 20) + "12345678", "abcde", "12345678"},
		{"4-byte rune ending head", "abcd😀" + strings.Repeat("x", 20) + "12345678", "abcd😀", "12345678"},
		{"2-byte rune across tail", "abcdefgh" + strings.Repeat("x", 20) + "é1234567", "abcdefgh", "1234567"},
		{"4-byte rune across tail", "abcdefgh" + strings.Repeat("x", 20) + "😀1234567", "abcdefgh", "1234567"},
		{"4-byte rune starting tail", "abcdefgh" + strings.Repeat("x", 20) + "😀1234", "abcdefgh", "😀1234"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(lim)
			writeChunks(t, c, []byte(tt.data), 3)
			r := c.Finish()
			kept := len(tt.wantHead) + len(tt.wantTail)
			want := tt.wantHead + truncationNotice(int64(len(tt.data)-kept), int64(len(tt.data))) + tt.wantTail
			if r.Output != want {
				t.Fatalf("Output = %q, want %q", r.Output, want)
			}
			if r.Captured != int64(kept) || r.Omitted != int64(len(tt.data)-kept) {
				t.Fatalf("Captured=%d Omitted=%d", r.Captured, r.Omitted)
			}
			if !utf8.ValidString(r.Output) {
				t.Fatal("invalid UTF-8")
			}
		})
	}
}

func TestCaptureInvalidUTF8(t *testing.T) {
	c := newCapture(stderrLimits)
	c.Write([]byte("ok \xff\xfe end \xe2\x82"))
	r := c.Finish()
	if want := "ok \uFFFD\uFFFD end \uFFFD\uFFFD"; r.Output != want {
		t.Fatalf("Output = %q, want %q", r.Output, want)
	}
	if r.Total != 12 || r.Captured != 12 {
		t.Fatalf("got %+v", r)
	}
}

func TestCaptureLimitsNormalized(t *testing.T) {
	c := newCapture(captureLimits{Max: 10, Head: 8, Tail: 8})
	c.Write([]byte("0123456789ABCDEF"))
	r := c.Finish()
	if want := "01234567" + truncationNotice(6, 16) + "EF"; r.Output != want {
		t.Fatalf("Output = %q, want %q", r.Output, want)
	}
	c = newCapture(captureLimits{Max: -1})
	c.Write([]byte("x"))
	if r := c.Finish(); r.Output != strings.TrimRight(truncationNotice(1, 1), "\n") {
		t.Fatalf("Output = %q", r.Output)
	}
}

func TestCaptureHeadPlusTailBelowMax(t *testing.T) {
	// Head reaching into the write that crosses Max.
	c := newCapture(captureLimits{Max: 10, Head: 6, Tail: 2})
	c.Write([]byte("abc"))
	c.Write([]byte("defghijklmnop"))
	r := c.Finish()
	if want := "abcdef" + truncationNotice(8, 16) + "op"; r.Output != want {
		t.Fatalf("Output = %q, want %q", r.Output, want)
	}
}

func TestCaptureConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	c := newCapture(StdoutLimits(dir))
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < lines; i++ {
				fmt.Fprintf(c, "writer %d line %05d\n", w, i)
			}
		}(w)
	}
	wg.Wait()
	r := c.Finish()
	lineLen := int64(len("writer 0 line 00000\n"))
	if r.Total != writers*lines*lineLen || !r.Truncated {
		t.Fatalf("Total = %d", r.Total)
	}
	got, err := os.ReadFile(r.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	// Each Write is atomic: every line in the spill file is whole.
	for _, l := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
		if int64(len(l))+1 != lineLen || !strings.HasPrefix(l, "writer ") {
			t.Fatalf("torn line %q", l)
		}
	}
}

func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("files in %s = %q, want %q", dir, got, names)
	}
}

func Example_outputCapture() {
	c := newCapture(captureLimits{Max: 16, Head: 6, Tail: 6})
	fmt.Fprint(c, "line one\nline two\nline three\n")
	r := c.Finish()
	fmt.Printf("%q\n", r.Output)
	fmt.Println(r.Truncated, r.Total, r.Captured, r.Omitted)
	// Output:
	// "line o\n\n... [OUTPUT TRUNCATED - 17 bytes omitted out of 29 total] ...\n\nthree\n"
	// true 29 12 17
}

// FuzzCapture checks the capture against a direct computation on the whole stream, for
// arbitrary bytes, limits and write sizes.
func FuzzCapture(f *testing.F) {
	f.Add([]byte("hello, world"), uint8(5), uint8(2), uint8(2), uint8(3))
	f.Add([]byte("abcdefé€😀\xff\xfe tail 😀"), uint8(10), uint8(4), uint8(4), uint8(1))
	f.Add(bytes.Repeat([]byte("😀"), 40), uint8(20), uint8(9), uint8(9), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, max, head, tail, chunk uint8) {
		lim := captureLimits{Max: int(max), Head: int(head), Tail: int(tail)}
		c := newCapture(lim)
		step := int(chunk)%17 + 1
		for off := 0; off < len(data); off += step {
			c.Write(data[off:min(off+step, len(data))])
		}
		if m := memoryInUse(c); m > int(max)+int(tail) {
			t.Fatalf("buffer memory %d", m)
		}
		r := c.Finish()
		if r.Total != int64(len(data)) || r.Captured+r.Omitted != r.Total || !utf8.ValidString(r.Output) {
			t.Fatalf("inconsistent result %+v", r)
		}
		if len(data) <= int(max) {
			if r.Truncated || r.Output != validUTF8(data) {
				t.Fatalf("whole output not kept: %q", r.Output)
			}
			return
		}
		n := c.lim // normalized limits
		h := trimIncompleteRune(data[:n.Head])
		tl := skipContinuation(data[len(data)-n.Tail:])
		want := validUTF8(h) + truncationNotice(r.Omitted, r.Total) + validUTF8(tl)
		if !r.Truncated || r.Output != want || r.Captured != int64(len(h)+len(tl)) {
			t.Fatalf("Output = %q, want %q", r.Output, want)
		}
	})
}
