package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/nativeengine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// Where a call runs: its session's kernel, or a fresh interpreter; and the
// table of session kernels with their slots (docs/behaviour.md §7). A
// kernel is a live interpreter whose globals and imports persist between
// calls; it is reused when session, mode, interpreter, working dir and tool
// set all match. pools.go starts kernels.

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

// startNote is the kernel note of a call that starts a new kernel for
// key: why the state of the session's earlier calls is not there (its
// kernel for key was closed by the executor, or it has a live kernel for
// another key). "" when there is nothing to say.
func (ks *sessionTable) startNote(key kernelKey) string {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	s := ks.sessionLocked(key.session)
	gone, ok := s.gone[key]
	if ok {
		delete(s.gone, key)
		ks.goneNotes--
	}
	other := otherKernelNote(s, key)
	return strings.TrimSpace(gone.note + " " + other)
}

// otherKernelNoteLocked is the kernel note of a call that starts a new
// kernel for key while its session has a live kernel for another key: why
// the earlier calls' variables are not there. "" when the session has
// none. The table's mu is held.
func otherKernelNote(s *session, key kernelKey) string {
	var other *kernelEntry
	for k, en := range s.kernels {
		if k != key && (other == nil || en.lastUsed.After(other.lastUsed)) {
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

// --- Where a call runs: its session's kernel, or a fresh interpreter ---

// runPrepared runs c, the call prepared for req, in its session's kernel, or
// without a session in a fresh interpreter.
func (e *Executor) runPrepared(ctx context.Context, c *call, req Request) (Result, error) {
	if req.Session == "" {
		res, err := e.oneShot(ctx, c, req.Code)
		return e.finish(c, res, err)
	}
	return e.sessionCall(ctx, c, req)
}

// sessionCall runs req in its session's kernel.
// The caller holds the session's turn (takeTurn).
func (e *Executor) sessionCall(ctx context.Context, c *call, req Request) (Result, error) {
	ks := e.sessions

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
		ks.forgetGone(req.Session) // state_reset says why the state is gone
	}
	// Found and pinned (running) in one step, so that neither another
	// session's eviction nor the idle reaper can close it under the call.
	en := ks.pin(key)
	if en != nil && en.fenced {
		// Another executor has the session now: this kernel's state is
		// stale; the call takes the lease again (and the session back).
		ks.remove(en)
		en.k.Close()
		en = nil
	}
	reused := en != nil
	var startNote string
	var waited, resumeTook time.Duration
	resumed := false
	if en == nil {
		top := req.ParentSession == "" // a subagent's kernel takes no slot
		if top {
			victim, w, err := ks.reserveSlot(ctx, c.timeout)
			e.closeEvicted(victim)
			waited = w
			switch {
			case errors.Is(err, errNoSlot):
				e.log.Log(context.Background(), slog.LevelWarn, "no kernel slot", "session", req.Session, "max_session_kernels", ks.max, "timeout", c.timeout, "waited", waited)
				return e.standalone(ctx, c, req, fmt.Sprintf(noteBusy, ks.max, engine.Seconds(c.timeout)),
					&KernelInfo{StateReset: stateReset, WaitedSeconds: waitedSeconds(waited)})
			case errors.Is(err, ErrClosed):
				return failed(c.mode, err), err
			case err != nil:
				return interruptedBeforeStart(ctx, c.mode)
			}
		}
		startNote = ks.startNote(key)
		// With a session store: the session's lease, and its suspended
		// kernel when the store holds one (durable.go).
		d, err := e.durableStart(ctx, c, key, req)
		defer d.settle()
		if err != nil {
			if top {
				ks.releaseSlot()
			}
			if ctx.Err() != nil {
				return interruptedBeforeStart(ctx, c.mode)
			}
			return failed(c.mode, err), err
		}
		k, prior, detached := d.k, d.prior, d.detached
		if k != nil {
			// Suspended, not lost: the note of its eviction does not hold.
			startNote, resumed, resumeTook = "", true, d.took
		} else if d.note != "" {
			startNote = d.note
		}
		if k == nil {
			k, err = e.startKernel(ctx, c)
		}
		if err != nil && ctx.Err() == nil && reviveBackend(ctx, c.backend) {
			// The target was gone (a container removed under the session)
			// and is back: try once more.
			k, err = e.startKernel(ctx, c)
		}
		if err != nil && top {
			ks.releaseSlot()
		}
		if err != nil && ctx.Err() != nil {
			return interruptedBeforeStart(ctx, c.mode)
		}
		if err != nil && c.backend != nil && !c.usesWasm() {
			return e.standaloneRemote(ctx, c, req, err)
		}
		if err != nil {
			err = errors.Join(errors.New("starting the session kernel"), err)
			return failed(c.mode, err), err
		}
		en = &kernelEntry{key: key, parent: req.ParentSession, k: k, prior: prior, count: prior, detached: detached}
		if !ks.add(en) {
			if resumed && ks.end != nil {
				ks.end(en, "shutdown") // back into the store (endKernel)
			} else {
				k.Close()
			}
			return failed(c.mode, ErrClosed), ErrClosed
		}
		e.startReaper()
	}

	eres, err := engine.Execute(ctx, en.k, e.request(c, req.Code))
	res := fromEngine(eres)
	alive := en.k.Alive()
	e.durableEnd(en, alive)
	if alive {
		ks.unpin(en)
	} else {
		// Removed while still pinned: an eviction never picks a dead
		// kernel (and never says it made room with it).
		ks.remove(en)
		en.k.Close()
	}

	info := &KernelInfo{Reused: reused, ExecutionCount: en.count, StateReset: stateReset, Note: startNote,
		WaitedSeconds: waitedSeconds(waited), Resumed: resumed}
	if resumed {
		info.ResumeSeconds = engine.RoundMillis(resumeTook)
	}
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
func interruptedBeforeStart(ctx context.Context, mode string) (Result, error) {
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
		Mode:      mode,
		ToolCalls: []ToolCall{},
	}, nil
}

// standaloneRemote runs a session call whose remote kernel could not
// start as a one-shot script in the backend, and says so (docs/behaviour.md
// §12): its state does not persist.
func (e *Executor) standaloneRemote(ctx context.Context, c *call, req Request, startErr error) (Result, error) {
	e.log.Log(context.Background(), slog.LevelWarn, "remote kernel unavailable", "session", req.Session, "backend", c.backend.Name(), "error", startErr.Error())
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

// oneShot runs code for c in a fresh interpreter: a call without a
// session, or a session call that gets no kernel (standalone).
func (e *Executor) oneShot(ctx context.Context, c *call, code string) (Result, error) {
	// Choose the engine, and load (or compile) a wasm interpreter, before
	// the script's clock starts: the timeout limits the script, not a
	// first compile.
	var eng engine.Engine = e.strict
	if c.mode == config.ModeProject {
		if c.usesWasm() {
			eng = e.strict.Project(e.projectOptions(ctx, c))
		} else {
			eng = e.projectEngine(c)
		}
	}
	if c.usesWasm() {
		if err := e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB); err != nil {
			return failed(c.mode, err), err
		}
	}
	r := e.request(c, code)
	if c.session != "" { // request leaves a session call's environment to its kernel
		r.Env = engine.ChildEnv(e.environ, c.envOpts, c.inject, c.enabled)
	}
	res, err := engine.Execute(ctx, eng, r)
	return fromEngine(res), err
}

// projectOptions are the sandboxed project mode's options for c: the
// file tools' rules, and the site dirs of the python project mode would
// run (none when there is none).
func (e *Executor) projectOptions(ctx context.Context, c *call) strict.ProjectOptions {
	opts := strict.ProjectOptions{Guard: c.tools, Packages: c.python.Sites}
	if c.python.Path != "" {
		opts.Packages = native.SiteDirs(ctx, c.python.Path, c.workdir, filepath.Join(e.cacheDir, native.ProbeCacheName))
	}
	return opts
}

// projectEngine is the engine of a project-mode call that does not use
// the embedded interpreter.
func (e *Executor) projectEngine(c *call) *nativeengine.Engine {
	return &nativeengine.Engine{Python: c.python.Path, Transport: e.transport, Backend: c.backend, Landlock: e.landlock}
}

// request is the shared layer's request for c. A one-shot run gets its
// interpreter's environment here; a kernel's was built when it started
// (kernelSpec), so a session call does not scrub the environment again.
func (e *Executor) request(c *call, code string) engine.Request {
	var env []string
	if c.session == "" {
		inject := c.inject
		if c.script != "" {
			inject = append(slices.Clip(inject), engine.ScriptNameEnv+"="+c.script)
		}
		env = engine.ChildEnv(e.environ, c.envOpts, inject, c.enabled)
	}
	return engine.Request{
		Code:          code,
		Mode:          c.mode,
		Embedded:      c.mode == config.ModeProject && c.usesWasm(),
		Workdir:       c.workdir,
		Timeout:       c.timeout,
		MaxToolCalls:  c.maxCalls,
		Env:           env,
		SpillDir:      c.spillDir,
		MemoryLimitMB: e.cfg.CodeExecution.MemoryLimitMB,
		DiskLimitMB:   e.cfg.CodeExecution.DiskLimitMB,
		ProcessLimits: e.processLimits(),
		Tools:         e.toolFunc(c),
		Enabled:       c.enabled,
		Logger:        e.log,
		Output:        c.output,
	}
}

// toolFunc runs c's tool calls; in a cli session a terminal command that
// the dangerous-command check flags needs approval first (docs/behaviour.md §8).
func (e *Executor) toolFunc(c *call) engine.ToolFunc {
	return func(ctx context.Context, name string, args json.RawMessage) map[string]any {
		if name == "terminal" && c.kind == config.KindCLI {
			var a struct {
				Command string  `json:"command"`
				Stdin   *string `json:"_stdin_b64"` // hostfuncs.SubprocessStdinArg
			}
			if json.Unmarshal(args, &a) == nil && a.Command != "" {
				check := e.approvals.Command
				if a.Stdin != nil {
					// The command reads what the script gives it: "sh" with
					// "rm -rf ~" on its stdin (subprocess.run(["sh"],
					// input=...)) ran without approval when only "sh" was
					// checked.
					check = e.approvals.CommandWithInput
				}
				if blocked := check(ctx, policyApprover(c.approver), c.grants, c.kind, a.Command, c.shell()); blocked != "" {
					return map[string]any{"output": "", "exit_code": -1, "error": blocked}
				}
			}
		}
		if h := c.handlers[name]; h != nil {
			return h(ctx, args)
		}
		return c.tools.Call(ctx, name, args)
	}
}

// --- The table of session kernels, and their slots ---

// closeEvicted closes victim, an idle kernel that reserveSlot evicted to
// make room (nil: none).
func (e *Executor) closeEvicted(victim *kernelEntry) {
	if victim == nil {
		return
	}
	max := e.sessions.max
	e.log.Log(context.Background(), slog.LevelInfo, "kernel evicted", "session", victim.key.session, "mode", victim.key.mode, "reason", "lru", "max_session_kernels", max)
	e.endKernel(victim, "lru")
}

// entryLocked is the kernel for key, if any. ks.mu is held.
func (ks *sessionTable) entryLocked(key kernelKey) *kernelEntry {
	if s := ks.byName[key.session]; s != nil {
		return s.kernels[key]
	}
	return nil
}

// pin returns the live kernel for key, if any, pinned: marked running,
// in the same step that finds it, so that no eviction or reaper closes
// it until unpin. A kernel found dead is removed and closed.
func (ks *sessionTable) pin(key kernelKey) *kernelEntry {
	ks.mu.Lock()
	en := ks.entryLocked(key)
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
func (ks *sessionTable) unpin(en *kernelEntry) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	en.running = false
	en.lastUsed = time.Now()
	ks.grantLocked()
}

// add adds en, a kernel just started for a call, pinned (its first call
// running), to its session; a top-level kernel takes over the slot its
// call reserved. It reports false after closeAll.
func (ks *sessionTable) add(en *kernelEntry) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if en.parent == "" {
		ks.starting--
	}
	if ks.closed {
		return false
	}
	en.running = true
	en.count = en.prior + 1
	en.lastUsed = time.Now()
	en.owner = ks.sessionLocked(en.key.session)
	en.owner.kernels[en.key] = en
	return true
}

func (ks *sessionTable) remove(en *kernelEntry) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if s := ks.byName[en.key.session]; s != nil && s.kernels[en.key] == en {
		delete(s.kernels, en.key)
		ks.grantLocked()
	}
}

