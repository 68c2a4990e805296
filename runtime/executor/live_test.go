package executor_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// liveModes are the three ways a script runs: strict, the sandboxed
// project mode and project mode (the host's python).
var liveModes = []struct{ name, mode, sandbox string }{
	{"strict", config.ModeStrict, ""},
	{"sandboxed project", config.ModeProject, config.SandboxWasm},
	{"project", config.ModeProject, config.SandboxNone},
}

// liveSink is a Request.Output that keeps what it got per stream, says
// on changed when it got more, and fails the test when two calls overlap
// or one comes after the call returned (done).
type liveSink struct {
	t       *testing.T
	mu      sync.Mutex
	text    map[string]*strings.Builder
	changed chan struct{}
	in      atomic.Int32
	done    atomic.Bool
}

func newLiveSink(t *testing.T) *liveSink {
	return &liveSink{t: t, text: map[string]*strings.Builder{"stdout": {}, "stderr": {}}, changed: make(chan struct{}, 1)}
}

func (s *liveSink) output(stream string, chunk []byte) {
	if s.in.Add(1) != 1 {
		s.t.Error("two calls of Output at once")
	}
	defer s.in.Add(-1)
	if s.done.Load() {
		s.t.Errorf("Output was called after Execute returned: %s %q", stream, chunk)
	}
	s.mu.Lock()
	b := s.text[stream]
	if b == nil {
		s.t.Errorf("Output was called with the stream %q", stream)
		b = &strings.Builder{}
		s.text[stream] = b
	}
	b.Write(chunk)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *liveSink) got(stream string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text[stream].String()
}

