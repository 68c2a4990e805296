package executor_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cpustat"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// BenchmarkStrictSessionThroughput is `hermes-wasm-exec bench`'s strict
// kernel throughput row through the whole executor: 8 sessions, each
// making 200 calls of `n += 1` from its own goroutine, all at once. One op
// is the 1600 calls; calls/s is the rate (the goal: 20k calls/s,
// docs/performance.md). The executor runs with the default config (each
// call enforces the default timeout), with room for the 8 kernels.
func BenchmarkStrictSessionThroughput(b *testing.B) {
	sessionThroughput(b, config.ModeStrict, "")
}

// BenchmarkSandboxedSessionThroughput is the same with sandboxed
// project-mode kernels (code_execution.sandbox: wasm): the bench's
// "sandboxed project kernel: 8 sessions x 200 calls" row.
func BenchmarkSandboxedSessionThroughput(b *testing.B) {
	sessionThroughput(b, config.ModeProject, config.SandboxWasm)
}

func sessionThroughput(b *testing.B, mode, sandbox string) {
	const sessions, calls = 8, 200
	cfg := config.Default()
	cfg.CodeExecution.Mode = mode
	cfg.CodeExecution.Sandbox = cmp.Or(sandbox, config.SandboxNone)
	cfg.CodeExecution.MaxSessionKernels = sessions // as bench's 128: none evicted
	dir := b.TempDir()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: dir, Progress: io.Discard})
	defer ex.Close(context.Background())
	exec1 := func(session, code string) error {
		res, err := ex.Execute(context.Background(), executor.Request{Code: code, Mode: mode, Sandbox: sandbox, Workdir: dir, Session: session})
		if err == nil && res.Status != config.StatusSuccess {
			err = fmt.Errorf("%s: %s", res.Status, res.Output)
		}
		return err
	}
	for i := range sessions {
		require.NoError(b, exec1(fmt.Sprintf("tp-%d", i), "n = 0"))
	}
	testenv.Throughput(b, sessions, calls, func(i int) error { return exec1(fmt.Sprintf("tp-%d", i), "n += 1") })
}

// benchModeExecutor is an executor configured as `serve --mode mode
// [--sandbox wasm]` would run it (default config otherwise), with a working
// dir of its own, for the one-shot and kernel-call benchmarks below. A
// project-mode one without sandbox needs a host python (skipped without).
func benchModeExecutor(b *testing.B, mode, sandbox string) (*executor.Executor, string) {
	b.Helper()
	if mode == config.ModeProject && sandbox != config.SandboxWasm && native.Resolve(context.Background(), os.Getenv).Path == "" {
		b.Skip("no host python for project mode")
	}
	cfg := config.Default()
	cfg.CodeExecution.Mode = mode
	cfg.CodeExecution.Sandbox = cmp.Or(sandbox, config.SandboxNone)
	home := b.TempDir()
	wd := filepath.Join(home, "project")
	require.NoError(b, os.Mkdir(wd, 0o700))
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: home, Progress: io.Discard})
	b.Cleanup(func() { ex.Close(context.Background()) })
	return ex, wd
}

// benchOneShot is a fresh run of print(1) through the whole executor, one
// op each (the bench's "print(1) in a warm process" rows; `run` adds the
// process around it).
func benchOneShot(b *testing.B, mode, sandbox string) {
	ex, wd := benchModeExecutor(b, mode, sandbox)
	req := executor.Request{Code: "print(1)", Mode: mode, Sandbox: sandbox, Workdir: wd}
	exec1 := func() {
		res, err := ex.Execute(context.Background(), req)
		if err != nil || res.Status != config.StatusSuccess || res.Output != "1\n" {
			b.Fatalf("%v %+v", err, res)
		}
	}
	exec1() // the compiled interpreter loaded and the host python probed before the clock
	cpuPerOp(b, func() {
		for b.Loop() {
			exec1()
		}
	})
}

