package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// More sessions than max_session_kernels, all calling at once through one
// executor: no call fails (before, a session's
// kernel was closed by another session's eviction between being found and
// being marked running: "the kernel is closed"), the cap holds, and each
// session's counter only goes up by one from call to call, or starts again
// at 1 with a note saying why (its kernel was evicted to make room).
func TestSessionKernelContention(t *testing.T) {
	t.Run("strict", func(t *testing.T) { contend(t, config.ModeStrict, 8, 50) })
	t.Run("project", func(t *testing.T) {
		if native.Resolve(context.Background(), os.Getenv).Path == "" {
			t.Skip("no host python on this machine: project-mode kernels need one (the strict variant runs without)")
		}
		contend(t, config.ModeProject, 8, 10)
	})
}

// contend runs sessions × calls session calls in mode, each session from
// its own goroutine, through one executor with max_session_kernels 2.
func contend(t *testing.T, mode string, sessions, calls int) {
	const maxKernels = 2
	cfg := config.Default()
	cfg.CodeExecution.Mode = mode
	cfg.CodeExecution.MaxSessionKernels = maxKernels
	dir := t.TempDir()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: dir, Progress: io.Discard})
	defer ex.Close(context.Background())

	var mu sync.Mutex
	var problems []string
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	var resets, waits atomic.Int64
	var wg sync.WaitGroup
	for i := range sessions {
		session := fmt.Sprintf("s%d", i)
		wg.Go(func() {
			prev := 0 // the counter the session's kernel holds
			for call := range calls {
				res, err := ex.Execute(context.Background(), executor.Request{
					Code: "n = globals().get('n', 0) + 1\nprint(n)", Mode: mode, Workdir: dir, Session: session})
				if err != nil || res.Status != config.StatusSuccess {
					problem("%s call %d: %v %s: %s", session, call, err, res.Status, res.Output)
					prev = 0
					continue
				}
				if st := ex.Stats(); st.Kernels > maxKernels {
					problem("%s call %d: %d kernels alive, over max_session_kernels %d", session, call, st.Kernels, maxKernels)
				}
				n, err := strconv.Atoi(strings.TrimSpace(res.Output))
				k := res.Kernel
				switch {
				case err != nil || k == nil:
					problem("%s call %d: output %q, kernel %+v", session, call, res.Output, k)
				case n == prev+1 && prev > 0:
					if !k.Reused || k.ExecutionCount != n {
						problem("%s call %d: counter %d in a kernel with reused=%v execution_count=%d", session, call, n, k.Reused, k.ExecutionCount)
					}
				case n == 1 && prev == 0:
					// The session's first kernel, or the one after a
					// standalone call.
				case n == 1:
					resets.Add(1)
					if k.Reused || k.Note == "" {
						problem("%s call %d: the counter went from %d back to 1 with no note (kernel %+v)", session, call, prev, k)
					}
				default:
					problem("%s call %d: the counter went from %d to %d", session, call, prev, n)
				}
				if k != nil && k.WaitedSeconds > 0 {
					waits.Add(1)
				}
				prev = n
				if k != nil && k.Ended {
					prev = 0
				}
			}
		})
	}
	wg.Wait()
	if len(problems) > 0 {
		closed := 0
		for _, p := range problems {
			if strings.Contains(p, "the kernel is closed") {
				closed++
			}
		}
		t.Fatalf("%d of %d calls went wrong (%d with \"the kernel is closed\"; kernels: %+v); the first:\n%s",
			len(problems), sessions*calls, closed, ex.Stats(), strings.Join(problems[:min(len(problems), 8)], "\n"))
	}
	st := ex.Stats()
	t.Logf("%d calls: %d found their session's kernel evicted (and said so), %d waited for a kernel; %+v",
		sessions*calls, resets.Load(), waits.Load(), st)
	if st.Kernels > maxKernels || st.Running != 0 {
		t.Fatalf("after the calls: %+v", st)
	}
}

