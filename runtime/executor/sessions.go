package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/nativeengine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// Session kernels (docs/behaviour.md §7). A kernel is a live interpreter whose globals
// and imports persist between calls; it is reused when session, mode,
// interpreter, working dir and tool set all match. Calls of one session run
// one at a time, in arrival order; calls of different sessions run
// concurrently.

// kernelKey is what a kernel is reused for.
type kernelKey struct {
	session, mode, interpreter, workdir, tools string
	// backend is the remote backend and its target ("" for this host).
	backend string
}

// backendID names a remote backend and its target, for kernel reuse.
func backendID(be backend.Backend) string {
	if be == nil {
		return ""
	}
	return be.Name() + " " + be.Target()
}

// reviveBackend brings be's target back if it was gone (a docker container
// removed or stopped under the session) and reports whether it did.
func reviveBackend(ctx context.Context, be backend.Backend) bool {
	rv, ok := be.(interface {
		Revive(context.Context) (bool, error)
	})
	if !ok {
		return false
	}
	revived, err := rv.Revive(ctx)
	return err == nil && revived
}

// startNativeKernel starts a project-mode kernel (a variable: tests make a
// remote one fail to start).
var startNativeKernel = func(ctx context.Context, eng *nativeengine.Engine, spec engine.KernelSpec) (engine.Kernel, error) {
	return eng.StartKernel(ctx, spec)
}

// standaloneRemote runs a session call whose remote kernel could not
// start as a one-shot script in the backend, and says so (docs/behaviour.md
// §12): its state does not persist.
func (e *Executor) standaloneRemote(ctx context.Context, c *call, req Request, startErr error) (Result, error) {
	e.log.event(slog.LevelWarn, "remote kernel unavailable",
		"session", req.Session, "backend", c.backend.Name(), "error", startErr.Error())
	return e.standalone(ctx, c, req, fmt.Sprintf(noteStandalone, c.backend.Name()), nil)
}

// standalone runs a session call that gets no kernel as a one-shot script
// in a fresh interpreter, with note (one of the noteStandalone kind) in
// its kernel object and warning: its state does not persist. info, when
// not nil, is the kernel object to fill.
func (e *Executor) standalone(ctx context.Context, c *call, req Request, note string, info *KernelInfo) (Result, error) {
	res, err := e.oneShot(ctx, c, req.Code)
	if info == nil {
		info = &KernelInfo{}
	}
	info.Ended, info.Note = true, note
	res.Kernel = info
	c.note = strings.TrimSpace(c.note + " " + note + ".")
	return e.finish(c, res, err)
}

// kernelEntry is one live kernel.
type kernelEntry struct {
	key      kernelKey
	parent   string // the parent session of a subagent's kernel; "" for top level
	k        engine.Kernel
	count    int
	lastUsed time.Time
	// running is true while a call holds the kernel (pin to unpin): no
	// eviction or idle reaper closes it then.
	running bool
}

// kernels is an executor's set of session kernels.
type kernels struct {
	mu       sync.Mutex
	entries  map[kernelKey]*kernelEntry
	queues   map[string]*fifo                   // per session: calls in arrival order
	running  map[string]context.CancelCauseFunc // per session: the running call's interrupt
	closed   bool
	reaping  bool
	stopReap chan struct{}
	// background is the reaper and the closing of replaced pools: Close
	// waits for them, so nothing touches an interpreter after it.
	background sync.WaitGroup
	pool       *strict.KernelPool
	poolGen    int // the skill-env generation of the pools' kernels
	poolSize   int // code_execution.warm_pool once StartWarmPool ran; 0 before
	// projectPool keeps project kernels ready for the executor's default
	// working dir and interpreter (projectPoolFor), like pool; nil when
	// there is no pool, no host python or a remote backend.
	projectPool    *engine.KernelPool
	projectPoolFor projectPoolKey
	// evictions counts the kernels closed to make room (LRU) or for being
	// idle (the reaper): Stats.
	evictions atomic.Uint64

	// The slots of code_execution.max_session_kernels: every top-level
	// kernel in entries holds one, and so does every call starting one
	// (starting); subagents' kernels hold none. Their sum never exceeds
	// max. A call that finds them all held evicts the least recently used
	// idle kernel, or, when every kernel runs a call, waits in slotWait
	// (first come, first served) until one goes idle or is closed.
	max      int
	starting int
	slotWait []*slotWaiter
	// gone says why the executor closed a kernel (evicted, or idle too
	// long), for the note of the next kernel started for its key; at
	// most maxGoneNotes, the oldest dropped first.
	gone map[kernelKey]goneNote
}

