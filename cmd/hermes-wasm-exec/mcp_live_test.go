package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
func runGated(t *testing.T, e *mcpEnv, cs *mcp.ClientSession, params *mcp.CallToolParams, live *liveText) {
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
		require.NoError(t, os.WriteFile(filepath.Join(e.workdir, fmt.Sprintf("go%d.txt", i)), []byte("go"), 0o644))
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
		require.NoError(t, os.Remove(filepath.Join(e.workdir, fmt.Sprintf("go%d.txt", i))))
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
	runGated(t, e, cs, params, progress)
}
