package assetbuild

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Sections of spinModule:
//
//	(module
//	  (import "wasi_snapshot_preview1" "sched_yield" (func (result i32)))
//	  (global i32 (i32.const 0))
//	  (func (export "spin") (loop br 0)))
var (
	spinHeader  = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	spinTypes   = []byte{0x01, 0x08, 0x02, 0x60, 0x00, 0x01, 0x7f, 0x60, 0x00, 0x00}
	spinImports = append(append(append([]byte{0x02, 0x26, 0x01, 0x16}, "wasi_snapshot_preview1"...), 0x0b), append([]byte("sched_yield"), 0x00, 0x00)...)
	spinFuncs   = []byte{0x03, 0x02, 0x01, 0x01}
	spinGlobals = []byte{0x06, 0x06, 0x01, 0x7f, 0x00, 0x41, 0x00, 0x0b}
	spinExports = []byte{0x07, 0x08, 0x01, 0x04, 's', 'p', 'i', 'n', 0x00, 0x01}
	spinCode    = []byte{0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b}
	spinModule  = bytes.Join([][]byte{spinHeader, spinTypes, spinImports, spinFuncs, spinGlobals, spinExports, spinCode}, nil)
)

func TestAddLoopChecksYieldsEveryBudget(t *testing.T) {
	ctx := context.Background()
	b, err := addLoopChecks(spinModule)
	require.NoError(t, err)

	rt := wazero.NewRuntime(ctx) // no WithCloseOnContextDone: only the checks reach Go
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	var yields atomic.Int32
	mod, err := rt.InstantiateWithConfig(ctx, b, wazero.NewModuleConfig().WithOsyield(func() {
		if yields.Add(1) == 3 {
			panic(sys.NewExitError(42)) // how the engine stops a run
		}
	}))
	require.NoError(t, err)
	budget, ok := mod.ExportedGlobal(budgetGlobal).(api.MutableGlobal)
	require.True(t, ok, "the budget global is exported and mutable")
	require.Equal(t, uint64(loopBudget), budget.Get())

	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		var exit *sys.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, uint32(42), exit.ExitCode())
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never called sched_yield")
	}
	require.Equal(t, int32(3), yields.Load())
	// The third call stopped it right after resetting the budget.
	require.Equal(t, uint64(loopBudget), budget.Get())
}

func TestAddLoopChecksRejects(t *testing.T) {
	_, err := addLoopChecks([]byte("not wasm"))
	require.ErrorIs(t, err, pyodideassets.ErrCorrupt)

	bad := append([]byte(nil), spinModule...)
	bad[len(bad)-4] = 0xfe // an opcode the rewriter does not know (the threads prefix)
	_, err = addLoopChecks(bad)
	require.ErrorIs(t, err, pyodideassets.ErrCorrupt)
	require.ErrorContains(t, err, "unsupported opcode 0xfe")

	twice, err := addLoopChecks(spinModule)
	require.NoError(t, err)
	_, err = addLoopChecks(twice)
	require.ErrorContains(t, err, "already has loop checks")

	noGlobals := bytes.Join([][]byte{spinHeader, spinTypes, spinImports, spinFuncs, spinExports, spinCode}, nil)
	_, err = addLoopChecks(noGlobals)
	require.ErrorContains(t, err, "no global or export section")

	otherImport := bytes.ReplaceAll(spinModule, []byte("sched_yield"), []byte("sched_yielt"))
	_, err = addLoopChecks(otherImport)
	require.ErrorContains(t, err, "does not import wasi_snapshot_preview1.sched_yield")

	// return_call: tail calls are not expected (and a loop with one would
	// need the check of a loop with calls).
	_, err = addLoopChecks(testModule(testFunc{body: []byte{0x00, 0x03, 0x40, 0x12, 0x00, 0x0b, 0x0b}}))
	require.ErrorIs(t, err, pyodideassets.ErrCorrupt)
	require.ErrorContains(t, err, "unsupported opcode 0x12")
}

func TestAddLoopChecksReal(t *testing.T) {
	b, _ := realDist(t)
	// The pinned module has its checks, and says so; it compiles.
	_, err := addLoopChecks(b)
	require.ErrorContains(t, err, "already has loop checks")
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	_, err = rt.CompileModule(ctx, b)
	require.NoError(t, err)
}

