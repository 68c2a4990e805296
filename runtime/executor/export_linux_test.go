package executor

import (
	"context"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/nativeengine"
)

// FailRemoteKernels makes every project-mode kernel on a remote backend
// fail to start until the returned function is called.
func FailRemoteKernels(err error) (restore func()) {
	old := startNativeKernel
	startNativeKernel = func(ctx context.Context, eng *nativeengine.Engine, spec engine.KernelSpec) (engine.Kernel, error) {
		if eng.Backend != nil && eng.Backend.Remote() {
			return nil, err
		}
		return old(ctx, eng, spec)
	}
	return func() { startNativeKernel = old }
}
