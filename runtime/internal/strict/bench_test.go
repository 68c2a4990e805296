package strict

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cpustat"
)

// BenchmarkStrictStartWarmCache is a one-shot run's start: a new engine
// loading the compiled interpreter from a warm cache (in `run`, with the
// process start and the first instance around it; docs/performance.md).
func BenchmarkStrictStartWarmCache(b *testing.B) {
	dir := testEngine(b).opts.CacheDir
	for b.Loop() {
		e := New(Options{CacheDir: dir})
		if err := e.Warm(context.Background(), 0); err != nil {
			b.Fatal(err)
		}
		e.Close(context.Background())
	}
}

// benchWorkload runs timed in strict mode after setup and reports the
// in-guest time of timed (guest-ms/op), excluding interpreter start-up,
// and the process's CPU per run (cpu-ms/op: the whole run, start-up and
// setup included, but less noisy than the guest's wall-clock time where
// other work shares the cores).
func benchWorkload(b *testing.B, setup, timed string) {
	testEngine(b)
	code := setup + "\nimport time\nt = time.perf_counter()\n" + timed + "\nprint((time.perf_counter() - t) * 1e3)\n"
	var total float64
	n := 0
	cpu0, cpuOK := cpustat.Process()
	for b.Loop() {
		res := run(b, code, nil)
		if res.Status != config.StatusSuccess {
			b.Fatal(res.Output)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(res.Output), 64)
		if err != nil {
			b.Fatal(err)
		}
		total += v
		n++
	}
	b.ReportMetric(total/float64(n), "guest-ms/op")
	if cpu1, ok := cpustat.Process(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1e3/float64(n), "cpu-ms/op")
	}
}

// The workloads of `hermes-wasm-exec bench`, where native python and V8
// on the same module are their anchors.
func BenchmarkStrictLoop(b *testing.B) {
	benchWorkload(b, "s = 0", "for i in range(1000000): s += i*2 % 7")
}

func BenchmarkStrictJSON(b *testing.B) {
	benchWorkload(b, `import json; data = [{"id": i, "name": "item%d" % i, "tags": ["a", "b"], "score": i * 0.5} for i in range(20000)]`,
		"json.loads(json.dumps(data))")
}