// slotWaiter is a call waiting for a kernel slot.
type slotWaiter struct {
	granted chan struct{} // closed when the slot is the call's
	victim  *kernelEntry  // the idle kernel evicted for it, which the call closes
}

// goneNote is why a kernel was closed, and when; parent is its session's
// parent session (a subagent's), for CloseSession of the parent.
type goneNote struct {
	note, parent string
	at           time.Time
}

// maxGoneNotes bounds kernels.gone: the notes of sessions that never call
// again are dropped, oldest first.
const maxGoneNotes = 1024

// errNoSlot is why reserveSlot gave up: every kernel ran a call for as
// long as the caller could wait.
var errNoSlot = errors.New("no session kernel slot became free")

// waitedSeconds is kernel.waited_seconds for a wait of d: a call that
// waited at all reports at least a millisecond (a wait that a warm kernel
// ends in a tenth of one would otherwise round to absent).
func waitedSeconds(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return max(engine.RoundMillis(d), 0.001)
}

// projectPoolKey is what a project kernel from the pool was started for.
type projectPoolKey struct{ python, workdir string }

// newKernels returns an empty kernel set with room for maxKernels
// top-level kernels (below 1: 1, as config clamps it).
func newKernels(maxKernels int) *kernels {
	return &kernels{
		entries:  map[kernelKey]*kernelEntry{},
		queues:   map[string]*fifo{},
		running:  map[string]context.CancelCauseFunc{},
		stopReap: make(chan struct{}),
		max:      max(maxKernels, 1),
		gone:     map[kernelKey]goneNote{},
	}
}

// Notes of a result's kernel object.
const (
	noteKilled = "The session's kernel was killed, so its state (variables, imports, loaded data) is lost; the next call starts a fresh kernel."
	noteExited = "The script ended the session's kernel (sys.exit); the next call starts a fresh kernel."
	noteDied   = "The session's kernel died, so its state is lost; the next call starts a fresh kernel."
	// noteStandalone has the backend's name.
	noteStandalone = "remote session kernel unavailable on %s; this call ran as a standalone script, state does not persist"
	// noteBusy has max_session_kernels and the call's timeout in seconds.
	noteBusy = "all %d session kernels (max_session_kernels) stayed busy for the call's timeout (%ss); this call ran as a standalone script, state does not persist"
	// noteEvicted has max_session_kernels.
	noteEvicted = "The session's kernel was closed to make room for another session's (max_session_kernels is %d), so its state (variables, imports, loaded data) is lost; this call started a fresh kernel."
	// noteIdle has kernel_idle_timeout in seconds.
	noteIdle = "The session's kernel was closed after %ss idle (kernel_idle_timeout), so its state (variables, imports, loaded data) is lost; this call started a fresh kernel."
)

