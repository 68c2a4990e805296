package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

func TestLogEvents(t *testing.T) {
	t.Parallel()
	rec := &logRecorder{}
	cfg := config.Default()
	cfg.CodeExecution.MaxSessionKernels = 1
	cfg.Terminal.EnvPassthrough = []string{"OPENAI_API_KEY"}
	ex := New(Options{
		Config:     &cfg,
		HermesHome: t.TempDir(),
		Environ:    testEnviron("HERMES_SOMETHING=1", "OPENAI_API_KEY=sk-x"),
		Logger:     slog.New(rec),
	})
	defer ex.Close(context.Background())
	ctx := context.Background()
	wd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(wd, "a.txt"), []byte("a\n"), 0o600))

	res := run(t, ex, Request{Code: "from hermes_tools import read_file\nread_file('a.txt')\nread_file('missing.txt')", Mode: "strict", Workdir: wd})
	require.Equal(t, 2, res.ToolCallsMade)

	done := rec.find("execute done")
	require.Len(t, done, 1)
	require.Equal(t, slog.LevelInfo, done[0].level)
	a := done[0].attrs
	require.Equal(t, "", a["session"])
	require.Equal(t, "strict", a["mode"])
	require.Equal(t, "success", a["status"])
	require.Equal(t, int64(2), a["tool_calls"])
	require.Positive(t, a["duration"].(time.Duration))

	calls := rec.find("tool call")
	require.Len(t, calls, 2)
	require.Equal(t, slog.LevelDebug, calls[0].level)
	require.Equal(t, "read_file", calls[0].attrs["tool"])
	require.Equal(t, true, calls[0].attrs["ok"])
	require.Equal(t, false, calls[1].attrs["ok"], "a tool error result is not ok")
	require.Contains(t, calls[0].attrs, "duration_ms")

	dropped := rec.find("dropped HERMES_* variables")
	require.NotEmpty(t, dropped)
	require.Contains(t, dropped[0].attrs["names"], "HERMES_SOMETHING")
	refused := rec.find("passthrough refused")
	require.NotEmpty(t, refused)
	require.Equal(t, slog.LevelWarn, refused[0].level)
	require.Equal(t, []string{"OPENAI_API_KEY"}, refused[0].attrs["names"])

	// An unknown mode falls back to strict with a warning.
	res, err := ex.Execute(ctx, Request{Code: "pass", Mode: "sandbox", Workdir: wd})
	require.NoError(t, err)
	require.Equal(t, "strict", res.Mode, "an unknown mode runs in the sandbox")
	unknown := rec.find("unknown mode, falling back to strict")
	require.Len(t, unknown, 1)
	require.Equal(t, "sandbox", unknown[0].attrs["mode"])
	require.Len(t, rec.find("passthrough refused"), 1, "a refused name is warned about once, not once per call")

	// Two sessions with max_session_kernels 1: the first is evicted.
	run(t, ex, Request{Code: "x = 1", Mode: "strict", Workdir: wd, Session: "s1"})
	run(t, ex, Request{Code: "x = 2", Mode: "strict", Workdir: wd, Session: "s2"})
	evicted := rec.find("kernel evicted")
	require.Len(t, evicted, 1)
	require.Equal(t, map[string]any{"session": "s1", "mode": "strict", "reason": "lru", "max_session_kernels": int64(1)}, evicted[0].attrs)
	require.Equal(t, "s2", rec.find("execute done")[3].attrs["session"])
}

func TestLogIdleKernelClosed(t *testing.T) {
	t.Parallel()
	rec := &logRecorder{}
	cfg := config.Default()
	cfg.CodeExecution.KernelIdleTimeout = 1
	ex := New(Options{Config: &cfg, HermesHome: t.TempDir(), Logger: slog.New(rec)})
	defer ex.Close(context.Background())
	run(t, ex, Request{Code: "x = 1", Mode: "strict", Session: "s"})
	require.Eventually(t, func() bool { return len(rec.find("idle kernel closed")) == 1 }, 10*time.Second, 50*time.Millisecond)
	idle := rec.find("idle kernel closed")[0]
	require.Equal(t, map[string]any{"session": "s", "mode": "strict", "kernel_idle_timeout": time.Second}, idle.attrs)
}

