package executor

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/nativeengine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// Starting kernels: a session kernel from its spec or a warm pool, the
// warm pools themselves, and the executor's kernel statistics.

// projectPoolKey is what a project kernel from the pool was started for.
type projectPoolKey struct{ python, workdir string }

// startKernel starts a kernel for c, before the call's clock starts (a
// first compile or an interpreter start is not the script's time).
func (e *Executor) startKernel(ctx context.Context, c *call) (engine.Kernel, error) {
	spec := e.kernelSpec(c)
	if !c.usesWasm() {
		if k := e.fromProjectPool(ctx, c); k != nil {
			return k, nil
		}
		return startNativeKernel(ctx, e.projectEngine(c), spec)
	}
	if err := e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB); err != nil {
		return nil, err
	}
	if c.mode == config.ModeProject {
		opts := e.projectOptions(ctx, c)
		return e.strict.StartKernel(ctx, spec, &opts)
	}
	e.sessions.mu.Lock()
	pool := e.sessions.pool
	if e.sessions.poolGen != c.envGen {
		// Started before a skill registered a variable this call passes,
		// or the call passes skill variables of its session (envGen -1).
		pool = nil
	}
	if engine.ToolsInject(c.enabled) != "" {
		// The pool's kernels have all seven tools' functions.
		pool = nil
	}
	e.sessions.mu.Unlock()
	if pool != nil {
		k, _, err := pool.Get(ctx)
		if !errors.Is(err, strict.ErrPoolClosed) {
			return k, err
		}
		// Replaced (RegisterSkillEnv) or closed (Close) meanwhile: start
		// one; after Close, that fails with the strict engine's error.
	}
	return e.strict.StartKernel(ctx, spec, nil)
}

// fromProjectPool returns a ready project kernel for c from the warm pool,
// when the pool's kernels are what c would start (same interpreter and
// working dir, this host, the same environment, all seven tools); nil
// otherwise.
func (e *Executor) fromProjectPool(ctx context.Context, c *call) engine.Kernel {
	ks := e.sessions
	ks.mu.Lock()
	pool := ks.projectPool
	if pool == nil || c.backend != nil || ks.projectPoolFor != (projectPoolKey{c.python.Path, c.workdir}) ||
		ks.poolGen != c.envGen || engine.ToolsInject(c.enabled) != "" {
		pool = nil
	}
	ks.mu.Unlock()
	if pool == nil {
		return nil
	}
	k, _, err := pool.Get(ctx)
	if err != nil {
		// Closed or replaced meanwhile, or the start failed: the caller
		// starts one itself.
		return nil
	}
	return k
}

// projectPoolTarget is what a project-mode warm pool is for: the host
// python for workdir (empty: this process's; a session on another dir, or
// with a remote backend, starts its own kernel). Empty unless project is
// the configured mode, without the sandbox, the backend is local and there
// is a host python.
func (e *Executor) projectPoolTarget(ctx context.Context, workdir string) projectPoolKey {
	if e.cfg.CodeExecution.Mode != config.ModeProject {
		return projectPoolKey{} // calls are strict unless they say otherwise
	}
	if sandbox, _ := config.NormalizeSandbox(e.cfg.CodeExecution.Sandbox); sandbox == config.SandboxWasm {
		// Project-mode calls run in the embedded interpreter unless they
		// say otherwise: no native kernel to keep ready, and the working
		// dir's python, which a sandboxed script may have made a program
		// of its own, is not run (the pool started it at every start of
		// serve or mcp).
		return projectPoolKey{}
	}
	if b := e.cfg.Terminal.Backend; b != "" && b != config.BackendLocal {
		return projectPoolKey{}
	}
	wd, err := ResolveWorkdir(workdir)
	if err != nil {
		return projectPoolKey{}
	}
	py := native.ResolveIn(ctx, e.getenv, wd, filepath.Join(e.cacheDir, native.ProbeCacheName))
	if py.Path == "" {
		return projectPoolKey{}
	}
	return projectPoolKey{py.Path, wd}
}

// newProjectPool starts n project kernels for target, with the current
// environment; nil for an empty target. e.mu is held.
func (e *Executor) newProjectPool(n int, target projectPoolKey) *engine.KernelPool {
	if target.python == "" {
		return nil
	}
	spec := e.spec(e.envOptionsLocked(), e.inject(false), nil, target.workdir)
	eng := &nativeengine.Engine{Python: target.python, Transport: e.transport, Landlock: e.landlock}
	return engine.NewKernelPool(n, func(ctx context.Context) (engine.Kernel, error) {
		return startNativeKernel(ctx, eng, spec)
	}, func(error) bool { return false })
}

// kernelSpec is the frozen environment of a kernel started for c: the
// scrubbed env plus the injected variables, as of now (docs/behaviour.md §4: a kernel's
// environment is frozen when it starts).
func (e *Executor) kernelSpec(c *call) engine.KernelSpec {
	return e.spec(c.envOpts, c.inject, c.enabled, c.workdir)
}

func (e *Executor) spec(opts engine.EnvOptions, inject, enabled []string, workdir string) engine.KernelSpec {
	env := engine.ChildEnv(e.environ, opts, inject, enabled)
	return engine.KernelSpec{Env: env, Workdir: workdir, MemoryLimitMB: e.cfg.CodeExecution.MemoryLimitMB,
		DiskLimitMB: e.cfg.CodeExecution.DiskLimitMB, ProcessLimits: e.processLimits()}
}