// sessionCall runs req in its session's kernel.
// The caller holds the session's turn (takeTurn).
func (e *Executor) sessionCall(ctx context.Context, c *call, req Request) (Result, error) {
	ks := e.kernels

	interp := "wasm"
	if c.sandbox {
		interp = "wasm+" + c.python.Path // its packages
	}
	if !c.usesWasm() {
		interp = c.python.Path
		if c.backend != nil {
			interp = "python3"
		}
	}
	// c.enabled is canonical (engine.ToolSet): equal sets give equal keys.
	key := kernelKey{session: req.Session, mode: c.mode, interpreter: interp, workdir: c.workdir, tools: strings.Join(c.enabled, ","),
		backend: backendID(c.backend)}

	stateReset := false
	if req.Reset {
		stateReset = true
		for _, old := range ks.take(func(en *kernelEntry) bool { return en.key.session == req.Session }, "") {
			old.k.Close()
		}
		ks.forgetGone(req.Session, false) // state_reset says why the state is gone
	}
	// Found and pinned (running) in one step, so that neither another
	// session's eviction nor the idle reaper can close it under the call.
	en := ks.pin(key)
	reused := en != nil
	var startNote string
	var waited time.Duration
	if en == nil {
		top := req.ParentSession == "" // a subagent's kernel takes no slot
		if top {
			victim, w, err := ks.reserveSlot(ctx, c.timeout)
			e.closeEvicted(victim)
			waited = w
			switch {
			case errors.Is(err, errNoSlot):
				e.log.event(slog.LevelWarn, "no kernel slot",
					"session", req.Session, "max_session_kernels", ks.max, "timeout", c.timeout, "waited", waited)
				return e.standalone(ctx, c, req, fmt.Sprintf(noteBusy, ks.max, engine.Seconds(c.timeout)),
					&KernelInfo{StateReset: stateReset, WaitedSeconds: waitedSeconds(waited)})
			case errors.Is(err, ErrClosed):
				return failed(c.mode, err), err
			case err != nil:
				return e.interruptedBeforeStart(ctx, c)
			}
		}
		startNote = ks.startNote(key)
		k, err := e.startKernel(ctx, c)
		if err != nil && ctx.Err() == nil && reviveBackend(ctx, c.backend) {
			// The target was gone (a container removed under the session)
			// and is back: try once more.
			k, err = e.startKernel(ctx, c)
		}
		if err != nil && top {
			ks.releaseSlot()
		}
		if err != nil && ctx.Err() != nil {
			return e.interruptedBeforeStart(ctx, c)
		}
		if err != nil && c.backend != nil && !c.usesWasm() {
			return e.standaloneRemote(ctx, c, req, err)
		}
		if err != nil {
			err = errors.Join(errors.New("starting the session kernel"), err)
			return failed(c.mode, err), err
		}
		en = &kernelEntry{key: key, parent: req.ParentSession, k: k}
		if !ks.add(en) {
			k.Close()
			return failed(c.mode, ErrClosed), ErrClosed
		}
		e.startReaper()
	}

	eres, err := engine.Execute(ctx, en.k, e.request(c, req.Code))
	res := fromEngine(eres)
	alive := en.k.Alive()
	if alive {
		ks.unpin(en)
	} else {
		// Removed while still pinned: an eviction never picks a dead
		// kernel (and never says it made room with it).
		ks.remove(en)
		en.k.Close()
	}

	info := &KernelInfo{Reused: reused, ExecutionCount: en.count, StateReset: stateReset, Note: startNote,
		WaitedSeconds: waitedSeconds(waited)}
	if !alive {
		info.Ended = true
		switch {
		case res.Status == config.StatusTimeout || res.Status == config.StatusInterrupted:
			// The error says so too (engine.KernelTimeoutMessage,
			// engine.KernelInterruptedMessage).
			info.Note = noteKilled
		case res.Status == config.StatusSuccess || strings.HasPrefix(res.Error, "Script exited with code"):
			info.Note = noteExited
		default:
			info.Note = noteDied
		}
	}
	res.Kernel = info
	return e.finish(c, res, err)
}

// interruptedBeforeStart answers a call whose context ended while it
// waited for its session's earlier calls, for a kernel or for its
// interpreter to start.
func (e *Executor) interruptedBeforeStart(ctx context.Context, c *call) (Result, error) {
	reason := engine.DefaultInterruptReason
	var ie *InterruptError
	if errors.As(context.Cause(ctx), &ie) && ie.Reason != "" {
		reason = ie.Reason
	}
	msg := "Execution interrupted before it started: " + reason
	exit := -1
	return Result{
		Status:    config.StatusInterrupted,
		Output:    engine.InterruptMarker(reason),
		Error:     msg,
		ExitCode:  &exit,
		Mode:      c.mode,
		ToolCalls: []ToolCall{},
	}, nil
}

