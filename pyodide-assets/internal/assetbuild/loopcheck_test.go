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
