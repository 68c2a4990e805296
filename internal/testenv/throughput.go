package testenv

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cpustat"
)

// Throughput runs b's loop with sessions goroutines at once, each making
// calls calls of call(session) in turn, and reports calls/s and the
// process's CPU per call (cpu-µs/call: the guests', the host's and the
// runtime's, less noisy than calls/s where other work shares the cores).
// One op is sessions*calls calls; the first error fails the benchmark.
func Throughput(b *testing.B, sessions, calls int, call func(session int) error) {
	var total time.Duration
	cpu0, cpuOK := cpustat.Process()
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, sessions)
		for i := range sessions {
			wg.Go(func() {
				for range calls {
					if errs[i] = call(i); errs[i] != nil {
						return
					}
				}
			})
		}
		wg.Wait()
		total += time.Since(start)
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*sessions*calls)/total.Seconds(), "calls/s")
	if cpu1, ok := cpustat.Process(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N*sessions*calls), "cpu-µs/call")
	}
}
