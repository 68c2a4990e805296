package strict

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// growScript grows the guest to about n MiB of linear memory one MiB at
// a time (as a growing list or dict does: many memory.grow calls, each a
// little larger than the last) and touches every page of it, so all of it
// is resident.
const growScript = `
chunks = []
for _ in range(%d):
    b = bytearray(1 << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    chunks.append(b)
print(sum(map(len, chunks)) >> 20)
`

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(field string) (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n << 10, err == nil
			}
		}
	}
	return 0, false
}

// TestStrictMemoryReleased checks that every instance's memory reservation
// is released when the instance ends, however it ends: a normal end,
// sys.exit, an exception, a guest out of memory, a timeout, a kernel
// closed idle or killed in a cell, and a pooled kernel. While an instance
// runs its reservation is live (so the allocator is really in use); after
// all of them the count is back to where it was, and so is the process's
// mapped address space (VmSize, where there is /proc): each leaked
// reservation would add the whole cap, 512 MiB, to it.
func TestStrictMemoryReleased(t *testing.T) {
	if !canReserve {
		t.Skip("no memory reservation on " + goruntime.GOOS)
	}
	e := testEngine(t)
	// Warm the one-time costs (bytecode, kernel start) before the baseline.
	run(t, "print(1)\n", nil)
	base := liveReservations.Load()
	vmBase, haveVM := procStatus("VmSize")

	t.Run("one-shot", func(t *testing.T) {
		for _, tc := range []struct {
			code   string
			status string
			mod    func(*engine.Request)
		}{
			{"print(1)\n", config.StatusSuccess, nil},
			{fmt.Sprintf(growScript, 100), config.StatusSuccess, nil},
			{"import sys\nsys.exit(3)\n", config.StatusError, nil},
			{"raise ValueError('x')\n", config.StatusError, nil},
			{"x = bytearray(200 * 1024 * 1024)\n", config.StatusError, func(r *engine.Request) { r.MemoryLimitMB = 64 }},
			{"while True:\n    pass\n", config.StatusTimeout, func(r *engine.Request) { r.Timeout = 2 * time.Second }},
		} {
			res := run(t, tc.code, tc.mod)
			require.Equal(t, tc.status, res.Status, "%s: %s", tc.code, res.Output)
			require.Equal(t, base, liveReservations.Load(), "after %q", tc.code)
		}
	})

	t.Run("kernel", func(t *testing.T) {
		k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
		require.Equal(t, base+1, liveReservations.Load(), "a running kernel holds its reservation")
		okCell(t, k, fmt.Sprintf(growScript, 50))
		require.NoError(t, k.Close())
		require.Equal(t, base, liveReservations.Load(), "after an idle kernel's Close")

		// A cell killed by its context: the instance is stopped mid-loop.
		k = startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
		res, err := cell(t, k, "while True:\n    pass\n", func(r *engine.Request) { r.Timeout = 2 * time.Second })
		require.NoError(t, err)
		require.Equal(t, config.StatusTimeout, res.Status, res.Output)
		requireGone(t, k)
		require.Equal(t, base, liveReservations.Load(), "after a killed kernel")
	})

	t.Run("pool", func(t *testing.T) {
		p := e.NewKernelPool(1, engine.KernelSpec{Env: kernelEnv})
		waitFor(t, 60*time.Second, "pool warm", func() bool { return p.Idle() == 1 })
		k, fromPool, err := p.Get(context.Background())
		require.NoError(t, err)
		require.True(t, fromPool)
		okCell(t, k, "print(1)\n")
		require.NoError(t, k.Close())
		p.Close() // also closes the refill, started or in progress
		require.Equal(t, base, liveReservations.Load(), "after the pool's Close")
	})

	if haveVM {
		vm, _ := procStatus("VmSize")
		t.Logf("VmSize: %d MiB before, %d MiB after", vmBase>>20, vm>>20)
		// The Go heap may have reserved an arena or two meanwhile; a leaked
		// reservation is 512 MiB.
		require.Less(t, vm-vmBase, int64(256<<20), "mapped memory did not return to its baseline")
	}
}