// cpuPerOp runs loop and reports the process's CPU per op (cpu-µs/op):
// steadier than the wall-clock time where other work shares the cores.
func cpuPerOp(b *testing.B, loop func()) {
	cpu0, ok := cpustat.Process()
	loop()
	if cpu1, ok1 := cpustat.Process(); ok && ok1 && b.N > 0 {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// benchKernelCall is print(1) on a warm session kernel through the whole
// executor, one op each (the bench's "kernel: warm call" rows).
func benchKernelCall(b *testing.B, mode, sandbox string) {
	ex, wd := benchModeExecutor(b, mode, sandbox)
	req := executor.Request{Code: "print(1)", Mode: mode, Sandbox: sandbox, Workdir: wd, Session: "bench-warm"}
	res, err := ex.Execute(context.Background(), req)
	require.NoError(b, err)
	require.Equal(b, config.StatusSuccess, res.Status, "%+v", res)
	cpuPerOp(b, func() {
		for b.Loop() {
			res, err := ex.Execute(context.Background(), req)
			if err != nil || res.Status != config.StatusSuccess || res.Output != "1\n" || res.Kernel == nil || !res.Kernel.Reused {
				b.Fatalf("not a warm kernel's call: %v %+v", err, res)
			}
		}
	})
}

// BenchmarkSandboxedRun is the sandboxed project mode's one-shot run
// (code_execution.sandbox: wasm): a fresh interpreter instance over the
// working dir. BenchmarkStrictRun and BenchmarkProjectRun are the same
// call in the other two ways of running it (docs/performance.md):
//
//	go test -run - -bench '(Sandboxed|Strict|Project)(Run|KernelCall)$' ./runtime/executor/
func BenchmarkSandboxedRun(b *testing.B) {
	benchOneShot(b, config.ModeProject, config.SandboxWasm)
}

func BenchmarkStrictRun(b *testing.B) { benchOneShot(b, config.ModeStrict, "") }

func BenchmarkProjectRun(b *testing.B) { benchOneShot(b, config.ModeProject, config.SandboxNone) }

// BenchmarkSandboxedKernelCall is a warm sandboxed project-mode session
// kernel's call; BenchmarkStrictKernelCall and BenchmarkProjectKernelCall
// its anchors.
func BenchmarkSandboxedKernelCall(b *testing.B) {
	benchKernelCall(b, config.ModeProject, config.SandboxWasm)
}

func BenchmarkStrictKernelCall(b *testing.B) { benchKernelCall(b, config.ModeStrict, "") }

func BenchmarkProjectKernelCall(b *testing.B) {
	benchKernelCall(b, config.ModeProject, config.SandboxNone)
}

// benchNewSession is the first call, print(1), of a new session through
// the whole executor, with no warm pool: a kernel started for it. One op
// each; the session is closed outside the clock.
func benchNewSession(b *testing.B, mode, sandbox string) {
	ex, wd := benchModeExecutor(b, mode, sandbox)
	i := 0
	call := func() {
		i++
		session := fmt.Sprintf("new-%d", i)
		res, err := ex.Execute(context.Background(), executor.Request{Code: "print(1)", Mode: mode, Sandbox: sandbox, Workdir: wd, Session: session})
		if err != nil || res.Status != config.StatusSuccess || res.Kernel == nil || res.Kernel.Reused {
			b.Fatalf("not a new kernel's call: %v %+v", err, res)
		}
		b.StopTimer()
		ex.CloseSession(context.Background(), session)
		b.StartTimer()
	}
	call()
	for b.Loop() {
		call()
	}
}

// BenchmarkSandboxedNewSession is a new sandboxed session's first call:
// there is no warm pool of sandboxed kernels (the bench's "sandboxed
// project kernel: first call of a new session"); BenchmarkStrictNewSession
// is strict mode's without its warm pool.
func BenchmarkSandboxedNewSession(b *testing.B) {
	benchNewSession(b, config.ModeProject, config.SandboxWasm)
}

func BenchmarkStrictNewSession(b *testing.B) { benchNewSession(b, config.ModeStrict, "") }

// BenchmarkPoolToolCalls: eight web_extract calls of a page that takes
// 300 ms to serve, from a ThreadPoolExecutor, one-shot in strict mode:
// the pool's tool calls go to the host as one batch that runs them
// concurrently (about 0.3 s a run, not 2.4 s).
func BenchmarkPoolToolCalls(b *testing.B) {
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: b.TempDir(), Tools: map[string]executor.ToolHandler{
		"web_extract": func(ctx context.Context, args json.RawMessage) map[string]any {
			select {
			case <-time.After(300 * time.Millisecond): // the page's serving time
			case <-ctx.Done():
			}
			return map[string]any{"results": []any{map[string]any{"content": "page"}}}
		},
	}})
	defer ex.Close(context.Background())
	code := "from concurrent.futures import ThreadPoolExecutor\nfrom hermes_tools import web_extract\n" +
		"with ThreadPoolExecutor(8) as pool:\n    pages = list(pool.map(web_extract, [['https://example.com/%d' % i] for i in range(8)]))\n"
	wd := b.TempDir()
	for b.Loop() {
		res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeStrict, Workdir: wd, Code: code})
		if err != nil || res.Status != config.StatusSuccess {
			b.Fatalf("%v %s", err, res.Output)
		}
	}
}