// A nil Logger logs nothing, and a Logger's level decides what is built
// and emitted.
func TestLogDestinations(t *testing.T) {
	ctx := context.Background()
	none := New(Options{HermesHome: t.TempDir()})
	defer none.Close(ctx)
	require.False(t, none.log.Enabled(ctx, slog.LevelError))
	none.log.Log(ctx, slog.LevelError, "nothing")

	rec := &logRecorder{}
	e := New(Options{HermesHome: t.TempDir(), Logger: slog.New(rec)})
	defer e.Close(ctx)
	e.log.Log(ctx, slog.LevelInfo, "m", "k", "v")
	require.Equal(t, []record{{slog.LevelInfo, "m", map[string]any{"k": "v"}}}, rec.find("m"))

	quiet := New(Options{HermesHome: t.TempDir(), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	defer quiet.Close(ctx)
	require.False(t, quiet.log.Enabled(ctx, slog.LevelInfo))
	require.True(t, quiet.log.Enabled(ctx, slog.LevelWarn))
}

// Close interrupts running calls in both modes, ends their interpreters
// and children, and waits for the calls to return; later calls get
// ErrClosed.
func TestCloseEndsRunningCalls(t *testing.T) {
	t.Parallel()
	var ready sync.WaitGroup
	signal := func(ctx context.Context, args json.RawMessage) map[string]any {
		ready.Done()
		return map[string]any{"success": true}
	}
	rec := &logRecorder{}
	ex := New(Options{HermesHome: t.TempDir(), Tools: map[string]ToolHandler{"web_search": signal}, Logger: slog.New(rec)})
	wd := t.TempDir()
	require.NoError(t, ex.Warm(context.Background()))

	type outcome struct {
		name string
		res  Result
	}
	results := make(chan outcome, 4)
	calls := map[string]Request{
		"strict one-shot":  {Mode: "strict"},
		"project one-shot": {Mode: "project"},
		"strict session":   {Mode: "strict", Session: "s"},
		"project session":  {Mode: "project", Session: "p"},
	}
	ready.Add(len(calls))
	for name, req := range calls {
		req.Workdir = wd
		// Strict scripts see only their staging dir, so the project
		// ones write their pid to the working dir.
		req.Code = fmt.Sprintf(`import os, time
from hermes_tools import web_search
if os.path.isdir(%q):
    open(%q, 'w').write(str(os.getpid()))
web_search("running")
time.sleep(600)`, wd, filepath.Join(wd, strings.ReplaceAll(name, " ", "-")+".pid"))
		go func() {
			res, _ := ex.Execute(context.Background(), req)
			results <- outcome{name, res}
		}()
	}
	ready.Wait() // every script runs

	start := time.Now()
	require.NoError(t, ex.Close(context.Background()))
	// The runs are stopped, not waited for (they sleep 600 s; the bound is
	// loose for a loaded machine).
	require.Less(t, time.Since(start), time.Minute)
	// A call logs "execute done" before it counts as ended; its caller
	// gets the result only after that, so the results channel could still
	// be short here.
	require.Len(t, rec.find("execute done"), len(calls), "Close returned after every call had")
	for range len(calls) {
		o := <-results
		require.Equal(t, config.StatusInterrupted, o.res.Status, o.name+": "+o.res.Output)
		require.Contains(t, o.res.Output, "[execution interrupted — the executor is shutting down]", o.name)
	}
	for _, name := range []string{"project-one-shot", "project-session"} {
		if testenv.UnderWine() {
			// wine has no Windows CPython: project mode ran the embedded
			// interpreter over wd, where the host path wd names nothing,
			// so no process wrote a pid (project-mode processes ending
			// on Close are tested on Linux).
			require.NoFileExists(t, filepath.Join(wd, name+".pid"))
			continue
		}
		b, err := os.ReadFile(filepath.Join(wd, name+".pid"))
		require.NoError(t, err)
		requireGone(t, string(b))
	}

	res, err := ex.Execute(context.Background(), Request{Code: "print(1)", Mode: "strict", Workdir: wd})
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, config.StatusError, res.Status)
	require.NoError(t, ex.Close(context.Background()), "Close is idempotent")
}

// Close gives up waiting when its ctx ends, for a tool handler that
// ignores its own.
func TestCloseWaitBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{})
	stuck := func(ctx context.Context, args json.RawMessage) map[string]any {
		close(entered)
		<-release
		return map[string]any{"success": true}
	}
	ex := New(Options{HermesHome: t.TempDir(), Tools: map[string]ToolHandler{"web_search": stuck}})
	done := make(chan struct{})
	go func() {
		ex.Execute(context.Background(), Request{Code: "from hermes_tools import web_search\nweb_search('x')", Mode: "strict", Workdir: t.TempDir()})
		close(done)
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := ex.Close(ctx)
	require.Error(t, err)
	require.True(t, errors.Is(err, context.DeadlineExceeded), err)
	close(release)
	<-done
}
