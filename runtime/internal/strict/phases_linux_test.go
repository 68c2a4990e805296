package strict

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/experimental"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// BenchmarkStrictInstancePhases starts one-shot instances from the
// snapshot the way startWith does, step by step, and reports each step's
// median time (ms/step) and the page faults the process took in it
// (faults/step; a first write to a page of the snapshot's image is a
// copy-on-write fault). The program marks its own steps with
// _hermes_host.call(b"name"), which ends the previous step. Sub-benchmarks:
// "empty" (an empty one-shot program), "runner" (a script the runner runs,
// as in a one-shot Run) and "noscratch" (the empty program, instantiated
// without the data scratch). docs/performance.md has the figures.
//
//	go test -run - -bench StrictInstancePhases -benchtime 200x ./runtime/internal/strict/
func BenchmarkStrictInstancePhases(b *testing.B) {
	empty := `import _hermes_host as h, atexit; h.call(b"command"); atexit.register(h.call, b"atexit"); h._run_and_exit(lambda: None)`
	b.Run("empty", func(b *testing.B) { benchPhases(b, empty, false, true) })
	b.Run("runner", func(b *testing.B) { benchPhases(b, "print(1)\n", true, true) })
	b.Run("noscratch", func(b *testing.B) { benchPhases(b, empty, false, false) })
}

func benchPhases(t *testing.B, script string, runner, scratch bool) {
	e := testEngine(t)
	ctx := context.Background()
	c, err := e.get(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	snap := e.snap.Load()
	if snap == nil {
		t.Fatal("no snapshot")
	}
	faults := func() int64 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return ru.Minflt
	}
	var steps []string
	times, flts := map[string][]float64{}, map[string][]float64{}
	t.ResetTimer()
	for i := range t.N {
		var at []time.Time
		var flt []int64
		var names []string
		mark := func(name string) {
			at, flt, names = append(at, time.Now()), append(flt, faults()), append(names, name)
		}
		mark("")
		spec := sandboxSpec{env: engine.BaseInject(), serve: func(_ context.Context, line []byte) []byte {
			mark("-> " + string(line))
			return []byte("ok")
		}}
		args := []string{"-c", script}
		if runner {
			spec.modules = []string{engine.StubName, engine.RunnerName}
			spec.extra = map[string][]byte{engine.ScriptName: []byte(script)}
			args = []string{"-c", runnerCommand, "/" + engine.ScriptName}
		}
		box, err := e.newSandbox(ctx, c, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(box.close) // on a failure; closing twice is harmless
		mark("newSandbox")
		var out guestOutput
		var buf bytes.Buffer
		out.set(&buf, 0)
		mem := newInstanceMemory(c.limit)
		t.Cleanup(mem.done)
		if scratch {
			mem.setScratch(c.scratchFor())
		}
		mc := box.moduleConfig(&out, &out).WithArgs(box.args(args...)...).
			WithStartFunctions().WithNanotime(snap.clock(), nanotimeResolution)
		ictx := experimental.WithMemoryAllocator(box.ctx, mem)
		mark("module config")
		mod, err := c.rt.InstantiateModule(ictx, c.mod, mc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mod.Close(ctx) })
		mark("InstantiateModule")
		if err := snap.restore(mod.Memory(), mem, true); err != nil {
			t.Fatal(err)
		}
		mark("restore")
		_, err = mod.ExportedFunction("hermes_run").Call(ictx)
		mark("-> exit")
		out.flush()
		if o := outcome(exitZeroIsNil(err)); o.ExitCode != 0 {
			t.Fatalf("%v: %s", o, buf.String())
		}
		mod.Close(ctx)
		mark("mod.Close")
		mem.done()
		mark("munmap (mem.done)")
		box.close()
		mark("staging dir removed")
		if i == 0 {
			steps = append(names[1:], "total")
		}
		if !slices.Equal(steps[:len(steps)-1], names[1:]) {
			t.Fatalf("steps %q, then %q", steps, names[1:])
		}
		for j := 1; j < len(at); j++ {
			times[names[j]] = append(times[names[j]], float64(at[j].Sub(at[j-1]))/1e6)
			flts[names[j]] = append(flts[names[j]], float64(flt[j]-flt[j-1]))
		}
		times["total"] = append(times["total"], float64(at[len(at)-1].Sub(at[0]))/1e6)
		flts["total"] = append(flts["total"], float64(flt[len(flt)-1]-flt[0]))
	}
	for _, s := range steps {
		v, f := slices.Sorted(slices.Values(times[s])), slices.Sorted(slices.Values(flts[s]))
		t.ReportMetric(v[len(v)/2], "ms/"+metricName(s))
		t.ReportMetric(f[len(f)/2], "faults/"+metricName(s))
	}
}

// metricName makes a step's name a benchmark unit (no spaces).
func metricName(step string) string {
	return strings.NewReplacer(" ", "_", "->", "to", "(", "", ")", "").Replace(strings.TrimSpace(step))
}
