package strict

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// keptScript prints to stdout (a whole line, then a line's start) and to
// stderr without flushing, calls a tool, prints again, calls a tool once
// more (whose handler may stop the run: an event to synchronise on, after
// everything was printed) and spins until it is stopped. Everything it
// printed must be in the result. (With the stop in the first call, the
// interpreter's next loop check could come before the second print: the
// stop lands at any check after it, and one fell in the tool result's
// decoding under load.)
const keptScript = `import sys
from hermes_tools import web_search
print("first line")
print("no newline yet", end="")
sys.stderr.write("err text")
web_search("x")
print(" and after the call", end="")
web_search("stop")
while True:
    pass
`

// requireKept checks that everything keptScript printed is in res.
func requireKept(t *testing.T, res engine.Result) {
	t.Helper()
	require.True(t, strings.HasPrefix(res.Output, "first line\nno newline yet and after the call"), res.Output)
	require.Contains(t, res.Output, "--- stderr ---\nerr text")
}

// interruptingTools returns tools whose web_search("stop") interrupts the
// run (cancel is the context's): the script has printed everything then.
func interruptingTools(cancel context.CancelCauseFunc) engine.ToolFunc {
	return func(_ context.Context, tool string, args json.RawMessage) map[string]any {
		if bytes.Contains(args, []byte(`"stop"`)) {
			cancel(&engine.InterruptError{})
		}
		return map[string]any{"tool": tool}
	}
}

// TestStrictOutputKeptOnStop: what a one-shot script printed, without
// flushing, before its timeout or an interrupt is in the result (it used
// to stay in the guest's stdio buffers and go with the instance).
// keptTimeout is the timeout of the timeout cases: long enough for a
// loaded machine (under wine, too) to start the instance and reach the
// spin, which a 2 s timeout did not always (the output then lacked what
// follows the tool call).
const keptTimeout = 15 * time.Second

func TestStrictOutputKeptOnStop(t *testing.T) {
	res := run(t, keptScript, func(r *engine.Request) { r.Timeout = keptTimeout })
	require.Equal(t, config.StatusTimeout, res.Status)
	requireKept(t, res)

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	res, err := engine.Execute(ctx, testEngine(t), engine.Request{
		Code: keptScript, Mode: config.ModeStrict, Workdir: t.TempDir(),
		Timeout: time.Minute, MaxToolCalls: 50, Tools: interruptingTools(cancel),
	})
	require.NoError(t, err)
	require.Equal(t, config.StatusInterrupted, res.Status)
	requireKept(t, res)
	require.Contains(t, res.Output, "[execution interrupted — user sent a new message]")
}

// testKernelOutputKeptOnStop: the same for a kernel's cell, on a timeout
// and on an interrupt (each kills its kernel).
func testKernelOutputKeptOnStop(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "x = 1\n")
	res, err := cell(t, k, keptScript, func(r *engine.Request) { r.Timeout = keptTimeout })
	require.NoError(t, err)
	require.Equal(t, config.StatusTimeout, res.Status)
	requireKept(t, res)
	requireGone(t, k)

	k = startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, "x = 1\n")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	res, err = engine.Execute(ctx, k, engine.Request{
		Code: keptScript, Mode: config.ModeStrict,
		Timeout: time.Minute, MaxToolCalls: 50, Tools: interruptingTools(cancel),
	})
	require.NoError(t, err)
	require.Equal(t, config.StatusInterrupted, res.Status)
	requireKept(t, res)
	requireGone(t, k)
}

// TestStrictOutputAcrossCells: a kernel's output goes to the cell that
// wrote it, whole, with nothing carried over to the next cell.
func TestStrictOutputAcrossCells(t *testing.T) {
	k := startKernel(t, testEngine(t), engine.KernelSpec{Env: kernelEnv}, false)
	require.Equal(t, "one", okCell(t, k, "print('one', end='')\n"))
	// 38,890 bytes: one chunk passed on while the cell runs, the rest when
	// it ends.
	big := okCell(t, k, "for i in range(8000):\n    print(i)\n")
	require.Len(t, big, 38890)
	require.True(t, strings.HasPrefix(big, "0\n1\n") && strings.HasSuffix(big, "\n7999\n"), "%.40q", big)
	require.Equal(t, "two\n", okCell(t, k, "print('two')\n"))
}

func TestGuestOutput(t *testing.T) {
	var g guestOutput
	// No writer: writes are dropped, and reported written.
	n, err := g.Write([]byte("dropped"))
	require.NoError(t, err)
	require.Equal(t, 7, n)

	var w countingWriter
	g.set(&w, 0)
	for range 1000 {
		g.Write([]byte("0123456789\n")) // 11 KB in small writes
	}
	require.Zero(t, w.calls, "small writes are gathered")
	g.flush()
	require.Equal(t, 1, w.calls)
	require.Equal(t, 11000, w.buf.Len())

	// A chunk is passed on as it fills; a large write goes through whole.
	w = countingWriter{}
	for range 4000 {
		g.Write([]byte("0123456789"))
	}
	require.Equal(t, 1, w.calls)
	g.Write(bytes.Repeat([]byte("x"), 2*outputChunk))
	require.Equal(t, 3, w.calls)
	require.Equal(t, 40000+2*outputChunk, w.buf.Len())

	// set and discard hand over what is held before switching.
	g.Write([]byte("tail"))
	var next countingWriter
	g.set(&next, 0)
	require.True(t, strings.HasSuffix(w.buf.String(), "tail"))
	g.Write([]byte("for next"))
	g.discard()
	require.Equal(t, "for next", next.buf.String())
	g.Write([]byte("dropped again"))
	g.flush()
	require.Equal(t, "for next", next.buf.String())
}

// TestGuestOutputFlushAfter: with a writer set with an interval (someone
// follows the output live), what is held is handed over within it without
// a flush; once discarded, a timer left over writes nothing.
func TestGuestOutputFlushAfter(t *testing.T) {
	var g guestOutput
	w := &notifyingWriter{wrote: make(chan string, 10)}
	g.set(w, 5*time.Millisecond)
	g.Write([]byte("print 1\n"))
	select {
	case got := <-w.wrote:
		require.Equal(t, "print 1\n", got)
	case <-time.After(time.Minute):
		t.Fatal("held output was not handed over")
	}
	g.Write([]byte("print 2\n"))
	g.discard()
	require.Equal(t, "print 2\n", <-w.wrote, "discard hands it over")
	g.Write([]byte("dropped"))
	g.flush()
	require.Empty(t, w.wrote)

	// Without an interval, output waits for a flush.
	g.set(w, 0)
	g.Write([]byte("held"))
	g.mu.Lock()
	require.Nil(t, g.timer, "no timer without an interval")
	g.mu.Unlock()
	g.flush()
	require.Equal(t, "held", <-w.wrote)
}

// notifyingWriter reports each write on wrote.
type notifyingWriter struct{ wrote chan string }

func (w *notifyingWriter) Write(p []byte) (int, error) {
	w.wrote <- string(p)
	return len(p), nil
}

type countingWriter struct {
	buf   bytes.Buffer
	calls int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.calls++
	return w.buf.Write(p)
}

// BenchmarkStrictPrintLoop runs a script printing 100,000 short lines: the
// cost of unbuffered guest output (see sandbox.args).
func BenchmarkStrictPrintLoop(b *testing.B) {
	testEngine(b)
	for b.Loop() {
		res := run(b, "for i in range(100000):\n    print(i)\n", nil)
		if res.Status != config.StatusSuccess {
			b.Fatal(res.Output)
		}
	}
}