// BenchmarkStrictGrow measures a run whose guest grows its memory to
// 256 MiB one MiB at a time: with the reservation each memory.grow is
// O(delta); with wazero's default Go slice each copied the whole memory.
func BenchmarkStrictGrow(b *testing.B) {
	testEngine(b)
	code := fmt.Sprintf(growScript, 256)
	for b.Loop() {
		res := run(b, code, nil)
		if res.Status != config.StatusSuccess {
			b.Fatal(res.Output)
		}
	}
}

// exhaustScripts fill the guest's memory in the ways scripts do: many
// small objects (CPython's small-object allocator, which falls back to
// malloc when it cannot get an arena), a growing dict, a list of ints,
// large blocks, and one doubling string.
var exhaustScripts = []struct{ name, code string }{
	{"small objects", "l = []\nwhile True:\n    l.append(bytearray(200))\n"},
	{"dict of str", "d = {}\ni = 0\nwhile True:\n    d[i] = str(i)\n    i += 1\n"},
	{"list of ints", "l = []\ni = 0\nwhile True:\n    l.append(i)\n    i += 1\n"},
	{"64 KiB blocks", "l = []\nwhile True:\n    l.append(bytearray(1 << 16))\n"},
	{"1 MiB blocks", "l = []\nwhile True:\n    l.append(bytearray(1 << 20))\n"},
	{"doubling string", "s = 'x'\nwhile True:\n    s += s\n"},
}

// requireMemoryErrorReport checks that res is the report of a MemoryError
// raised in the script's file where (File "...", line N): the traceback is
// in Error, the script's frames only, with no MemoryError raised while
// reporting it.
func requireMemoryErrorReport(t *testing.T, res engine.Result, where string) {
	t.Helper()
	require.Equal(t, config.StatusError, res.Status, res.Output)
	require.True(t, strings.HasPrefix(res.Error, "Traceback (most recent call last):\n"), res.Output)
	require.Contains(t, res.Error, "\n  File "+where+", line ", res.Output)
	require.True(t, strings.HasSuffix(res.Error, "\nMemoryError"), res.Output)
	require.Contains(t, res.Output, res.Error)
	require.NotContains(t, res.Output, "During handling", "a second MemoryError while reporting the first")
	require.NotContains(t, res.Output, "_hermes_")
}

// TestStrictMemoryErrorTraceback: a script that uses up its memory cap gets
// its MemoryError traceback in the result. Before the grace zone (see
// memory.go), reporting it needed memory there was none of: the result
// had "Script exited with code 1" and chained MemoryErrors, from the
// runner's import of traceback or with no frames at all.
func TestStrictMemoryErrorTraceback(t *testing.T) {
	e := testEngine(t)
	for _, tc := range exhaustScripts {
		t.Run(tc.name, func(t *testing.T) {
			res, err := engine.Execute(context.Background(), e, engine.Request{
				Code: tc.code, Mode: config.ModeStrict, Workdir: t.TempDir(),
				Timeout: time.Minute, MemoryLimitMB: 48, Tools: echoTools,
			})
			require.NoError(t, err)
			requireMemoryErrorReport(t, res, `"/script.py"`)
		})
	}
}

// testKernelMemoryErrorTraceback: the same in a kernel's cell, which keeps
// the kernel and its state; once the cell's data is freed, running out
// again is reported again (the grace zone is armed before each cell).
func testKernelMemoryErrorTraceback(t *testing.T, e *Engine) {
	for _, tc := range []int{0, 1} { // small objects, dict of str
		s := exhaustScripts[tc]
		k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv, MemoryLimitMB: 48}, false)
		okCell(t, k, "x = 'kept'\n")
		n := 2 // the cell's number
		for range 2 {
			res, err := cell(t, k, s.code, nil)
			require.NoError(t, err)
			requireMemoryErrorReport(t, res, fmt.Sprintf(`"<cell %d>"`, n))
			n += 2
			require.True(t, k.Alive(), "an exception keeps the kernel")
			require.Equal(t, "kept\n", okCell(t, k, "l = d = None\nprint(x)\n"))
		}
		require.NoError(t, k.Close())
	}
}