func FuzzAddLoopChecks(f *testing.F) {
	f.Add(spinModule)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = addLoopChecks(b) // must not panic
	})
}

// wasmVec encodes a vector: its length, then its items.
func wasmVec(items ...[]byte) []byte {
	return append(uleb(uint32(len(items))), bytes.Join(items, nil)...)
}

// wasmSection encodes a section.
func wasmSection(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(body)))...), body...)
}

// testFunc is a function of testModule: its parameter and result types,
// and its body (locals and code).
type testFunc struct {
	params, results []byte
	body            []byte
}

// testModule assembles a module that imports sched_yield (function 0),
// has a table, defines a mutable i32 global exported as "passes" (global 0, for the
// functions to count with) and the functions fns (function i+1, exported
// as "f<i>").
func testModule(fns ...testFunc) []byte {
	types := [][]byte{{0x60, 0x00, 0x01, 0x7f}} // sched_yield: () -> i32
	var funcs, exports, code [][]byte
	exports = append(exports, []byte{0x06, 'p', 'a', 's', 's', 'e', 's', 0x03, 0x00})
	for i, f := range fns {
		types = append(types, cat([]byte{0x60}, wasmVec(splitBytes(f.params)...), wasmVec(splitBytes(f.results)...)))
		funcs = append(funcs, uleb(uint32(i+1)))
		name := []byte{'f', byte('0' + i)}
		exports = append(exports, append(append(append(uleb(uint32(len(name))), name...), 0x00), uleb(uint32(i+1))...))
		code = append(code, append(uleb(uint32(len(f.body))), f.body...))
	}
	imp := append(append(uleb(22), "wasi_snapshot_preview1"...), 0x0b)
	imp = append(append(imp, "sched_yield"...), 0x00, 0x00)
	return bytes.Join([][]byte{
		spinHeader,
		wasmSection(1, wasmVec(types...)),
		wasmSection(2, wasmVec(imp)),
		wasmSection(3, wasmVec(funcs...)),
		wasmSection(4, wasmVec([]byte{0x70, 0x00, 0x00})), // a funcref table, for call_indirect
		wasmSection(6, wasmVec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b})),
		wasmSection(7, wasmVec(exports...)),
		wasmSection(10, wasmVec(code...)),
	}, nil)
}

func splitBytes(b []byte) [][]byte {
	var out [][]byte
	for _, c := range b {
		out = append(out, []byte{c})
	}
	return out
}

// codeBodies returns the function bodies of a module's code section.
func codeBodies(t *testing.T, mod []byte) [][]byte {
	t.Helper()
	r := &reader{b: mod, off: 8}
	for r.off < len(mod) && r.err == nil {
		id := r.byte()
		size := int(r.u32())
		if id != 10 {
			r.skip(size)
			continue
		}
		var out [][]byte
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			size := int(r.u32())
			out = append(out, mod[r.off:r.off+size])
			r.skip(size)
		}
		require.NoError(t, r.err)
		return out
	}
	t.Fatal("no code section")
	return nil
}