// startNote is the kernel note of a call that starts a new kernel for
// key: why the state of the session's earlier calls is not there (its
// kernel for key was closed by the executor, or it has a live kernel for
// another key). "" when there is nothing to say.
func (ks *kernels) startNote(key kernelKey) string {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	gone := ks.gone[key].note
	delete(ks.gone, key)
	other := ks.otherKernelNoteLocked(key)
	return strings.TrimSpace(gone + " " + other)
}

// otherKernelNoteLocked is the kernel note of a call that starts a new
// kernel for key while its session has a live kernel for another key: why
// the earlier calls' variables are not there. "" when the session has
// none. ks.mu is held.
func (ks *kernels) otherKernelNoteLocked(key kernelKey) string {
	var other *kernelEntry
	for k, en := range ks.entries {
		if k.session == key.session && k != key && (other == nil || en.lastUsed.After(other.lastUsed)) {
			other = en
		}
	}
	if other == nil {
		return ""
	}
	var diff []string
	o := other.key
	if o.mode != key.mode {
		diff = append(diff, "mode")
	}
	if o.interpreter != key.interpreter && o.mode == key.mode {
		diff = append(diff, "interpreter")
	}
	if o.workdir != key.workdir {
		diff = append(diff, "working dir")
	}
	if o.tools != key.tools {
		diff = append(diff, "tool set")
	}
	return "A new kernel: this call's " + joinAnd(diff) + " differs from that of the session's existing kernel, so the variables and imports of the calls made there are not here. That kernel is kept for calls that match it."
}

// joinAnd joins words as "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

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
	e.kernels.mu.Lock()
	pool := e.kernels.pool
	if e.kernels.poolGen != c.envGen {
		// Started before a skill registered a variable this call passes,
		// or the call passes skill variables of its session (envGen -1).
		pool = nil
	}
	if engine.ToolsInject(c.enabled) != "" {
		// The pool's kernels have all seven tools' functions.
		pool = nil
	}
	e.kernels.mu.Unlock()
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
	ks := e.kernels
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
}

