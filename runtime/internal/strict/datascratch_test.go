package strict

import (
	"context"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// TestWasmDataEnd: the extent of a module's active data segments, read
// from its binary; 0 where a segment's offset is not a constant, or where
// the module has a start function.
func TestWasmDataEnd(t *testing.T) {
	head := []byte("\x00asm\x01\x00\x00\x00")
	section := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	// Two active segments (offsets 1024 and 70000, 3 and 2 bytes) and a
	// passive one, after a custom section.
	data := section(11, 3,
		0, 0x41, 0x80, 0x08, 0x0b, 3, 'a', 'b', 'c',
		0, 0x41, 0xf0, 0xa2, 0x04, 0x0b, 2, 'd', 'e',
		1, 1, 'f')
	mod := append(append(append([]byte{}, head...), section(0, 1, 'x')...), data...)
	require.Equal(t, uint64(2*wasmPage), wasmDataEnd(mod))
	require.Equal(t, uint64(0), wasmDataEnd(head), "no data section")
	global := append(append([]byte{}, head...), section(11, 1, 0, 0x23, 0, 0x0b, 1, 'a')...)
	require.Equal(t, uint64(0), wasmDataEnd(global), "offset from a global")
	require.Equal(t, uint64(0), wasmDataEnd(mod[:len(mod)-2]), "cut short")
	require.Equal(t, uint64(0), wasmDataEnd([]byte("not wasm")))
	started := append(append(append([]byte{}, head...), section(8, 0)...), data...)
	require.Equal(t, uint64(0), wasmDataEnd(started), "a start function would run on the scratch")

	c, err := testEngine(t).get(context.Background(), 0)
	require.NoError(t, err)
	require.Greater(t, c.dataEnd, uint64(wasmPage), "the interpreter's data segments")
}

// TestDataScratch: on Linux an instance restored from the snapshot is
// instantiated over the module's data scratch, and no instance runs on
// the scratch: where the snapshot cannot be mapped over it, restore fails.
func TestDataScratch(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the scratch is a memfd (Linux)")
	}
	e := testEngine(t)
	env := engine.ChildEnv([]string{"PATH=/usr/bin"}, engine.EnvOptions{}, nil, nil)
	before := scratchInstances.Load()
	res := runOn(t, e, "print(sum(range(10)))", env, t.TempDir())
	require.Equal(t, "45\n", res.Output)
	require.Greater(t, scratchInstances.Load(), before)

	ctx := context.Background()
	c, err := e.get(ctx, 0)
	require.NoError(t, err)
	box, err := e.newSandbox(ctx, c, sandboxSpec{env: engine.BaseInject()})
	require.NoError(t, err)
	defer box.close()
	mem := newInstanceMemory(c.limit)
	defer mem.done()
	mem.setScratch(c.scratchFor())
	mod, err := c.rt.InstantiateModule(experimental.WithMemoryAllocator(box.ctx, mem), c.mod,
		box.moduleConfig(nil, nil).WithStartFunctions())
	require.NoError(t, err)
	defer mod.Close(ctx)
	require.True(t, mem.scratched())
	require.ErrorContains(t, e.snap.Load().restore(mod.Memory(), mem, false), "cannot be mapped")
}