// TestInstanceMemoryGrace drives the allocator's decisions the way
// dlmalloc's requests come (see "Running out, and reporting it").
func TestInstanceMemoryGrace(t *testing.T) {
	const mib = 1 << 20
	const capBytes = 16 * mib
	grow := func(m *instanceMemory, delta uint64) bool { return m.allow(m.size + delta) }

	t.Run("a large allocation runs out", func(t *testing.T) {
		m := newInstanceMemory(capBytes)
		require.Equal(t, uint64(capBytes+graceBytes), m.hard)
		require.True(t, m.allow(capBytes-mib))
		require.True(t, grow(m, mib), "up to the cap")
		require.False(t, grow(m, 2*mib), "in place: past the cap")
		require.False(t, m.grace, "dlmalloc retries")
		require.False(t, grow(m, 3*mib), "the retry, as a new segment")
		require.True(t, m.grace, "the allocation has failed: the zone opens")
		require.True(t, grow(m, mib), "the report's memory")
		require.True(t, m.allow(m.hard), "up to the hard limit")
		require.False(t, grow(m, wasmPage), "never past it")
		require.Equal(t, uint64(capBytes+graceBytes), m.size)
	})

	t.Run("small objects run out", func(t *testing.T) {
		m := newInstanceMemory(capBytes)
		require.True(t, m.allow(capBytes))
		require.False(t, grow(m, 256<<10), "a new arena, in place")
		require.False(t, grow(m, arenaRequest), "a new arena, as a segment")
		require.False(t, m.grace, "the small-object allocator falls back to malloc")
		require.False(t, grow(m, arenaRequest), "another arena, while the fallback still fits")
		require.False(t, m.grace)
		require.False(t, grow(m, 64<<10), "the fallback malloc needs a segment")
		require.True(t, m.grace, "the object could not be allocated: the zone opens")
		require.True(t, grow(m, arenaRequest), "a traceback object's arena")
	})

	t.Run("a request nothing could hold", func(t *testing.T) {
		m := newInstanceMemory(capBytes)
		require.True(t, m.allow(8*mib))
		require.False(t, grow(m, 200*mib))
		require.False(t, grow(m, 201*mib))
		require.False(t, m.grace, "the guest is not short of memory: the zone stays closed")
		require.True(t, grow(m, 4*mib), "still under the cap")
		require.False(t, grow(m, 5*mib))
		require.True(t, m.grace, "not in place any more: one failed request is the allocation's")
	})

	t.Run("a kernel rearms before each cell", func(t *testing.T) {
		m := newInstanceMemory(capBytes)
		require.True(t, m.allow(capBytes))
		require.False(t, grow(m, mib))
		require.False(t, grow(m, mib))
		require.True(t, grow(m, mib), "the zone is open")
		m.rearm()
		require.False(t, m.grace)
		require.Equal(t, uint64(capBytes+mib), m.soft, "the soft cap is the memory it has")
		require.False(t, grow(m, 2*mib), "runs out again: one request")
		require.True(t, m.grace)
		require.True(t, m.allow(m.hard))
		m.rearm()
		require.False(t, grow(m, wasmPage))
		require.False(t, m.allow(m.hard+wasmPage), "the zone is used up")
	})

	t.Run("no cap", func(t *testing.T) {
		m := newInstanceMemory(0)
		require.Equal(t, uint64(maxMemory), m.hard)
		require.True(t, m.allow(maxMemory))
	})
}