// Stats returns the executor's kernel counts.
func (e *Executor) Stats() Stats {
	ks := e.kernels
	ks.mu.Lock()
	defer ks.mu.Unlock()
	st := Stats{Kernels: len(ks.entries), Evictions: ks.evictions.Load(), Waiting: len(ks.slotWait)}
	for _, en := range ks.entries {
		if en.running {
			st.Running++
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
			e.log.event(slog.LevelError, "warm pool failed", "error", err.Error())
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		ks := e.kernels
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
	ks := e.kernels
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

// Interrupt stops the call holding session's turn, if any. A running
// script ends with status "interrupted" and `[execution interrupted —
// <reason>]` (reason "" means the default, "user sent a new message"), and
// the session's kernel is killed; a call still waiting for its approval is
// blocked, one waiting for a kernel (max_session_kernels) or for its
// interpreter to start ends interrupted. It reports whether a call held
// the turn.
func (e *Executor) Interrupt(session, reason string) bool {
	ks := e.kernels
	ks.mu.Lock()
	cancel := ks.running[session]
	ks.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(&InterruptError{Reason: reason})
	return true
}

// CloseSession disposes the kernels of session and of its subagents, and
// forgets its session-scoped approvals and the skill variables registered
// for them (RegisterSessionSkillEnv). Running calls of those sessions
// are interrupted first.
func (e *Executor) CloseSession(ctx context.Context, session string) {
	ks := e.kernels
	// Taken first, then the calls holding the sessions' turns are
	// interrupted, then the kernels closed: a call that takes a turn after
	// the interrupt finds no kernel to be closed under it and starts a
	// fresh one.
	taken := ks.take(func(en *kernelEntry) bool { return en.key.session == session || en.parent == session }, "")
	sessions := []string{session}
	for _, en := range taken {
		if !slices.Contains(sessions, en.key.session) {
			sessions = append(sessions, en.key.session)
		}
	}
	ks.forgetGone(session, true)
	for _, s := range sessions {
		e.Interrupt(s, "the session was closed")
	}
	for _, en := range taken {
		en.k.Close()
	}
	// Their containers too (docker; kept when container_persistent).
	for _, s := range sessions {
		e.backends.closeSession(s)
	}
	e.approvals.ForgetSession(session)
	e.forgetSessionSkillEnv(sessions...)
}

// closeEvicted closes victim, an idle kernel that reserveSlot evicted to
// make room (nil: none).
func (e *Executor) closeEvicted(victim *kernelEntry) {
	if victim == nil {
		return
	}
	max := e.kernels.max
	e.log.event(slog.LevelInfo, "kernel evicted",
		"session", victim.key.session, "mode", victim.key.mode, "reason", "lru", "max_session_kernels", max)
	victim.k.Close()
}

// startReaper starts the idle reaper once.
func (e *Executor) startReaper() {
	ks := e.kernels
	ks.mu.Lock()
	if ks.reaping || ks.closed {
		ks.mu.Unlock()
		return
	}
	ks.reaping = true
	ks.background.Add(1)
	ks.mu.Unlock()
	idle := time.Duration(e.cfg.CodeExecution.KernelIdleTimeout) * time.Second
	tick := min(max(idle/4, 50*time.Millisecond), 30*time.Second)
	go func() {
		defer ks.background.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-ks.stopReap:
				return
			case now := <-t.C:
				e.reapIdle(now, idle)
			}
		}
	}()
}

// reapIdle closes the kernels idle for idle or longer at now (never a
// pinned one: a running call's).
func (e *Executor) reapIdle(now time.Time, idle time.Duration) {
	ks := e.kernels
	note := fmt.Sprintf(noteIdle, engine.Seconds(idle))
	for _, en := range ks.take(func(en *kernelEntry) bool { return !en.running && now.Sub(en.lastUsed) >= idle }, note) {
		ks.evictions.Add(1)
		e.log.event(slog.LevelInfo, "idle kernel closed",
			"session", en.key.session, "mode", en.key.mode, "kernel_idle_timeout", idle)
		en.k.Close()
	}
}

func (ks *kernels) queue(session string) (*fifo, error) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.closed {
		return nil, ErrClosed
	}
	q := ks.queues[session]
	if q == nil {
		q = &fifo{}
		ks.queues[session] = q
	}
	return q, nil
}

// pin returns the live kernel for key, if any, pinned: marked running,
// in the same step that finds it, so that no eviction or reaper closes
// it until unpin. A kernel found dead is removed and closed.
func (ks *kernels) pin(key kernelKey) *kernelEntry {
	ks.mu.Lock()
	en := ks.entries[key]
	if en != nil {
		en.running = true
		en.count++
		en.lastUsed = time.Now()
	}
	ks.mu.Unlock()
	if en != nil && !en.k.Alive() {
		ks.remove(en)
		en.k.Close()
		return nil
	}
	return en
}

// unpin marks en idle again after its call.
func (ks *kernels) unpin(en *kernelEntry) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	en.running = false
	en.lastUsed = time.Now()
	ks.grantLocked()
}

// add adds en, a kernel just started for a call, pinned (its first call
// running); a top-level kernel takes over the slot its call reserved. It
// reports false after closeAll.
func (ks *kernels) add(en *kernelEntry) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if en.parent == "" {
		ks.starting--
	}
	if ks.closed {
		return false
	}
	en.running = true
	en.count = 1
	en.lastUsed = time.Now()
	ks.entries[en.key] = en
	return true
}

func (ks *kernels) remove(en *kernelEntry) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.entries[en.key] == en {
		delete(ks.entries, en.key)
		ks.grantLocked()
	}
}

// take removes and returns the entries that match (running ones too: the
// caller interrupts their calls); with a note, their sessions' next
// kernels say it (why the state is gone).
func (ks *kernels) take(match func(*kernelEntry) bool, note string) []*kernelEntry {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	var out []*kernelEntry
	for k, en := range ks.entries {
		if match(en) {
			delete(ks.entries, k)
			out = append(out, en)
			if note != "" {
				ks.noteGoneLocked(en, note)
			}
		}
	}
	if len(out) > 0 {
		ks.grantLocked()
	}
	return out
}