// take removes and returns the kernels that match (running ones too: the
// caller interrupts their calls); with a note, their sessions' next
// kernels say it (why the state is gone).
func (ks *sessionTable) take(match func(*kernelEntry) bool, note string) []*kernelEntry {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	var out []*kernelEntry
	for _, s := range ks.byName {
		for k, en := range s.kernels {
			if match(en) {
				delete(s.kernels, k)
				out = append(out, en)
				if note != "" {
					ks.noteGoneLocked(en, note)
				}
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
// error (with an error it is nil unless the set, or the victim's session, was closed).
func (ks *sessionTable) reserveSlot(ctx context.Context, limit time.Duration) (victim *kernelEntry, waited time.Duration, err error) {
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
	// A call that queued waited, even when the clock did not move: on
	// Windows it advances in steps of up to 15.6 ms, and a short wait can
	// measure 0.
	waited = max(time.Since(start), time.Nanosecond)
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
	if v := w.victim; v != nil && v.owner != nil && v.owner.closed {
		// Its session was closed meanwhile: the caller closes it.
		ks.grantLocked()
		return v, waited, err
	} else if v != nil && ks.entryLocked(v.key) == nil {
		s := v.owner
		if s == nil {
			s = ks.sessionLocked(v.key.session)
		}
		s.kernels[v.key] = v
		ks.evictions.Add(^uint64(0))
		if _, ok := s.gone[v.key]; ok {
			delete(s.gone, v.key)
			ks.goneNotes--
		}
		ks.suspendDoneLocked(v.key) // not suspended after all
	}
	ks.grantLocked()
	return nil, waited, err
}

func (ks *sessionTable) releaseSlot() {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.starting--
	ks.grantLocked()
}

// freeSlotLocked reports whether a slot can be had now: when all are
// held, it evicts the least recently used idle top-level kernel and
// returns it (nil when a slot was free). ks.mu is held.
func (ks *sessionTable) freeSlotLocked() (victim *kernelEntry, ok bool) {
	held := ks.starting
	for _, s := range ks.byName {
		for _, en := range s.kernels {
			if en.parent != "" {
				continue
			}
			held++
			if !en.running && (victim == nil || en.lastUsed.Before(victim.lastUsed)) {
				victim = en
			}
		}
	}
	if held < ks.max {
		return nil, true
	}
	if victim == nil {
		return nil, false
	}
	delete(ks.byName[victim.key.session].kernels, victim.key)
	ks.evictions.Add(1)
	ks.noteGoneLocked(victim, fmt.Sprintf(noteEvicted, ks.max))
	return victim, true
}

// grantLocked hands the slots that can be had to the waiting calls, first
// come first served. ks.mu is held.
func (ks *sessionTable) grantLocked() {
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

// markSuspendingLocked marks en, just taken out of the table, as being
// suspended, when its end (endKernel) suspends it: the session's next
// call for its key waits for the image rather than start afresh
// (suspendDone ends the wait). ks.mu is held.
func (ks *sessionTable) markSuspendingLocked(en *kernelEntry) {
	if ks.suspends != nil && ks.suspends(en.key) {
		if ks.suspending == nil {
			ks.suspending = map[kernelKey]chan struct{}{}
		}
		ks.suspending[en.key] = make(chan struct{})
	}
}

// noteGoneLocked records, on its session, why en was closed. ks.mu is
// held.
func (ks *sessionTable) noteGoneLocked(en *kernelEntry, note string) {
	ks.markSuspendingLocked(en)
	s := ks.sessionLocked(en.key.session)
	if _, ok := s.gone[en.key]; !ok {
		if ks.goneNotes >= maxGoneNotes {
			var oldest *session
			var key kernelKey
			var at time.Time
			for _, o := range ks.byName {
				for k, g := range o.gone {
					if at.IsZero() || g.at.Before(at) {
						oldest, key, at = o, k, g.at
					}
				}
			}
			if oldest != nil {
				delete(oldest.gone, key)
				ks.goneNotes--
			}
		}
		ks.goneNotes++
	}
	s.gone[en.key] = goneNote{note: note, at: time.Now()}
}

// forgetGone drops the notes of session's closed kernels (a reset: its
// next kernel is fresh for that reason).
func (ks *sessionTable) forgetGone(session string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if s := ks.byName[session]; s != nil {
		ks.goneNotes -= len(s.gone)
		clear(s.gone)
	}
}