// The checks in testModule, where the budget is global 1 and sched_yield
// function 0, spelled out.
// wantCheck is the check in testModule, where the budget is global 1 and
// sched_yield function 0, spelled out: global.get 1; i32.eqz; if;
// i32.const 16384; global.set 1; call 0; drop; end; global.get 1;
// i32.const 1; i32.sub; global.set 1.
var wantCheck = []byte{0x23, 0x01, 0x45, 0x04, 0x40, 0x41, 0x80, 0x80, 0x01, 0x24, 0x01, 0x10, 0x00, 0x1a, 0x0b,
	0x23, 0x01, 0x41, 0x01, 0x6b, 0x24, 0x01}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestAddLoopChecksRewrites(t *testing.T) {
	loop := []byte{0x03, 0x40}
	end := []byte{0x0b}
	call1 := []byte{0x10, 0x01} // call f0, a () -> () function
	for _, tc := range []struct {
		name         string
		params, body []byte
		want         []byte
	}{{
		name: "call-free loop",
		body: cat([]byte{0x00}, loop, []byte{0x0c, 0x00}, end, end),
		want: cat([]byte{0x00}, loop, wantCheck, []byte{0x0c, 0x00}, end, end),
	}, {
		name: "loop with a call",
		body: cat([]byte{0x00}, loop, call1, []byte{0x0c, 0x00}, end, end),
		want: cat([]byte{0x00}, loop, wantCheck, call1, []byte{0x0c, 0x00}, end, end),
	}, {
		name: "call_indirect in a block and an if in a loop",
		body: cat([]byte{0x00}, loop, []byte{0x02, 0x40, 0x41, 0x00, 0x04, 0x40, 0x41, 0x00, 0x11, 0x00, 0x00, 0x1a, 0x0b, 0x0b}, end, end),
		want: cat([]byte{0x00}, loop, wantCheck, []byte{0x02, 0x40, 0x41, 0x00, 0x04, 0x40, 0x41, 0x00, 0x11, 0x00, 0x00, 0x1a, 0x0b, 0x0b}, end, end),
	}, {
		name: "nested loops, each checked",
		body: cat([]byte{0x00}, loop, loop, end, call1, end, loop, end, end),
		want: cat([]byte{0x00}, loop, wantCheck, loop, wantCheck, end, call1, end, loop, wantCheck, end, end),
	}, {
		name:   "parameters and locals kept as they are",
		params: []byte{0x7f, 0x7e},                                              // (i32, i64)
		body:   cat([]byte{0x02, 0x03, 0x7f, 0x81, 0x01, 0x7e}, loop, end, end), // 3 x i32, 129 x i64
		want:   cat([]byte{0x02, 0x03, 0x7f, 0x81, 0x01, 0x7e}, loop, wantCheck, end, end),
	}, {
		name: "no loop, no change",
		body: cat([]byte{0x01, 0x01, 0x7f}, call1, []byte{0x02, 0x40, 0x0b}, end),
		want: cat([]byte{0x01, 0x01, 0x7f}, call1, []byte{0x02, 0x40, 0x0b}, end),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			mod := testModule(testFunc{body: []byte{0x00, 0x0b}}, testFunc{params: tc.params, body: tc.body})
			out, err := addLoopChecks(mod)
			require.NoError(t, err)
			bodies := codeBodies(t, out)
			require.Len(t, bodies, 2)
			require.Equal(t, []byte{0x00, 0x0b}, bodies[0])
			require.Equal(t, tc.want, bodies[1])
			rt := wazero.NewRuntime(context.Background())
			defer rt.Close(context.Background())
			_, err = rt.CompileModule(context.Background(), out)
			require.NoError(t, err, "the rewritten module is valid")
		})
	}
}

// instantiate compiles and instantiates a rewritten module with osyield as
// its sched_yield, in a runtime that only the checks can interrupt.
func instantiate(t *testing.T, mod []byte, osyield func()) api.Module {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx) // no WithCloseOnContextDone: only the checks reach Go
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	m, err := rt.InstantiateWithConfig(ctx, mod, wazero.NewModuleConfig().WithOsyield(osyield))
	require.NoError(t, err)
	return m
}

// A loop calls sched_yield every loopBudget iterations, with or without
// calls in it.
func TestAddLoopChecksYieldInterval(t *testing.T) {
	count := []byte{0x23, 0x00, 0x41, 0x01, 0x6a, 0x24, 0x00} // passes++
	for name, body := range map[string][]byte{
		"call-free":   cat([]byte{0x00, 0x03, 0x40}, count, []byte{0x0c, 0x00, 0x0b, 0x0b}),
		"with a call": cat([]byte{0x00, 0x03, 0x40}, count, []byte{0x10, 0x01, 0x0c, 0x00, 0x0b, 0x0b}),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := addLoopChecks(testModule(testFunc{body: []byte{0x00, 0x0b}}, testFunc{body: body}))
			require.NoError(t, err)
			var mod api.Module
			var at []uint64
			mod = instantiate(t, b, func() {
				at = append(at, mod.ExportedGlobal("passes").Get())
				if len(at) == 3 {
					panic(sys.NewExitError(42))
				}
			})
			_, err = mod.ExportedFunction("f1").Call(context.Background())
			var exit *sys.ExitError
			require.ErrorAs(t, err, &exit)
			// The check runs before the body counts; it finds the budget
			// spent at the (loopBudget+1)-th iteration.
			require.Equal(t, []uint64{loopBudget, 2 * loopBudget, 3 * loopBudget}, at)
		})
	}
}