// reserveSlot holds a slot for a top-level kernel the caller is about to
// start: a free one, or that of the least recently used idle kernel, which
// it evicts and returns for the caller to close. When every kernel runs a
// call it waits, behind the calls that waited first, until one goes idle
// or is closed. The wait ends with ctx (its error), closeAll (ErrClosed)
// or after limit (errNoSlot); waited is its length. The caller gives the
// slot to add, or back with releaseSlot; it closes victim whatever the
// error (with an error it is nil unless the set was closed).
func (ks *kernels) reserveSlot(ctx context.Context, limit time.Duration) (victim *kernelEntry, waited time.Duration, err error) {
	ks.mu.Lock()
	if ks.closed {
		ks.mu.Unlock()
		return nil, 0, ErrClosed
	}
	if len(ks.slotWait) == 0 {
		if v, ok := ks.freeSlotLocked(); ok {
			ks.starting++
			ks.mu.Unlock()
			return v, 0, nil
		}
	}
	w := &slotWaiter{granted: make(chan struct{})}
	ks.slotWait = append(ks.slotWait, w)
	ks.mu.Unlock()

	start := time.Now()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-w.granted:
	case <-ctx.Done():
	case <-ks.stopReap:
	case <-timer.C:
	}
	waited = time.Since(start)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	granted := false
	select {
	case <-w.granted:
		granted = true
	default:
	}
	switch {
	case ctx.Err() != nil:
		// An interrupt says why (Close interrupts the calls before it
		// closes the set), even when a slot came at the same moment.
		err = ctx.Err()
	case ks.closed:
		err = ErrClosed
	case granted:
		return w.victim, waited, nil // granted, perhaps as time ran out: take it
	default:
		err = errNoSlot
	}
	if !granted {
		ks.slotWait = slices.DeleteFunc(ks.slotWait, func(x *slotWaiter) bool { return x == w })
		return nil, waited, err
	}
	ks.starting--
	if ks.closed {
		return w.victim, waited, err // closeAll no longer sees it: the caller closes it
	}
	// Given back: the idle kernel evicted for it is not closed, so it
	// stays (its session keeps its state), and the slot goes to the next
	// waiter, which may evict it after all.
	if v := w.victim; v != nil && ks.entries[v.key] == nil {
		ks.entries[v.key] = v
		ks.evictions.Add(^uint64(0))
		delete(ks.gone, v.key)
	}
	ks.grantLocked()
	return nil, waited, err
}

func (ks *kernels) releaseSlot() {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.starting--
	ks.grantLocked()
}

// freeSlotLocked reports whether a slot can be had now: when all are
// held, it evicts the least recently used idle top-level kernel and
// returns it (nil when a slot was free). ks.mu is held.
func (ks *kernels) freeSlotLocked() (victim *kernelEntry, ok bool) {
	held := ks.starting
	for _, en := range ks.entries {
		if en.parent != "" {
			continue
		}
		held++
		if !en.running && (victim == nil || en.lastUsed.Before(victim.lastUsed)) {
			victim = en
		}
	}
	if held < ks.max {
		return nil, true
	}
	if victim == nil {
		return nil, false
	}
	delete(ks.entries, victim.key)
	ks.evictions.Add(1)
	ks.noteGoneLocked(victim, fmt.Sprintf(noteEvicted, ks.max))
	return victim, true
}

// grantLocked hands the slots that can be had to the waiting calls, first
// come first served. ks.mu is held.
func (ks *kernels) grantLocked() {
	for len(ks.slotWait) > 0 && !ks.closed {
		victim, ok := ks.freeSlotLocked()
		if !ok {
			return
		}
		w := ks.slotWait[0]
		ks.slotWait = ks.slotWait[1:]
		ks.starting++
		w.victim = victim
		close(w.granted)
	}
}