// waitFor waits until stream's text has want in it; false when ctx ends
// first.
func (s *liveSink) waitFor(ctx context.Context, stream, want string) bool {
	for !strings.Contains(s.got(stream), want) {
		select {
		case <-s.changed:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// liveScript prints, then calls web_search, whose handler answers only
// once what was printed before has reached Output: the output arrives
// while the script runs, not at its end.
const liveScript = `import sys
from hermes_tools import web_search
print("tick 0")
sys.stderr.write("warn 0\n")
r = web_search("tick 0\n")
print("tick 1", r["seen"])
r = web_search("tick 1 True\n")
print("done", r["seen"])
`

// TestLiveOutput: Request.Output gets the script's stdout and stderr as it
// prints them, in every mode, one-shot and in a session kernel, and the
// result is what it would be without Output.
func TestLiveOutput(t *testing.T) {
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir()})
	t.Cleanup(func() { require.NoError(t, ex.Close(context.Background())) })
	for _, m := range liveModes {
		for _, session := range []string{"", "live"} {
			t.Run(m.name+" session "+session, func(t *testing.T) {
				sink := newLiveSink(t)
				wait := func(ctx context.Context, args json.RawMessage) map[string]any {
					var a struct{ Query string }
					require.NoError(t, json.Unmarshal(args, &a))
					wctx, cancel := context.WithTimeout(ctx, time.Minute)
					defer cancel()
					// The stderr line was written before the first call.
					seen := sink.waitFor(wctx, "stdout", a.Query) && sink.waitFor(wctx, "stderr", "warn 0\n")
					return map[string]any{"seen": seen}
				}
				workdir := t.TempDir()
				if session != "" {
					// The kernel ends before its working dir is removed
					// (Windows refuses to remove a process's cwd).
					t.Cleanup(func() { ex.CloseSession(context.Background(), session) })
				}
				req := executor.Request{Mode: m.mode, Sandbox: m.sandbox, Workdir: workdir, Session: session, Code: liveScript, Kind: config.KindCLI,
					ToolHandlers: map[string]executor.ToolHandler{"web_search": wait}, Output: sink.output}
				res, err := ex.Execute(context.Background(), req)
				sink.done.Store(true)
				require.NoError(t, err)
				require.Equal(t, "success", res.Status, res.Output)
				require.Equal(t, "tick 0\ntick 1 True\ndone True\n", res.Output)
				require.Equal(t, res.Output, sink.got("stdout"))
				require.Equal(t, "warn 0\n", sink.got("stderr"))

				// The same call without Output has the same result.
				req.Output = nil
				req.ToolHandlers = map[string]executor.ToolHandler{"web_search": func(context.Context, json.RawMessage) map[string]any {
					return map[string]any{"seen": true}
				}}
				plain, err := ex.Execute(context.Background(), req)
				require.NoError(t, err)
				res.DurationSeconds, plain.DurationSeconds = 0, 0
				res.ToolCalls, plain.ToolCalls = nil, nil // their durations differ
				if res.Kernel != nil {
					require.Equal(t, res.Kernel.ExecutionCount+1, plain.Kernel.ExecutionCount)
					res.Kernel, plain.Kernel = nil, nil
				}
				require.Equal(t, plain, res)
			})
		}
	}
}

// keptScript prints on both streams (a line, a line's start without a
// newline or a flush, many lines), then calls web_search("stop"), after
// which it waits to be stopped.
const keptScript = `import sys, time
from hermes_tools import web_search
print("first line")
print("no newline yet", end="")
sys.stderr.write("err text")
for i in range(2000):
    print("line", i)
print("last", end="")
web_search("stop")
time.sleep(600)
`

// keptOutput is what keptScript prints on stdout.
var keptOutput = func() string {
	var b strings.Builder
	b.WriteString("first line\nno newline yet")
	for i := range 2000 {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	return b.String() + "last"
}()

// TestOutputKeptOnStop: everything a script printed before a timeout or
// an interrupt is in the result (and the Hermes texts after it), in every
// mode, one-shot and in a session kernel; live output got the same. (The
// result is the same without live output: TestLiveOutput.)
func TestOutputKeptOnStop(t *testing.T) {
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir()})
	t.Cleanup(func() { require.NoError(t, ex.Close(context.Background())) })
	const timeout = 5 * time.Second
	for _, m := range liveModes {
		for _, session := range []string{"", "kept"} {
			for _, stop := range []string{"timeout", "interrupt"} {
				name := m.name + " " + stop + " session " + session
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ctx, cancel := context.WithCancelCause(context.Background())
					defer cancel(nil)
					sink := newLiveSink(t)
					req := executor.Request{Mode: m.mode, Sandbox: m.sandbox, Workdir: t.TempDir(), Code: keptScript, Kind: config.KindCLI,
						ToolHandlers: map[string]executor.ToolHandler{"web_search": func(context.Context, json.RawMessage) map[string]any {
							if stop == "interrupt" {
								cancel(&executor.InterruptError{Reason: "stop pressed"})
							}
							return map[string]any{}
						}},
						Output: sink.output}
					if session != "" {
						req.Session = name
					}
					if stop == "timeout" {
						// Long enough for a loaded machine to reach the
						// sleep, where the script waits for it.
						req.Timeout = timeout
					}
					res, err := ex.Execute(ctx, req)
					sink.done.Store(true)
					require.NoError(t, err)
					require.Equal(t, -1, *res.ExitCode)
					want := keptOutput + "\n--- stderr ---\nerr text"
					if stop == "timeout" {
						require.Equal(t, "timeout", res.Status, res.Output)
						msg := "Script timed out after 5s and was killed."
						if session != "" {
							msg = engine.KernelTimeoutMessage(timeout)
						}
						require.Equal(t, msg, res.Error)
						want += "\n\n⏰ " + msg
					} else {
						require.Equal(t, "interrupted", res.Status, res.Output)
						want += "\n[execution interrupted — stop pressed]"
					}
					require.Equal(t, want, res.Output)
					require.Equal(t, keptOutput, sink.got("stdout"))
					require.Equal(t, "err text", sink.got("stderr"))
				})
			}
		}
	}
}
