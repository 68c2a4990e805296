package runtime

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

	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
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
			mod    func(*shared.Request)
		}{
			{"print(1)\n", shared.StatusSuccess, nil},
			{fmt.Sprintf(growScript, 100), shared.StatusSuccess, nil},
			{"import sys\nsys.exit(3)\n", shared.StatusError, nil},
			{"raise ValueError('x')\n", shared.StatusError, nil},
			{"x = bytearray(200 * 1024 * 1024)\n", shared.StatusError, func(r *shared.Request) { r.MemoryLimitMB = 64 }},
			{"while True:\n    pass\n", shared.StatusTimeout, func(r *shared.Request) { r.Timeout = 2 * time.Second }},
		} {
			res := run(t, tc.code, tc.mod)
			require.Equal(t, tc.status, res.Status, "%s: %s", tc.code, res.Output)
			require.Equal(t, base, liveReservations.Load(), "after %q", tc.code)
		}
	})

	t.Run("kernel", func(t *testing.T) {
		k := startKernel(t, e, shared.KernelSpec{Env: kernelEnv}, false)
		require.Equal(t, base+1, liveReservations.Load(), "a running kernel holds its reservation")
		okCell(t, k, fmt.Sprintf(growScript, 50))
		require.NoError(t, k.Close())
		require.Equal(t, base, liveReservations.Load(), "after an idle kernel's Close")

		// A cell killed by its context: the instance is stopped mid-loop.
		k = startKernel(t, e, shared.KernelSpec{Env: kernelEnv}, false)
		res, err := cell(t, k, "while True:\n    pass\n", func(r *shared.Request) { r.Timeout = 2 * time.Second })
		require.NoError(t, err)
		require.Equal(t, shared.StatusTimeout, res.Status, res.Output)
		requireGone(t, k)
		require.Equal(t, base, liveReservations.Load(), "after a killed kernel")
	})

	t.Run("pool", func(t *testing.T) {
		p := e.NewKernelPool(1, shared.KernelSpec{Env: kernelEnv})
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
		if res.Status != shared.StatusSuccess {
			b.Fatal(res.Output)
		}
	}
}