// When every kernel runs a call, a new session's call waits for one
// (kernel.waited_seconds says how long): an interrupt or Close ends the
// wait; a subagent does not wait (its kernel takes no slot); after the
// call's timeout it runs as a standalone script with a note. The session
// whose kernel was evicted meanwhile is told why.
func TestSessionKernelWait(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 8)
	release := make(chan struct{}, 8)
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	cfg.CodeExecution.MaxSessionKernels = 1
	dir := t.TempDir()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: dir, Progress: io.Discard,
		Tools: map[string]executor.ToolHandler{"web_search": func(ctx context.Context, _ json.RawMessage) map[string]any {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return map[string]any{"data": map[string]any{"web": []any{}}}
		}}})
	closed := false
	defer func() {
		if !closed {
			ex.Close(context.Background())
		}
	}()
	ctx := context.Background()
	const count = "n = globals().get('n', 0) + 1\nprint(n)"
	const block = "from hermes_tools import web_search\nweb_search('q')\n" + count
	callCode := func(session, code string, timeout time.Duration) *executor.Call {
		return ex.Start(ctx, executor.Request{Code: code, Workdir: dir, Session: session, Timeout: timeout})
	}
	call := func(session string, timeout time.Duration) *executor.Call { return callCode(session, block, timeout) }
	waitFor := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return ex.Stats().Waiting == n }, 60*time.Second, 5*time.Millisecond)
	}
	ok := func(c *executor.Call) executor.Result {
		t.Helper()
		res, err := c.Wait()
		require.NoError(t, err)
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		return res
	}

	a := call("a", time.Minute)
	<-entered // a's kernel runs a call: the only slot is held

	b := call("b", time.Minute)
	waitFor(1)
	res, err := ex.Execute(ctx, executor.Request{Code: "print('sub')", Workdir: dir, Session: "a-sub", ParentSession: "a"})
	require.NoError(t, err)
	require.Equal(t, "sub\n", res.Output, "a subagent's kernel takes no slot: it does not wait")
	require.True(t, ex.Interrupt("b", "the user pressed stop"))
	res, err = b.Wait()
	require.NoError(t, err)
	require.Equal(t, config.StatusInterrupted, res.Status)
	require.Equal(t, "Execution interrupted before it started: the user pressed stop", res.Error)
	waitFor(0)

	b = call("b", time.Minute)
	waitFor(1)
	release <- struct{}{}
	require.Equal(t, "1\n", ok(a).Output)
	<-entered // b got a's slot, evicting a's idle kernel
	release <- struct{}{}
	res = ok(b)
	require.Positive(t, res.Kernel.WaitedSeconds, "the wait is reported")

	a = call("a", time.Minute)
	<-entered
	// (The timeout bounds the wait, then the standalone script: it has
	// room for a loaded machine.)
	b = callCode("b", count, 3*time.Second)
	res = ok(b) // a holds the slot for b's whole timeout
	require.Equal(t, "1\n", res.Output, "a fresh interpreter")
	require.True(t, res.Kernel.Ended)
	note := "all 1 session kernels (max_session_kernels) stayed busy for the call's timeout (3s); this call ran as a standalone script, state does not persist"
	require.Equal(t, note, res.Kernel.Note)
	require.Contains(t, res.Warning, note)
	require.GreaterOrEqual(t, res.Kernel.WaitedSeconds, 3.0)
	release <- struct{}{}
	res = ok(a)
	require.Equal(t, "1\n", res.Output)
	require.Contains(t, res.Kernel.Note, "closed to make room for another session's (max_session_kernels is 1)")

	a = call("a", time.Minute)
	<-entered
	b = call("b", time.Minute)
	waitFor(1)
	closed = true
	require.NoError(t, ex.Close(ctx))
	for _, c := range []*executor.Call{a, b} {
		res, _ := c.Wait()
		require.Equal(t, config.StatusInterrupted, res.Status, res.Output)
		require.Contains(t, res.Output, "the executor is shutting down")
	}
}
