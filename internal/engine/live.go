package engine

import (
	"bytes"
	"io"
	"sync"
	"time"
	"unicode/utf8"
)

// OutputFunc receives a running script's output as it comes (live
// output): stream is [StreamStdout] or [StreamStderr], chunk the bytes,
// which the function may keep. See Request.Output for when it is called.
type OutputFunc func(stream string, chunk []byte)

// The streams an [OutputFunc] is called with.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// LiveInterval is the least time between two calls of an [OutputFunc] for
// one stream while the script runs (the last call, when it ends, may come
// sooner). Output that arrives meanwhile is coalesced into one chunk.
const LiveInterval = 100 * time.Millisecond

// liveGather is how long the first output after a quiet spell waits for
// what follows it (a print's newline is often a write of its own), so
// that a chunk holds whole lines.
const liveGather = 10 * time.Millisecond

// LiveChunkMax is the most bytes of one stream one call of an
// [OutputFunc] carries. What a script prints past it within one
// interval is not passed on live (the result has it, within the capture
// limits): the chunk ends with a line saying how many bytes were left
// out ([liveSkipNotice]). So a print loop costs the receiver at most
// 10 calls and about 640 KiB a second per stream.
const LiveChunkMax = 64 << 10

// liveSkipNotice is the line a live chunk ends with when n bytes printed
// after it in its interval were left out:
// "\n[... {n} bytes of output not shown live ...]\n".
func liveSkipNotice(n int64) string {
	return "\n[... " + commas(n) + " bytes of output not shown live ...]\n"
}

// liveOutput passes a script's output to an [OutputFunc] as it comes, in
// order per stream, from one goroutine, coalesced to at most one call
// per interval per stream. A chunk ends at the end of a line when it has
// one: the line's start waits for the next chunk. Nothing is called after
// close returns.
type liveOutput struct {
	fn       OutputFunc
	interval time.Duration
	gather   time.Duration
	max      int

	mu      sync.Mutex
	streams [2]liveStream
	closed  bool

	wake chan struct{} // a write or close happened
	done chan struct{} // the goroutine ended
}

// liveStream is what one stream has pending.
type liveStream struct {
	name    string
	pending []byte    // at most max bytes
	skipped int64     // bytes left out since pending began
	since   time.Time // when pending began
	last    time.Time // when the last chunk was handed over
}

// newLiveOutput starts passing output to fn; close it when the run ends.
func newLiveOutput(fn OutputFunc, interval time.Duration, maxChunk int) *liveOutput {
	l := &liveOutput{
		fn: fn, interval: interval, gather: min(liveGather, interval), max: max(maxChunk, utf8.UTFMax),
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	l.streams[0].name, l.streams[1].name = StreamStdout, StreamStderr
	go l.run()
	return l
}

// write records p, printed on stream i (0 stdout, 1 stderr).
func (l *liveOutput) write(i int, p []byte) {
	l.mu.Lock()
	if l.closed || len(p) == 0 {
		l.mu.Unlock()
		return
	}
	s := &l.streams[i]
	if len(s.pending) == 0 && s.skipped == 0 {
		s.since = time.Now()
	}
	room := l.max - len(s.pending)
	if s.skipped > 0 {
		room = 0 // the chunk's bytes stay contiguous: nothing after a gap
	}
	n := min(max(room, 0), len(p))
	s.pending = append(s.pending, p[:n]...)
	s.skipped += int64(len(p) - n)
	l.mu.Unlock()
	l.poke()
}

func (l *liveOutput) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// close hands over what is pending and returns once the OutputFunc has
// returned for the last time. Later writes are dropped.
func (l *liveOutput) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.poke()
	<-l.done
}

type liveChunk struct {
	stream string
	data   []byte
}

// run is the one goroutine that calls fn.
func (l *liveOutput) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-l.wake:
		case <-timer.C:
		}
		l.mu.Lock()
		closed := l.closed
		now := time.Now()
		var due []liveChunk
		var next time.Duration // the soonest a held stream may go; 0: none held
		for i := range l.streams {
			s := &l.streams[i]
			if len(s.pending) == 0 && s.skipped == 0 {
				continue
			}
			at := s.last.Add(l.interval)
			if g := s.since.Add(l.gather); g.After(at) {
				at = g
			}
			if wait := at.Sub(now); !closed && wait > 0 {
				next = soonest(next, wait)
				continue
			}
			if data := s.take(closed); len(data) > 0 {
				due = append(due, liveChunk{s.name, data})
				s.last = now
				if len(s.pending) > 0 { // a line's start: with the next chunk
					s.since = now
					next = soonest(next, l.interval)
				}
			}
		}
		l.mu.Unlock()
		for _, c := range due {
			l.fn(c.stream, c.data)
		}
		if closed {
			return
		}
		if next > 0 {
			timer.Reset(next)
		}
	}
}

// soonest is the shorter of two waits, 0 being none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

// take returns the pending chunk (with the notice of what was left out)
// and empties it. Unless final, what follows its last newline (when it
// has one) stays for the next chunk, and so does a rune cut short at its
// end, so that each chunk is whole UTF-8 when the output is.
func (s *liveStream) take(final bool) []byte {
	data := s.pending
	if s.skipped > 0 {
		// The gap follows data: a rune it cut short is left out too.
		cut := trimIncompleteRune(data)
		s.skipped += int64(len(data) - len(cut))
		out := append([]byte(nil), cut...)
		out = append(out, liveSkipNotice(s.skipped)...)
		s.pending, s.skipped = s.pending[:0], 0
		return out
	}
	keep := data
	if !final {
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			keep = data[:i+1]
		} else {
			keep = trimIncompleteRune(data)
		}
	}
	out := append([]byte(nil), keep...)
	s.pending = append(s.pending[:0], data[len(keep):]...)
	return out
}

// liveWriter is one stream of a liveOutput as an io.Writer.
type liveWriter struct {
	l *liveOutput
	i int
}

func (w liveWriter) Write(p []byte) (int, error) {
	w.l.write(w.i, p)
	return len(p), nil
}

// teeWriter writes to the capture, then to the live output. Neither
// fails, so neither does it.
type teeWriter struct {
	capture io.Writer
	live    io.Writer
}

func (t teeWriter) Write(p []byte) (int, error) {
	t.capture.Write(p)
	t.live.Write(p)
	return len(p), nil
}
