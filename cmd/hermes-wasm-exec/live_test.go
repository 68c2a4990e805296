package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// gatedTicks prints three ticks and, after each, waits until the test
// creates goN.txt in the working dir (seen through read_file), so that a
// tick's notification is known to arrive while the script runs; then it
// writes a line to stderr and prints "done".
const gatedTicks = `import sys, time
from hermes_tools import read_file
for i in range(3):
    print("tick", i)
    while "error" in read_file("go%d.txt" % i):
        time.sleep(0.02)
sys.stderr.write("bye\n")
print("done")
`

// liveText gathers the output an MCP client got live, per stream.
type liveText struct {
	t    *testing.T
	text map[string]string
	in   chan [2]string
}

func newLiveText(t *testing.T) *liveText {
	return &liveText{t: t, text: map[string]string{}, in: make(chan [2]string, 1000)}
}

// add is called by the client's notification handlers.
func (l *liveText) add(stream, text string) { l.in <- [2]string{stream, text} }

// waitFor waits until stream's text is want, or has it in it when
// contains.
func (l *liveText) waitFor(stream, want string, contains bool) {
	l.t.Helper()
	deadline := time.After(rpcTimeout)
	for {
		got := l.text[stream]
		if got == want || contains && strings.Contains(got, want) {
			return
		}
		select {
		case c := <-l.in:
			l.text[c[0]] += c[1]
		case <-deadline:
			l.t.Fatalf("the client got %q on %s live, waiting for %q", got, stream, want)
		}
	}
}

// runGated runs gatedTicks with params, releasing each tick once live
// has it, and checks the result and what live got.
func runGated(t *testing.T, workdir string, cs *mcp.ClientSession, params *mcp.CallToolParams, live *liveText) {
	t.Helper()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		defer cancel()
		res, err := cs.CallTool(ctx, params)
		done <- answer{res, err}
	}()
	for i := range 3 {
		live.waitFor("stdout", fmt.Sprintf("tick %d\n", i), true)
		require.NoError(t, os.WriteFile(filepath.Join(workdir, fmt.Sprintf("go%d.txt", i)), []byte("go"), 0o644))
	}
	a := <-done
	require.NoError(t, a.err)
	require.False(t, a.res.IsError, "%+v", a.res.Content)
	require.Equal(t, "tick 0\ntick 1\ntick 2\ndone\n", a.res.Content[0].(*mcp.TextContent).Text)
	// Sent before the result, but the client may hand a notification to
	// its handler after the result to its caller.
	live.waitFor("stdout", "tick 0\ntick 1\ntick 2\ndone\n", false)
	live.waitFor("stderr", "bye\n", false)
	for i := range 3 {
		require.NoError(t, os.Remove(filepath.Join(workdir, fmt.Sprintf("go%d.txt", i))))
	}
}

// TestMCPLiveOutput: a call with a progress token gets the script's output
// as progress notifications while it runs (the message a chunk, the stream
// in _meta, the progress increasing), and the same result; a call without
// one gets none.
func TestMCPLiveOutput(t *testing.T) {
	e := newMCPEnv(t, "strict", func(c *config.Config) { c.CodeExecution.MaxToolCalls = 100_000 })

	progress := newLiveText(t)
	var last float64
	cs, _ := e.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		p := r.Params
		if p.ProgressToken != "tick-token" {
			t.Errorf("progress for the token %v", p.ProgressToken)
		}
		if p.Progress <= last {
			t.Errorf("progress %v after %v", p.Progress, last)
		}
		last = p.Progress
		stream, _ := p.Meta["hermes-wasm-exec/stream"].(string)
		progress.add(stream, p.Message)
	}}, nil)
	// No token, no notifications: the next call's text is all there is
	// (the notifications come in order).
	text, _, isErr := callCode(t, cs, map[string]any{"code": "print('unseen')"})
	require.False(t, isErr)
	require.Equal(t, "unseen\n", text)

	params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": gatedTicks}}
	params.SetProgressToken("tick-token")
	runGated(t, e.workdir, cs, params, progress)
}

// TestMCPHTTPLiveOutput: over Streamable HTTP, the progress notifications
// of a call's output reach the client on the call's own stream while it
// runs.
func TestMCPHTTPLiveOutput(t *testing.T) {
	t.Parallel()
	s := startHTTPMCPIn(t, httpSetup{config: "  max_tool_calls: 100000\n"}, nil)
	s.waitReady(t)
	progress := newLiveText(t)
	cs, err := s.sessionWith(s.token, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		stream, _ := r.Params.Meta["hermes-wasm-exec/stream"].(string)
		progress.add(stream, r.Params.Message)
	}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": gatedTicks}}
	params.SetProgressToken(7)
	runGated(t, s.workdir, cs, params, progress)
}

// notifyingBuffer is a stderr that says on wrote when it got more.
type notifyingBuffer struct {
	mu    sync.Mutex
	buf   strings.Builder
	wrote chan struct{}
}

func (b *notifyingBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	b.mu.Unlock()
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (b *notifyingBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunStream: `run --stream` copies what the script prints to stderr
// while it runs (each tick is there before the script goes on), and
// stdout is the same one JSON result; without --stream, stderr has none
// of it.
func TestRunStream(t *testing.T) {
	var help bytes.Buffer
	require.Equal(t, 0, Run([]string{"run", "--help"}, nil, &help, io.Discard))
	require.Contains(t, help.String(), "\n  --stream                  copy what the script prints (stdout and stderr) to\n")
	forModes(t, allModes, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		full := append(append([]string{"run"}, m.args...), "--workdir", e.workdir, "--max-tool-calls", "100000", "--stream", "-")
		var stdout bytes.Buffer
		stderr := &notifyingBuffer{wrote: make(chan struct{}, 1)}
		exit := make(chan int, 1)
		go func() { exit <- Run(full, strings.NewReader(gatedTicks), &stdout, stderr) }()
		deadline := time.After(rpcTimeout)
		for i := range 3 {
			for !strings.Contains(stderr.String(), fmt.Sprintf("tick %d\n", i)) {
				select {
				case <-stderr.wrote:
				case <-deadline:
					t.Fatalf("tick %d is not on stderr: %q", i, stderr.String())
				}
			}
			require.NoError(t, os.WriteFile(filepath.Join(e.workdir, fmt.Sprintf("go%d.txt", i)), []byte("go"), 0o644))
		}
		require.Equal(t, 0, <-exit, stderr.String())
		var res result
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "stdout is one JSON object: %s", stdout.String())
		require.Equal(t, "tick 0\ntick 1\ntick 2\ndone\n", res.Output)
		require.Contains(t, stderr.String(), "tick 2\n")
		require.Contains(t, stderr.String(), "bye\n")
		require.Contains(t, stderr.String(), "done\n")

		code, res, errText := e.run("print('quiet')")
		require.Equal(t, 0, code)
		require.Equal(t, "quiet\n", res.Output)
		require.NotContains(t, errText, "quiet")
	})
}
