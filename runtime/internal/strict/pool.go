package strict

import (
	"context"
	"errors"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// ErrPoolClosed is returned by KernelPool.Get after Close.
var ErrPoolClosed = engine.ErrPoolClosed

// KernelPool keeps strict kernels started ahead of need (engine.KernelPool).
type KernelPool = engine.KernelPool

// NewKernelPool returns a pool that keeps size strict kernels started with
// spec ready: plain strict kernels, whose root is a private staging dir
// (size <= 0 keeps none: Get then always starts one). Close it to release
// them.
func (s *Engine) NewKernelPool(size int, spec engine.KernelSpec) *KernelPool {
	return engine.NewKernelPool(size, func(ctx context.Context) (engine.Kernel, error) {
		return s.StartKernel(ctx, spec, nil)
	}, func(err error) bool { return errors.Is(err, ErrClosed) })
}