// noteGoneLocked records why en was closed. ks.mu is held.
func (ks *kernels) noteGoneLocked(en *kernelEntry, note string) {
	if _, ok := ks.gone[en.key]; !ok && len(ks.gone) >= maxGoneNotes {
		var oldest kernelKey
		var at time.Time
		for k, g := range ks.gone {
			if at.IsZero() || g.at.Before(at) {
				oldest, at = k, g.at
			}
		}
		delete(ks.gone, oldest)
	}
	ks.gone[en.key] = goneNote{note: note, parent: en.parent, at: time.Now()}
}

// forgetGone drops the notes of session's closed kernels, and with
// subagents those of its subagents' (a session closed or reset: its next
// kernel is fresh for that reason).
func (ks *kernels) forgetGone(session string, subagents bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	for k, g := range ks.gone {
		if k.session == session || subagents && g.parent == session {
			delete(ks.gone, k)
		}
	}
}

// takeTurn waits for session's turn at place (reserved by Start; nil:
// reserved now) and returns the turn's context, which Interrupt cancels,
// and the function that ends the turn. Calls of one session hold their
// turn one at a time, in the order their places were reserved, from before
// their approval to their result.
func (ks *kernels) takeTurn(ctx context.Context, session string, q *fifo, place chan struct{}) (context.Context, func(), error) {
	if place == nil {
		var err error
		if q, err = ks.queue(session); err != nil {
			return nil, nil, err
		}
		place = q.reserve()
	}
	if err := q.wait(ctx, place); err != nil {
		return nil, nil, err
	}
	turnCtx, cancel := context.WithCancelCause(ctx)
	ks.mu.Lock()
	ks.running[session] = cancel
	ks.mu.Unlock()
	return turnCtx, func() {
		ks.mu.Lock()
		delete(ks.running, session)
		ks.mu.Unlock()
		cancel(nil)
		q.unlock()
	}, nil
}

// closeAll interrupts running calls, closes every kernel and the pool, and
// waits for the reaper and for replaced pools to finish closing.
func (ks *kernels) closeAll() {
	ks.mu.Lock()
	if ks.closed {
		ks.mu.Unlock()
		return
	}
	ks.closed = true
	close(ks.stopReap)
	for _, cancel := range ks.running {
		cancel(&InterruptError{Reason: "the executor is shutting down"})
	}
	entries := ks.entries
	ks.entries = map[kernelKey]*kernelEntry{}
	pools := []*engine.KernelPool{ks.pool, ks.projectPool}
	ks.mu.Unlock()
	var wg sync.WaitGroup
	for _, en := range entries {
		wg.Go(func() { en.k.Close() })
	}
	for _, pool := range pools {
		if pool != nil {
			wg.Go(pool.Close)
		}
	}
	wg.Wait()
	ks.background.Wait()
}

// fifo is a lock granted in arrival order.
type fifo struct {
	mu      sync.Mutex
	held    bool
	waiters []chan struct{}
}

// reserve takes a place in the queue: the returned channel is closed when
// it is the caller's turn (at once when nobody holds the queue).
func (f *fifo) reserve() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	if !f.held {
		f.held = true
		close(ch)
		return ch
	}
	f.waiters = append(f.waiters, ch)
	return ch
}

// wait waits for the place ch to come up; when ctx ends first, it gives
// the place up and returns ctx's error.
func (f *fifo) wait(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	default:
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		f.withdraw(ch)
		return ctx.Err()
	}
}

// withdraw gives up the place ch: passed on when it had come up, else
// removed from the queue.
func (f *fifo) withdraw(ch chan struct{}) {
	f.mu.Lock()
	select {
	case <-ch:
		f.mu.Unlock()
		f.unlock()
	default:
		f.waiters = slices.DeleteFunc(f.waiters, func(w chan struct{}) bool { return w == ch })
		f.mu.Unlock()
	}
}

func (f *fifo) unlock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiters) > 0 {
		ch := f.waiters[0]
		f.waiters = f.waiters[1:]
		close(ch)
		return
	}
	f.held = false
}
