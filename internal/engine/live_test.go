package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// liveRecorder is an OutputFunc that records its calls, fails the test
// when two overlap or one comes after stop, and reports each on calls.
type liveRecorder struct {
	t       *testing.T
	mu      sync.Mutex
	got     []liveChunk
	at      []time.Time
	in      atomic.Int32
	stopped atomic.Bool
	calls   chan liveChunk
}

func newLiveRecorder(t *testing.T) *liveRecorder {
	return &liveRecorder{t: t, calls: make(chan liveChunk, 1000)}
}

func (r *liveRecorder) fn(stream string, chunk []byte) {
	if r.in.Add(1) != 1 {
		r.t.Error("two calls of the output function at once")
	}
	defer r.in.Add(-1)
	if r.stopped.Load() {
		r.t.Errorf("the output function was called after the run: %s %q", stream, chunk)
	}
	r.mu.Lock()
	r.got = append(r.got, liveChunk{stream, chunk})
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	r.calls <- liveChunk{stream, chunk}
}

// next waits for the next call.
func (r *liveRecorder) next() liveChunk {
	r.t.Helper()
	select {
	case c := <-r.calls:
		return c
	case <-time.After(time.Minute):
		r.t.Fatal("no call of the output function")
	}
	return liveChunk{}
}

// text is everything stream got, in order.
func (r *liveRecorder) text(stream string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, c := range r.got {
		if c.stream == stream {
			b.Write(c.data)
		}
	}
	return b.String()
}

// TestLiveOutputCoalesces: the first output goes out at once; what comes
// within the interval after it waits and goes out as one chunk (here at
// the close, the interval being an hour); nothing is called after close.
func TestLiveOutputCoalesces(t *testing.T) {
	r := newLiveRecorder(t)
	l := newLiveOutput(r.fn, time.Hour, 1<<10)
	l.write(0, []byte("first\n"))
	require.Equal(t, liveChunk{StreamStdout, []byte("first\n")}, r.next())
	l.write(0, []byte("two "))
	l.write(1, []byte("err"))
	require.Equal(t, liveChunk{StreamStderr, []byte("err")}, r.next(), "each stream has its own interval")
	l.write(0, []byte("three\n"))
	l.close()
	r.stopped.Store(true)
	require.Equal(t, liveChunk{StreamStdout, []byte("two three\n")}, r.next())
	l.write(0, []byte("after close"))
	require.Len(t, r.got, 3)
}

// TestLiveOutputInterval: under a print loop, calls for one stream are at
// least the interval apart (but the last, at the close), and together they
// carry everything, in order.
func TestLiveOutputInterval(t *testing.T) {
	r := newLiveRecorder(t)
	const interval = 20 * time.Millisecond
	start := time.Now()
	// No chunk bound that a fast writer could pass in one interval (wine's
	// timers let 3 MB through in one): this test is about the interval.
	l := newLiveOutput(r.fn, interval, 1<<30)
	var want strings.Builder
	for i := 0; len(r.calls) < 5; i++ {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		l.write(0, []byte(line))
	}
	l.close()
	took := time.Since(start)
	r.stopped.Store(true)
	require.Equal(t, want.String(), r.text(StreamStdout))
	// n calls but the last are n-1 chunks taken an interval apart or more.
	n := len(r.got)
	require.LessOrEqual(t, time.Duration(n-2)*interval, took, "%d calls in %v", n, took)
}

// TestLiveOutputBounded: past LiveChunkMax bytes in one interval the rest
// is left out with a notice, the chunk cut on a rune boundary.
func TestLiveOutputBounded(t *testing.T) {
	r := newLiveRecorder(t)
	l := newLiveOutput(r.fn, time.Hour, 8)
	l.write(0, []byte("go\n"))
	r.next()
	l.write(0, []byte("abcdefgé and the rest")) // é is cut at byte 8
	l.write(0, []byte("more"))
	l.close()
	require.Equal(t, "abcdefg\n[... 19 bytes of output not shown live ...]\n", string(r.next().data))
}

// TestLiveOutputLines: a chunk ends at its last newline, the line's start
// going with the next chunk (an interval later); a chunk without a newline
// goes whole.
func TestLiveOutputLines(t *testing.T) {
	r := newLiveRecorder(t)
	l := newLiveOutput(r.fn, 20*time.Millisecond, 1<<10)
	l.write(0, []byte("one\ntw"))
	require.Equal(t, "one\n", string(r.next().data))
	require.Equal(t, "tw", string(r.next().data), "an unfinished line goes an interval later")
	l.write(0, []byte("o\nthree\nfo"))
	require.Equal(t, "o\nthree\n", string(r.next().data))
	l.close()
	require.Equal(t, "fo", string(r.next().data))
}

// TestLiveOutputWholeRunes: a rune split between writes reaches the
// function whole; at the close, what is held goes out as it is.
func TestLiveOutputWholeRunes(t *testing.T) {
	r := newLiveRecorder(t)
	l := newLiveOutput(r.fn, 0, 1<<10)
	e := []byte("é")
	l.write(0, e[:1])
	l.write(0, e[1:])
	require.Equal(t, "é", string(r.next().data))
	l.write(1, e[:1])
	l.close()
	require.Equal(t, e[:1], r.next().data)
}

// TestExecuteOutput: Execute passes the run's output on while it runs
// (here the fake interpreter waits for its first line to arrive), tells
// the engine to hold output no longer than LiveInterval, and returns
// after the last call; the result is the one without Output.
func TestExecuteOutput(t *testing.T) {
	run := func(arrived <-chan liveChunk) func(ctx context.Context, job *Job) (Outcome, error) {
		return func(ctx context.Context, job *Job) (Outcome, error) {
			fmt.Fprint(job.Stdout, "one\n")
			if arrived != nil {
				require.Equal(t, LiveInterval, job.FlushAfter)
				require.Equal(t, "one\n", string((<-arrived).data), "passed on while the script runs")
			}
			fmt.Fprint(job.Stderr, "warn\n")
			fmt.Fprint(job.Stdout, "two\n")
			<-ctx.Done()
			return Outcome{ExitCode: -1, Crash: "stopped"}, nil
		}
	}
	req := Request{Code: "x = 1", Mode: config.ModeStrict, Timeout: 50 * time.Millisecond,
		Tools: func(context.Context, string, json.RawMessage) map[string]any { return nil }}
	plain, err := Execute(context.Background(), fakeEngine{run(nil)}, req)
	require.NoError(t, err)

	r := newLiveRecorder(t)
	req.Output = r.fn
	res, err := Execute(context.Background(), fakeEngine{run(r.calls)}, req)
	r.stopped.Store(true)
	require.NoError(t, err)
	require.Equal(t, config.StatusTimeout, res.Status)
	res.DurationSeconds, plain.DurationSeconds = 0, 0
	require.Equal(t, plain, res)
	require.Equal(t, "one\ntwo\n", r.text(StreamStdout))
	require.Equal(t, "warn\n", r.text(StreamStderr))
}
