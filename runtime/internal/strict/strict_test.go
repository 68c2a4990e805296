package strict

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

var (
	engineOnce   sync.Once
	sharedStrict *Engine
)

// testEngine returns one engine for the package, with the compilation cache
// in HERMES_WASM_CACHE_DIR (set by `make test`) or the user cache dir, so
// test runs do not compile the interpreter again.
func testEngine(t testing.TB) *Engine {
	t.Helper()
	engineOnce.Do(func() {
		dir := os.Getenv("HERMES_WASM_CACHE_DIR")
		if dir == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				base = os.TempDir()
			}
			dir = filepath.Join(base, "hermes-wasm-exec-test", "wasm")
		}
		sharedStrict = New(Options{CacheDir: dir})
	})
	if err := sharedStrict.Warm(context.Background(), 0); err != nil {
		t.Fatalf("strict interpreter unavailable (pyodide-assets/dist is committed: restore it with `git checkout -- pyodide-assets/dist`): %v", err)
	}
	return sharedStrict
}

func echoTools(_ context.Context, tool string, args json.RawMessage) map[string]any {
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	return map[string]any{"tool": tool, "args": a}
}

func run(t testing.TB, code string, mod func(*engine.Request)) engine.Result {
	t.Helper()
	req := engine.Request{
		Code:         code,
		Mode:         config.ModeStrict,
		Workdir:      t.TempDir(),
		Timeout:      30 * time.Second,
		MaxToolCalls: 50,
		Env:          engine.ChildEnv([]string{"PATH=/usr/bin", "DB_PASSWORD=hunter2", "HERMES_BASE_URL=http://x"}, engine.EnvOptions{}, nil, nil),
		SpillDir:     t.TempDir(),
		Tools:        echoTools,
	}
	if mod != nil {
		mod(&req)
	}
	res, err := engine.Execute(context.Background(), testEngine(t), req)
	require.NoError(t, err)
	return res
}