// processLimits are the limits of a project-mode run's processes.
func (e *Executor) processLimits() engine.ProcessLimits {
	return engine.ProcessLimits{MemoryMB: e.cfg.CodeExecution.ProjectMemoryLimitMB, Processes: e.cfg.CodeExecution.ProcessLimit}
}

// Stats are an executor's session kernels at one moment (for a service's
// metrics).
type Stats struct {
	// Kernels is the number of live session kernels; Running those of them
	// running a call now.
	Kernels, Running int
	// PoolIdle is the number of ready kernels in the warm pools, and
	// PoolTarget the number they keep ready (0 until StartWarmPool has
	// made them).
	PoolIdle, PoolTarget int
	// Evictions counts the kernels closed since the executor started to
	// make room (max_session_kernels) or for being idle
	// (kernel_idle_timeout).
	Evictions uint64
	// Waiting is the number of calls waiting for a kernel: every one of
	// the max_session_kernels top-level kernels runs a call.
	Waiting int
	// Suspended and Resumed count the kernels suspended into the session
	// store and resumed from it; ResumeFailures the images that did not
	// resume (code_execution.session_store).
	Suspended, Resumed, ResumeFailures uint64
	// Checkpoints counts the images written after a call
	// (code_execution.session_checkpoint: every_call); StoreFailures the
	// session store's failures that a call went on without (a lease, a
	// checkpoint, a suspension not written).
	Checkpoints, StoreFailures uint64
	// StoredBytes counts the bytes of the images written to the store
	// (suspensions and checkpoints).
	StoredBytes uint64
}

// Stats returns the executor's kernel counts.
func (e *Executor) Stats() Stats {
	ks := e.sessions
	ks.mu.Lock()
	defer ks.mu.Unlock()
	st := Stats{Evictions: ks.evictions.Load(), Waiting: len(ks.slotWait),
		Suspended: ks.suspended.Load(), Resumed: ks.resumed.Load(), ResumeFailures: ks.resumeFailures.Load(),
		Checkpoints: ks.checkpoints.Load(), StoreFailures: ks.storeFailures.Load(), StoredBytes: ks.storedBytes.Load()}
	for _, s := range ks.byName {
		for _, en := range s.kernels {
			st.Kernels++
			if en.running {
				st.Running++
			}
		}
	}
	if ks.pool != nil {
		st.PoolIdle += ks.pool.Idle()
		st.PoolTarget += ks.poolSize
	}
	if ks.projectPool != nil {
		st.PoolIdle += ks.projectPool.Idle()
		st.PoolTarget += ks.poolSize
	}
	return st
}

// StartWarmPool keeps code_execution.warm_pool initialized strict
// interpreters ready and, when project is the configured mode without the
// sandbox (code_execution.sandbox: none), as many project kernels of the
// host python for the executor's own working dir,
// so that a new session's first call does not pay interpreter start-up (a
// project session on another dir, or with a remote backend, starts its
// own). It returns at once; the pools fill in
// the background and refill as sessions take from them, until Close. A
// size of 0 does nothing. Registering a skill variable
// ([Executor.RegisterSkillEnv]) replaces the pools' interpreters, whose
// environment is frozen.
func (e *Executor) StartWarmPool(ctx context.Context) { e.StartWarmPoolIn(ctx, "") }

// StartWarmPoolIn is StartWarmPool with the project kernels started in
// workdir (empty: this process's working dir): the dir the front end's
// calls use, such as mcp's --workdir.
func (e *Executor) StartWarmPoolIn(ctx context.Context, workdir string) {
	n := e.cfg.CodeExecution.WarmPool
	if n <= 0 {
		return
	}
	go func() {
		// The host python (a probe, before the locks), and compile (or
		// load) first, so the pools' kernels start fast.
		target := e.projectPoolTarget(context.WithoutCancel(ctx), workdir)
		if err := e.strict.Warm(context.WithoutCancel(ctx), e.cfg.CodeExecution.MemoryLimitMB); err != nil {
			// An executor closed while its pool started (a short serve or
			// mcp session) is a normal stop, not a failure.
			if !errors.Is(err, strict.ErrClosed) {
				e.log.Log(context.Background(), slog.LevelError, "warm pool failed", "error", err.Error())
			}
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		ks := e.sessions
		ks.mu.Lock()
		defer ks.mu.Unlock()
		if ks.closed || ks.pool != nil {
			return
		}
		ks.poolSize = n
		ks.pool = e.strict.NewKernelPool(n, e.spec(e.envOptionsLocked(), e.inject(true), nil, ""))
		ks.projectPool, ks.projectPoolFor = e.newProjectPool(n, target), target
		ks.poolGen = e.skillGen
	}()
}

// refreshPool replaces the warm pool, if any, with one whose kernels have
// the environment of the current skill-env generation. e.mu is held.
func (e *Executor) refreshPool() {
	ks := e.sessions
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.closed || ks.pool == nil {
		return
	}
	old, oldProject := ks.pool, ks.projectPool
	ks.pool = e.strict.NewKernelPool(ks.poolSize, e.spec(e.envOptionsLocked(), e.inject(true), nil, ""))
	ks.projectPool = e.newProjectPool(ks.poolSize, ks.projectPoolFor)
	ks.poolGen = e.skillGen
	ks.background.Go(old.Close)
	if oldProject != nil {
		ks.background.Go(oldProject.Close)
	}
}
