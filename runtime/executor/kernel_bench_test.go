package executor_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// BenchmarkStrictSessionThroughput is `hermes-wasm-exec bench`'s strict
// kernel throughput row through the whole executor: 8 sessions, each
// making 200 calls of `n += 1` from its own goroutine, all at once. One op
// is the 1600 calls; calls/s is the rate (issue 17's goal: 20k calls/s,
// docs/performance.md). The executor runs with the default config (each
// call enforces the default timeout), with room for the 8 kernels.
func BenchmarkStrictSessionThroughput(b *testing.B) {
	const sessions, calls = 8, 200
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	cfg.CodeExecution.MaxSessionKernels = sessions // as bench's 128: none evicted
	dir := b.TempDir()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: dir, Progress: io.Discard})
	defer ex.Close(context.Background())
	exec1 := func(session, code string) error {
		res, err := ex.Execute(context.Background(), executor.Request{Code: code, Mode: config.ModeStrict, Workdir: dir, Session: session})
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