func TestStrictBasics(t *testing.T) {
	res := run(t, "print('hello')\n", nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "hello\n", res.Output)
	require.Equal(t, 0, *res.ExitCode)

	res = run(t, `
import os, json, time
from hermes_tools import read_file, web_search
r = read_file("x.txt", offset=2)
print(json.dumps(r, sort_keys=True))
print(sorted(k for k in os.environ if k in ("PATH", "DB_PASSWORD", "HERMES_BASE_URL", "PYTHONUTF8")))
print(time.time() > 1.7e9)
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Contains(t, res.Output, `{"args": {"limit": 500, "offset": 2, "path": "x.txt"}, "tool": "read_file"}`)
	require.Contains(t, res.Output, "['PATH', 'PYTHONUTF8']")
	require.Contains(t, res.Output, "True")
	require.Equal(t, 1, res.ToolCallsMade)
	require.Equal(t, "read_file", res.ToolCalls[0].Tool)
}

func TestStrictErrors(t *testing.T) {
	res := run(t, "import sys\nprint('before')\nsys.exit(3)\n", nil)
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, "Script exited with code 3", res.Error)
	require.Equal(t, 3, *res.ExitCode)

	res = run(t, "def f():\n    raise ValueError('boom')\nf()\n", nil)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "Traceback (most recent call last):")
	require.Contains(t, res.Error, `File "/script.py", line 3, in <module>`)
	require.Contains(t, res.Error, "ValueError: boom")
	require.NotContains(t, res.Error, "_hermes_runner")
	require.Contains(t, res.Output, "--- stderr ---")

	res = run(t, "print('unclosed'\n", nil)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "SyntaxError")

	res = run(t, "from hermes_tools import execute_code\n", nil)
	require.Contains(t, res.Hint, "'execute_code' is not available inside the execute_code sandbox.")

	res = run(t, "import numpy\n", nil)
	require.Contains(t, res.Hint, "not available in strict mode")
}

func TestStrictTimeout(t *testing.T) {
	res := run(t, "print('started', flush=True)\nwhile True:\n    pass\n", func(r *engine.Request) { r.Timeout = 3 * time.Second })
	require.Equal(t, config.StatusTimeout, res.Status)
	require.Equal(t, "Script timed out after 3s and was killed.", res.Error)
	require.True(t, strings.HasSuffix(res.Output, "⏰ Script timed out after 3s and was killed."), res.Output)
	require.True(t, strings.HasPrefix(res.Output, "started\n"), res.Output)
}

// TestStrictLoopsYieldToGo: a guest spinning in a Python loop or in a C
// loop (sum over an endless iterator) never stops the rest of the process:
// the garbage collector (which needs every goroutine at a safe point) and
// other goroutines keep running, and the timeout stops both loops.
func TestStrictLoopsYieldToGo(t *testing.T) {
	for _, code := range []string{"while True:\n    pass\n", "import itertools\nsum(itertools.repeat(1))\n"} {
		// The guest makes a tool call just before it spins: the collections
		// start once it has (not after a sleep a loaded machine may outrun).
		spinning := make(chan struct{})
		var once sync.Once
		tools := func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
			once.Do(func() { close(spinning) })
			return echoTools(ctx, tool, args)
		}
		done := make(chan engine.Result, 1)
		go func() {
			done <- run(t, "from hermes_tools import read_file\nread_file('x')\n"+code, func(r *engine.Request) {
				r.Timeout = 5 * time.Second
				r.Tools = tools
			})
		}()
		select {
		case <-spinning:
		case res := <-done:
			t.Fatalf("%q: the run ended before its loop started: %s %s", code, res.Status, res.Output)
		}
		for i := 0; i < 5; i++ {
			gc := make(chan struct{})
			go func() { goruntime.GC(); close(gc) }()
			select {
			case <-gc:
			case <-time.After(30 * time.Second):
				t.Fatalf("%q: a garbage collection did not finish while the guest spun", code)
			}
		}
		res := <-done
		require.Equal(t, config.StatusTimeout, res.Status, code)
	}
}

func TestStrictMemoryCap(t *testing.T) {
	res := run(t, "x = bytearray(200 * 1024 * 1024)\nprint(len(x))\n", func(r *engine.Request) { r.MemoryLimitMB = 64 })
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Output, "MemoryError")
}

func BenchmarkStrictPrint1(b *testing.B) {
	testEngine(b)
	for b.Loop() {
		res := run(b, "print(1)\n", nil)
		if res.Status != config.StatusSuccess {
			b.Fatal(res.Output)
		}
	}
}

func BenchmarkStrictToolRoundTrip(b *testing.B) {
	testEngine(b)
	code := "from hermes_tools import web_search\nfor _ in range(%d):\n    web_search('x')\n"
	for b.Loop() {
		res := run(b, fmt.Sprintf(code, 1000), func(r *engine.Request) { r.MaxToolCalls = 1000 })
		if res.Status != config.StatusSuccess {
			b.Fatal(res.Output)
		}
	}
}

func TestStrictStubModule(t *testing.T) {
	res := run(t, `import hermes_tools, json
from hermes_tools import json_parse, shell_quote, retry
print(hasattr(hermes_tools, "execute_code"), hasattr(hermes_tools, "delegate_task"))
import os
print(os.path.exists("/.hermes"), sorted(os.listdir("/")))
print(json_parse("\ufeff{\"a\": \"x\ty\"}"))
print(shell_quote("it's here"))
calls = []
def flaky():
    calls.append(1)
    if len(calls) < 3:
        raise OSError("try again")
    return "done"
print(retry(flaky, max_attempts=3, delay=0), len(calls))
try:
    retry(lambda: 1 / 0, max_attempts=2, delay=0)
except ZeroDivisionError:
    print("re-raised")
r = hermes_tools.patch("f.py", "a", "b", replace_all=True)
print(json.dumps(r["args"], sort_keys=True))
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, `False False
False ['__pycache__', '_hermes_runner.py', 'hermes_tools.py', 'script.py']
{'a': 'x\ty'}
'it'"'"'s here'
done 3
re-raised
{"mode": "replace", "new_string": "b", "old_string": "a", "patch": null, "path": "f.py", "replace_all": true}
`, res.Output)
}

