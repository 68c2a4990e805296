package strict

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// hostMemoryEnv makes the test binary run one strict guest that grows to
// 400 MiB under a 512 MiB cap, and exit (see TestStrictHostMemoryBounded).
const hostMemoryEnv = "HERMES_TEST_HOST_MEMORY_CHILD"

// TestStrictHostMemoryBounded checks that a guest growing its memory costs
// the host about what the guest holds, not a multiple of it: a guest at
// 400 MiB under a 512 MiB cap must keep the whole process's peak resident
// memory under cap + 200 MiB. The guest runs in a child process (this test
// binary again), so its peak is its own and not the test runner's. Before
// the reserved-mapping allocator, wazero copied the linear memory into a
// larger Go slice on every memory.grow and the peak was about 1.7 GB.
func TestStrictHostMemoryBounded(t *testing.T) {
	testenv.SkipUnderRace(t, "the host's resident memory")
	if os.Getenv(hostMemoryEnv) != "" {
		res := run(t, fmt.Sprintf(growScript, 400), func(r *engine.Request) { r.MemoryLimitMB = 512 })
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		require.Equal(t, "400\n", res.Output)
		return
	}
	testEngine(t) // compile once here, so the child loads machine code
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStrictHostMemoryBounded$", "-test.count=1")
	cmd.Env = append(os.Environ(), hostMemoryEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	peak := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10 // KiB on Linux
	t.Logf("peak host RSS for a 400 MiB guest (512 MiB cap): %d MiB", peak>>20)
	require.Less(t, peak, int64(512+200)<<20, "host peak RSS exceeds the memory cap + 200 MiB")
}