// Every loop iteration is charged to the budget, with loops left by br_if
// and br_table, and loops with calls around other loops (in a callee, and
// in the same function).
func TestAddLoopChecksCharges(t *testing.T) {
	brIf := testFunc{ // (n) -> i: for i := 0; i < n; i++ {}; n+1 iterations
		params: []byte{0x7f}, results: []byte{0x7f},
		body: []byte{0x01, 0x01, 0x7f, 0x02, 0x40, 0x03, 0x40,
			0x20, 0x01, 0x20, 0x00, 0x4f, 0x0d, 0x01, // i >= n: br_if 1
			0x20, 0x01, 0x41, 0x01, 0x6a, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b, 0x20, 0x01, 0x0b},
	}
	brTable := testFunc{ // (n) -> 0: do n-- while n != 0, by br_table; n iterations
		params: []byte{0x7f}, results: []byte{0x7f},
		body: []byte{0x00, 0x02, 0x40, 0x03, 0x40,
			0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x45, 0x0e, 0x02, 0x00, 0x01, 0x01, // br_table 0 1 (default 1)
			0x0b, 0x0b, 0x20, 0x00, 0x0b},
	}
	outer := testFunc{ // (m): for i := 0; i < m; i++ { f0(300) }; m+1 iterations
		params: []byte{0x7f},
		body: []byte{0x01, 0x01, 0x7f, 0x02, 0x40, 0x03, 0x40,
			0x20, 0x01, 0x20, 0x00, 0x4f, 0x0d, 0x01,
			0x41, 0xac, 0x02, 0x10, 0x01, 0x1a, // f0(300)
			0x20, 0x01, 0x41, 0x01, 0x6a, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b, 0x0b},
	}
	nested := testFunc{ // (m): for i := 0; i < m; i++ { f0(0); for j := 0; j < 300; j++ {} }
		params: []byte{0x7f},
		body: []byte{0x01, 0x02, 0x7f, 0x02, 0x40, 0x03, 0x40,
			0x20, 0x01, 0x20, 0x00, 0x4f, 0x0d, 0x01,
			0x41, 0x00, 0x10, 0x01, 0x1a, // f0(0)
			0x41, 0x00, 0x21, 0x02, 0x02, 0x40, 0x03, 0x40, // j := 0; 301 iterations
			0x20, 0x02, 0x41, 0xac, 0x02, 0x4f, 0x0d, 0x01,
			0x20, 0x02, 0x41, 0x01, 0x6a, 0x21, 0x02, 0x0c, 0x00, 0x0b, 0x0b,
			0x20, 0x01, 0x41, 0x01, 0x6a, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b, 0x0b},
	}
	b, err := addLoopChecks(testModule(brIf, brTable, outer, nested))
	require.NoError(t, err)
	mod := instantiate(t, b, func() { t.Error("no call to the host expected") })
	budget := mod.ExportedGlobal(budgetGlobal)
	call := func(name string, arg, want uint64) {
		t.Helper()
		res, err := mod.ExportedFunction(name).Call(context.Background(), arg)
		require.NoError(t, err)
		if len(res) > 0 {
			require.Equal(t, want, res[0])
		}
	}
	call("f0", 1000, 1000) // 1001 iterations
	require.Equal(t, uint64(loopBudget-1001), budget.Get())
	call("f0", 1000, 1000)
	require.Equal(t, uint64(loopBudget-2002), budget.Get())
	call("f1", 512, 0) // 512 iterations, left by br_table
	require.Equal(t, uint64(loopBudget-2514), budget.Get())
	call("f2", 10, 0) // 11 iterations, and 10 calls of f0(300) with 301 each
	require.Equal(t, uint64(loopBudget-2514-11-3010), budget.Get())
	call("f3", 10, 0) // 11 iterations, 10 calls of f0(0) with 1 each, 10 entries into a loop of 301
	require.Equal(t, uint64(loopBudget-5535-11-10-3010), budget.Get())
}