func TestStrictSleep(t *testing.T) {
	res := run(t, `import time
from time import sleep
t0 = time.monotonic(); w0 = time.time()
sleep(0.2)
time.sleep(0)
print(time.monotonic() - t0 >= 0.2, time.time() - w0 >= 0.19)
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "True True\n", res.Output)

	start := time.Now()
	res = run(t, "import time\ntime.sleep(120)\n", func(r *engine.Request) { r.Timeout = 2 * time.Second })
	require.Equal(t, config.StatusTimeout, res.Status)
	require.Less(t, time.Since(start), 60*time.Second, "a sleeping script is stopped at its timeout")
}

func TestStrictInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	// The interrupt comes 300 ms after the script's tool call, just before
	// its loop: not at a fixed time from the start, which a loaded machine
	// may not have reached.
	tools := func(ctx context.Context, tool string, args json.RawMessage) map[string]any {
		time.AfterFunc(300*time.Millisecond, func() { cancel(&engine.InterruptError{}) })
		return echoTools(ctx, tool, args)
	}
	res, err := engine.Execute(ctx, testEngine(t), engine.Request{
		Code: "from hermes_tools import read_file\nprint('partial', flush=True)\nread_file('x')\nwhile True:\n    pass\n", Mode: config.ModeStrict,
		Workdir: t.TempDir(), Timeout: 2 * time.Minute, MaxToolCalls: 5, Tools: tools,
	})
	require.NoError(t, err)
	require.Equal(t, config.StatusInterrupted, res.Status)
	require.True(t, strings.HasSuffix(res.Output, "[execution interrupted — user sent a new message]"), res.Output)
}

func TestStrictExitBuiltins(t *testing.T) {
	res := run(t, "print('bye')\nexit(5)\n", nil)
	require.Equal(t, "Script exited with code 5", res.Error)
	res = run(t, "quit()\n", nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
}

func TestStrictBytecodeCache(t *testing.T) {
	cache := t.TempDir()
	src := testEngine(t).opts.CacheDir
	// Share the compiled machine code, but not the bytecode.
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "wazero") {
			require.NoError(t, os.Symlink(filepath.Join(src, e.Name()), filepath.Join(cache, e.Name())))
		}
	}
	var progress bytes.Buffer
	runWith := func() engine.Result {
		progress.Reset()
		e := New(Options{CacheDir: cache, Progress: &progress})
		defer e.Close(context.Background())
		res, err := engine.Execute(context.Background(), e, engine.Request{
			Code: "import hermes_tools, sys\nprint(hermes_tools.__cached__)\nhermes_tools.web_search(object())\n",
			Mode: config.ModeStrict, Workdir: t.TempDir(), Timeout: time.Minute, MaxToolCalls: 5, Tools: echoTools,
		})
		require.NoError(t, err)
		return res
	}
	res := runWith()
	// The first compile in a cache dir says so, once.
	require.Contains(t, progress.String(), fmt.Sprintf("hermes-wasm-exec: compiling the Python interpreter (%.0f MB of wasm;", float64(pyodideassets.Size)/1e6)+" first run only, a few seconds; cached in "+cache)
	require.Equal(t, 1, strings.Count(progress.String(), "\n"))
	require.Contains(t, res.Output, "__pycache__/hermes_tools.")
	// Tracebacks through the cached module still show its source lines.
	require.Contains(t, res.Error, `File "/hermes_tools.py"`)
	require.Contains(t, res.Error, "TypeError: Object of type object is not JSON serializable")
	require.Regexp(t, `File "/hermes_tools.py", line \d+, in web_search\n\s+return _call`, res.Error)

	dirs, err := filepath.Glob(filepath.Join(cache, "pyc-*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	pycs, err := filepath.Glob(filepath.Join(dirs[0], "*.pyc"))
	require.NoError(t, err)
	require.Len(t, pycs, len(stagedNames))
	// A damaged cache is rebuilt, never used.
	require.NoError(t, os.WriteFile(pycs[0], []byte("garbage"), 0o600))
	res = runWith()
	require.Empty(t, progress.String(), "a warm cache compiles nothing")
	require.Contains(t, res.Output, "__pycache__/hermes_tools.")
	b, err := os.ReadFile(pycs[0])
	require.NoError(t, err)
	require.NotEqual(t, "garbage", string(b))
}

// TestStrictConcurrentRuns runs several scripts at once on one engine: each
// gets its own instance, channel and tool log.
func TestStrictConcurrentRuns(t *testing.T) {
	eng := testEngine(t)
	var wg sync.WaitGroup
	results := make([]engine.Result, 4)
	for i := range results {
		wg.Go(func() {
			res, err := engine.Execute(context.Background(), eng, engine.Request{
				Code: fmt.Sprintf("from hermes_tools import web_search\nfor j in range(%d):\n    r = web_search('run%d-' + str(j))\nprint(r['args']['query'])\n", i+2, i),
				Mode: config.ModeStrict, Workdir: t.TempDir(), Timeout: time.Minute, MaxToolCalls: 50, Tools: echoTools,
			})
			require.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	for i, res := range results {
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		require.Equal(t, fmt.Sprintf("run%d-%d\n", i, i+1), res.Output)
		require.Equal(t, i+2, res.ToolCallsMade)
	}
}

// TestStrictLargeToolMessages: requests and responses far larger than the
// host call's 64 KiB response buffer cross the channel intact (the rest of
// a response is fetched with hermes.take), including non-ASCII text.
func TestStrictLargeToolMessages(t *testing.T) {
	res := run(t, `
import hermes_tools
for n in (10, 65535, 65536, 300000):
    content = ("é" + "x" * 9) * (n // 10) + "\n"
    r = hermes_tools.write_file("big.txt", content)
    assert r["args"]["content"] == content, n
print("ok")
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "ok\n", res.Output)
}

// TestStrictProcessTime: time.process_time reads the instance's clock in
// seconds. wazero implements no CPU-time clock, and CPython's fallback,
// libc's times(), reported nanoseconds as ticks of 1/100 s: a loop of a
// fraction of a second read as days.
func TestStrictProcessTime(t *testing.T) {
	res := run(t, `import time
info = time.get_clock_info("process_time")
wall = time.perf_counter()
t0 = time.process_time()
sum(range(200000))
t1 = time.process_time()
wall = time.perf_counter() - wall
print(info.implementation, t0, t1 - t0, wall)
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var impl string
	var start, spent, wall float64
	_, err := fmt.Sscan(res.Output, &impl, &start, &spent, &wall)
	require.NoError(t, err, res.Output)
	require.Equal(t, "clock()", impl, "libc's clock(): the time since the interpreter started")
	// The interpreter's start counts once, as in a native python: well
	// under a minute, never the host's time since boot.
	require.Greater(t, start, 0.0)
	require.Less(t, start, 60.0)
	require.Greater(t, spent, 0.0)
	// The loop's process time is its wall time (WASI has no CPU clock),
	// within the clock reads around it.
	require.LessOrEqual(t, spent, wall+0.001, res.Output)
}

// TestStrictOSTimes: os.times() counts seconds. wasi-libc's times()
// reports nanoseconds where CPython divides by sysconf(_SC_CLK_TCK) (100
// ticks a second): 10^7 too large, until the recipe's own times()
// (pyodide-assets/cpython/hermes_host.c) counted ticks.
func TestStrictOSTimes(t *testing.T) {
	res := run(t, `import os, time
t0 = os.times()
end = time.perf_counter() + 0.05
while time.perf_counter() < end:
    pass
t1 = os.times()
print(t0.user, t1.user - t0.user, t1.elapsed - t0.elapsed, t1.system, t1.children_user, t1.children_system)
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var start, user, elapsed, system, childUser, childSystem float64
	_, err := fmt.Sscan(res.Output, &start, &user, &elapsed, &system, &childUser, &childSystem)
	require.NoError(t, err, res.Output)
	// The interpreter's start counts once, as in a native python.
	require.GreaterOrEqual(t, start, 0.0, res.Output)
	require.Less(t, start, 60.0, res.Output)
	// The loop spins for 50 ms: several ticks of 10 ms, far from a minute.
	require.Greater(t, user, 0.0, res.Output)
	require.Less(t, user, 60.0, res.Output)
	require.Greater(t, elapsed, 0.0, res.Output)
	require.Less(t, elapsed, 60.0, res.Output)
	// No system time, and no child processes in the guest.
	require.Zero(t, system, res.Output)
	require.Zero(t, childUser, res.Output)
	require.Zero(t, childSystem, res.Output)
}
