package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// Durable session kernels (docs/service.md): with
// code_execution.session_store set, a strict-mode session kernel that the
// kernel limit evicts, the idle timeout ends or Close finds idle is
// suspended into the store (runtime/internal/strict/suspend.go) instead of
// closed, and the next call for its key resumes it, with its variables,
// imports, private files and open files; here or in another executor
// sharing the store (one at a time: lease.go). A kernel that cannot be
// suspended (an open directory, a project-mode kernel) is closed as
// before, and its next call's note says its state is lost.

// Notes of a resumed, or not resumed, kernel.
const (
	// noteNotResumed has the reason.
	noteNotResumed = "The session's suspended kernel could not be resumed (%s), so its state (variables, imports, loaded data) is lost; this call started a fresh kernel."
	// noteStoreDown has the store's error.
	noteStoreDown = "The session store could not be used (%s): this call runs in a fresh kernel, which is closed, not kept in the store, when it ends."
)

// durableStarted is what durableStart found for a call's new kernel.
type durableStarted struct {
	k     engine.Kernel // resumed from the store; nil: none (start one)
	prior int           // the calls the resumed kernel had run
	took  time.Duration // its resume
	note  string        // why the state is lost, or the store not used
	// detached: the kernel the call starts or resumes is never written
	// to the store (the store failed, or holds an image this process
	// cannot open).
	detached bool
	settle   func() // ends the call's hold on the lease (leases.settle)
}

// durableStart prepares the start of key's kernel for call c, with a
// session store (else it does nothing): it waits for a suspension of the
// key's kernel under way, takes the session's lease (asking another
// executor that has it to hand it over), deletes the session's images for
// a reset, and resumes the kernel when the store holds it. The caller
// calls settle when the call ends, whatever the error.
func (e *Executor) durableStart(ctx context.Context, c *call, key kernelKey, req Request) (durableStarted, error) {
	d := durableStarted{settle: func() {}}
	if !key.suspendable() {
		if c.inherit {
			d.note = fmt.Sprintf(noteNotInherited, "this subagent's kernel is a native project-mode one: only the embedded interpreter's (strict, sandboxed project) can be copied")
		}
		return d, nil
	}
	var inherited string
	if c.inherit {
		inherited = e.inheritParent(ctx, req)
	}
	e.waitSuspension(ctx, key)
	detached, note, err := e.takeLease(ctx, key)
	if err != nil {
		return d, err
	}
	if detached {
		d.detached, d.note = true, note
		return d, nil
	}
	if e.leases != nil {
		d.settle = func() { e.leases.settle(key.session) }
	}
	if req.Reset {
		// Held now (handed over by any executor that had it): the
		// session's images go, and its kernel starts afresh.
		e.forgetImages(key.session)
	}
	d.k, d.prior, d.took, d.note, d.detached = e.resumeKernel(ctx, c, key)
	d.note = strings.TrimSpace(inherited + " " + d.note)
	return d, nil
}

// durableEnd is what a call's end does for its kernel en with a session
// store: with session_checkpoint: every_call, the image written (alive)
// or the last one dropped (ended).
func (e *Executor) durableEnd(en *kernelEntry, alive bool) {
	if alive {
		e.checkpoint(en)
	} else {
		e.dropCheckpoint(en)
	}
}

// takeLease takes the session's lease (lease.go) before its kernel starts
// or resumes. With the store failing, the call runs anyway, in a kernel
// detached from the store, and note says so; another executor running the
// session is an error.
func (e *Executor) takeLease(ctx context.Context, key kernelKey) (detached bool, note string, err error) {
	if e.leases == nil || !key.suspendable() {
		return false, "", nil
	}
	err = e.leases.acquire(ctx, key.session)
	switch {
	case err == nil:
		return false, "", nil
	case errors.Is(err, ErrSessionElsewhere) || ctx.Err() != nil:
		return false, "", err
	}
	e.sessions.storeFailures.Add(1)
	e.log.Log(context.Background(), slog.LevelWarn, "session store: no lease", "session", key.session, "error", err.Error())
	return true, fmt.Sprintf(noteStoreDown, err), nil
}

// dropCheckpoint removes en's last checkpoint (session_checkpoint:
// every_call) when en ended or changed past what it holds: a later call
// must start afresh, with the note of why, not resume an older state.
func (e *Executor) dropCheckpoint(en *kernelEntry) {
	if !e.everyCall || !en.key.suspendable() || en.detached || en.fenced {
		return
	}
	if _, err := e.images.Take(en.key.session, en.key.storeName()); err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
		e.log.Log(context.Background(), slog.LevelWarn, "session store: a checkpoint not removed", "session", en.key.session, "error", err.Error())
	}
}

// checkpoint writes en's image to the store after a call, with
// code_execution.session_checkpoint: every_call, so that a crash of this
// process loses at most the call in flight. en is pinned. A failure is
// logged and counted; the call's result stands.
func (e *Executor) checkpoint(en *kernelEntry) {
	if !e.everyCall || !en.key.suspendable() || en.detached || en.fenced {
		return
	}
	start := time.Now()
	image, err := e.putImage(en, e.strict.CopyKernel)
	if err != nil {
		level, refused := e.imageFailure(err)
		if refused {
			// An open directory, or past the cap: the last checkpoint
			// no longer describes the kernel, and must not come back.
			e.dropCheckpoint(en)
		}
		e.log.Log(context.Background(), level, "kernel not checkpointed", "session", en.key.session, "error", err.Error())
		return
	}
	e.sessions.checkpoints.Add(1)
	e.sessions.storedBytes.Add(uint64(len(image)))
	e.log.Log(context.Background(), slog.LevelDebug, "kernel checkpointed", "session", en.key.session, "bytes", len(image), "duration", time.Since(start))
}

// storeDir is code_execution.session_store when it is a dir (which the
// file tools and Landlock protect), "" when it is off or an object
// store's URL.
func storeDir(cfg config.Config) string {
	if spec := cfg.CodeExecution.SessionStore; !strings.Contains(spec, "://") {
		return spec
	}
	return ""
}

// openStore opens code_execution.session_store spec, with its cap, and
// its encryption when sessionstore.KeyEnv is set.
func (e *Executor) openStore(spec string) (*sessionstore.Guarded, error) {
	var key []byte
	if v := e.getenv(sessionstore.KeyEnv); v != "" {
		k, err := sessionstore.ParseKey(v)
		if err != nil {
			return nil, err
		}
		key = k
	}
	store, err := sessionstore.OpenSpec(context.Background(), spec)
	if err != nil {
		return nil, err
	}
	return sessionstore.Guard(store, key, int64(e.cfg.CodeExecution.SessionStoreMaxMB)<<20)
}

// storeName is the store's name of a kernel within its session.
func (k kernelKey) storeName() string {
	return strings.Join([]string{k.mode, k.interpreter, k.workdir, k.tools, k.backend}, "\x00")
}

// suspendable reports whether kernels of key can be suspended: those of
// the embedded interpreter, strict mode's and the sandboxed project
// mode's (interpreter "wasm+PYTHON": see sessionCall).
func (k kernelKey) suspendable() bool {
	return k.mode == config.ModeStrict && k.interpreter == "wasm" ||
		k.mode == config.ModeProject && strings.HasPrefix(k.interpreter, "wasm+")
}

// endKernel ends en, a kernel taken out of the table for why ("lru",
// "idle", "shutdown"): suspended into the store when there is one and en
// can be, else closed. It reports whether en was suspended.
func (e *Executor) endKernel(en *kernelEntry, why string) bool {
	defer e.sessions.suspendDone(en.key)
	if e.leases != nil {
		// Given up once the image is written (or the kernel closed): the
		// session may then resume anywhere.
		defer e.leases.release(en.key.session)
	}
	if !e.durable || !en.key.suspendable() || en.detached || en.fenced {
		en.k.Close()
		return false
	}
	start := time.Now()
	image, err := e.putImage(en, e.strict.SuspendKernel)
	if err != nil {
		level, _ := e.imageFailure(err)
		e.log.Log(context.Background(), level, "kernel not suspended", "session", en.key.session, "reason", why, "error", err.Error())
		en.k.Close()
		e.dropCheckpoint(en)
		return false
	}
	e.sessions.suspended.Add(1)
	e.sessions.storedBytes.Add(uint64(len(image)))
	e.log.Log(context.Background(), slog.LevelInfo, "kernel suspended", "session", en.key.session, "reason", why,
		"bytes", len(image), "duration", time.Since(start))
	return true
}

// resumeKernel resumes the kernel of key from the store (after
// waitSuspension and takeLease), when it holds one: the kernel, the calls
// it had run, and how long the resume took. With no image it returns a
// nil kernel and no note; with one that cannot resume (damaged, made by
// another build), a nil kernel and the note that says the state is lost.
// An image this process cannot use but another may (sealed with another
// key, or the store failing) is left in the store, and detach says the
// call's fresh kernel must not be written over it; one that an interrupt
// kept from resuming is put back.
func (e *Executor) resumeKernel(ctx context.Context, c *call, key kernelKey) (k engine.Kernel, prior int, took time.Duration, note string, detach bool) {
	if !key.suspendable() || ctx.Err() != nil {
		return nil, 0, 0, "", false
	}
	start := time.Now()
	data, err := e.images.Take(key.session, key.storeName())
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		return nil, 0, 0, "", false
	case err != nil:
		// Sealed with another key (sessionstore.Guarded put it back), or
		// the store failed: the image may resume elsewhere, or later.
		e.sessions.resumeFailures.Add(1)
		e.log.Log(context.Background(), slog.LevelWarn, "kernel not resumed", "session", key.session, "error", err.Error())
		return nil, 0, 0, fmt.Sprintf(noteStoreDown, err), true
	}
	if e.everyCall {
		// Kept until the next checkpoint replaces it: a crash before then
		// resumes from it again.
		err = e.images.Put(key.session, key.storeName(), data)
	}
	if err == nil {
		var image []byte
		if prior, image, err = unenvelope(data); err == nil {
			if err = e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB); err == nil {
				var project *strict.ProjectOptions
				if key.mode == config.ModeProject {
					opts := e.projectOptions(ctx, c)
					project = &opts
				}
				k, err = e.strict.ResumeKernel(ctx, e.kernelSpec(c), project, image, e.images.Base)
			}
		}
	}
	if err != nil && ctx.Err() != nil && !e.everyCall {
		// Interrupted, not refused: the image stays for the next call.
		if perr := e.images.Put(key.session, key.storeName(), data); perr != nil {
			e.log.Log(context.Background(), slog.LevelWarn, "session store: an image not put back", "session", key.session, "error", perr.Error())
		}
		return nil, 0, 0, "", false
	}
	if err != nil {
		e.sessions.resumeFailures.Add(1)
		e.log.Log(context.Background(), slog.LevelWarn, "kernel not resumed", "session", key.session, "error", err.Error())
		return nil, 0, 0, fmt.Sprintf(noteNotResumed, err), false
	}
	e.sessions.resumed.Add(1)
	took = time.Since(start)
	e.log.Log(context.Background(), slog.LevelInfo, "kernel resumed", "session", key.session, "duration", took)
	return k, prior, took, "", false
}

// putImage makes en's image with capture (the engine's SuspendKernel or
// CopyKernel) and stores it, with the snapshot it was made against, as
// en's; it returns the image.
func (e *Executor) putImage(en *kernelEntry, capture func(context.Context, engine.Kernel) ([]byte, string, error)) ([]byte, error) {
	image, base, err := capture(context.Background(), en.k)
	if err == nil {
		err = e.storeBase(base)
	}
	if err == nil {
		err = e.images.Put(en.key.session, en.key.storeName(), envelope(en.count, image))
	}
	return image, err
}

// imageFailure classes err, an image not written: refused (the kernel
// holds an open directory, or the image would pass
// session_store_max_mb), logged at info; else a store failure, counted
// and logged at warn.
func (e *Executor) imageFailure(err error) (level slog.Level, refused bool) {
	if errors.Is(err, strict.ErrNotSuspendable) || errors.Is(err, sessionstore.ErrTooLarge) {
		return slog.LevelInfo, true
	}
	e.sessions.storeFailures.Add(1)
	return slog.LevelWarn, false
}

// storeBase puts the snapshot whose sum is sum in the store, once per
// process: a process that resumes the image later may have made another.
func (e *Executor) storeBase(sum string) error {
	e.storedBases.Lock()
	defer e.storedBases.Unlock()
	if e.storedBases.sums[sum] {
		return nil
	}
	data, err := e.strict.EncodedSnapshot(sum)
	if err == nil {
		err = e.images.PutBase(sum, data)
	}
	if err != nil {
		return err
	}
	if e.storedBases.sums == nil {
		e.storedBases.sums = map[string]bool{}
	}
	e.storedBases.sums[sum] = true
	return nil
}

// suspendingFor is the channel of key's kernel being suspended, or nil.
func (t *sessionTable) suspendingFor(key kernelKey) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.suspending[key]
}

// suspendDone ends key's suspension: its image is stored, or it was
// closed.
func (t *sessionTable) suspendDone(key kernelKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.suspendDoneLocked(key)
}

// suspendDoneLocked is suspendDone with t.mu held.
func (t *sessionTable) suspendDoneLocked(key kernelKey) {
	if ch := t.suspending[key]; ch != nil {
		close(ch)
		delete(t.suspending, key)
	}
}

// forgetImages removes the suspended kernels of sessions from the store.
func (e *Executor) forgetImages(sessions ...string) {
	for _, s := range sessions {
		if err := e.images.Delete(s); err != nil {
			e.log.Log(context.Background(), slog.LevelWarn, "session store", "session", s, "error", err.Error())
		}
		if e.leases != nil {
			e.leases.release(s) // once no kernel of it lives here
		}
	}
}

// envelope is what the store holds for a kernel: the calls it had run, a
// newline, and its image.
func envelope(count int, image []byte) []byte {
	return append(strconv.AppendInt(nil, int64(count), 10), append([]byte{'\n'}, image...)...)
}

func unenvelope(data []byte) (count int, image []byte, err error) {
	head, image, ok := bytes.Cut(data, []byte{'\n'})
	if ok {
		count, err = strconv.Atoi(string(head))
	}
	if !ok || err != nil || count < 0 {
		return 0, nil, strict.ErrImageDamaged
	}
	return count, image, nil
}

// nonEmpty is [s], or nothing when s is "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// ForkSession starts session to from a copy of session from's state: each
// strict-mode kernel of from (live, or suspended in the session store) is
// copied, with its variables, imports and private files, and to's next
// call of the same mode, working dir and tool set resumes the copy
// (kernel.resumed); from goes on as it was, and the two then diverge. The
// copy's random module is seeded afresh. It runs in from's turn: after the
// calls of from that arrived before it. It returns how many kernels it
// copied (0 when from has none: to starts empty). It fails, copying
// nothing, when to has a live kernel, or when a kernel of from holds an
// open directory (strict.ErrNotSuspendable: close it in a call, then
// fork); open files are copied, and each kernel's is then its own.
// Without a session store the copies wait in memory for to's first call,
// until CloseSession(to).
func (e *Executor) ForkSession(ctx context.Context, from, to string) (int, error) {
	return e.forkSession(ctx, from, to, true)
}

// errParentBusy: a subagent's parent runs a call (InheritParent).
var errParentBusy = errors.New("a call runs in it")

// Notes of a subagent that asked for its parent's state (InheritParent).
const (
	noteInheritedNone = "The parent session has no kernel to copy: this subagent started with an empty kernel."
	// noteNotInherited has the reason.
	noteNotInherited = "The parent session's kernel could not be copied (%s): this subagent started with an empty kernel."
)

// inheritParent copies the parent's kernels into req's subagent session
// before its first call (Request.InheritParent), and returns the note of
// a copy that did not happen.
func (e *Executor) inheritParent(ctx context.Context, req Request) string {
	n, err := e.forkSession(ctx, req.ParentSession, req.Session, false)
	switch {
	case errors.Is(err, errParentBusy):
		return fmt.Sprintf(noteNotInherited, "a call runs in it, such as the one that started this subagent: copy it between its calls")
	case err != nil:
		return fmt.Sprintf(noteNotInherited, err)
	case n == 0 && e.sessions.hasKernels(req.ParentSession):
		return fmt.Sprintf(noteNotInherited, "it is a native project-mode kernel: only the embedded interpreter's (strict, sandboxed project) can be copied")
	case n == 0:
		return noteInheritedNone
	}
	return ""
}

// hasKernels reports whether session has a live kernel.
func (t *sessionTable) hasKernels(session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byName[session]
	return s != nil && len(s.kernels) > 0
}

// forkSession is ForkSession; without wait, it fails with errParentBusy
// rather than wait for from's turn.
func (e *Executor) forkSession(ctx context.Context, from, to string, wait bool) (int, error) {
	if from == "" || to == "" {
		return 0, ErrNoSession
	}
	if from == to {
		return 0, fmt.Errorf("fork_session: from and to are the same session (%q)", from)
	}
	t := e.sessions
	a, err := t.arrive(Request{Session: from})
	if err != nil {
		return 0, err
	}
	defer a.withdraw()
	if !wait {
		select {
		case <-a.place:
		default:
			return 0, errParentBusy
		}
	}
	_, end, _, err := t.takeTurn(ctx, from, a)
	if err != nil {
		return 0, err
	}
	defer end()
	// Pinned for the copy: no eviction or reaper takes them meanwhile.
	var live []*kernelEntry
	t.mu.Lock()
	if s := t.byName[to]; s != nil && len(s.kernels) > 0 {
		t.mu.Unlock()
		return 0, fmt.Errorf("fork_session: session %q has a kernel already: close it first (close_session) or fork into a new session", to)
	}
	if s := t.byName[from]; s != nil {
		for _, en := range s.kernels {
			if en.key.suspendable() && !en.running {
				en.running = true
				live = append(live, en)
			}
		}
	}
	t.mu.Unlock()
	defer func() {
		for _, en := range live {
			t.unpin(en)
		}
	}()
	type copied struct {
		name  string
		image []byte
	}
	var copies []copied
	for _, en := range live {
		image, base, err := e.strict.CopyKernel(ctx, en.k)
		if err == nil {
			err = e.storeBase(base)
		}
		if err != nil {
			return 0, fmt.Errorf("fork_session: copying session %q's kernel: %w", from, err)
		}
		copies = append(copies, copied{en.key.storeName(), envelope(en.count, image)})
	}
	// to has no kernel here (checked above): its images go, its lease
	// (none of this executor's) stays.
	if err := e.images.Delete(to); err != nil {
		return 0, err
	}
	n, err := e.images.Copy(from, to)
	if err != nil {
		return 0, err
	}
	for _, c := range copies {
		if err := e.images.Put(to, c.name, c.image); err != nil {
			return 0, err
		}
	}
	e.log.Log(context.Background(), slog.LevelInfo, "session forked", "from", from, "to", to, "kernels", n+len(copies))
	return n + len(copies), nil
}

// Suspended reports whether the session store holds a suspended kernel of
// session: the next call of session resumes it, here or in another
// process sharing the store (docs/service.md). It is false without a
// session store, and when the store cannot say.
func (e *Executor) Suspended(session string) bool {
	if !e.durable || session == "" {
		return false
	}
	n, err := e.images.SessionBytes(session, "")
	return err == nil && n > 0
}

// handOff suspends session's idle strict kernels, asked by another
// executor sharing the store that has the session's calls now (lease.go):
// it resumes them once this one has released the lease. A kernel running
// a call is left; the other asks again.
func (e *Executor) handOff(session string) {
	ks := e.sessions
	ks.mu.Lock()
	var out []*kernelEntry
	if s := ks.byName[session]; s != nil {
		for k, en := range s.kernels {
			if !en.running && en.key.suspendable() && !en.detached {
				delete(s.kernels, k)
				ks.markSuspendingLocked(en)
				out = append(out, en)
			}
		}
	}
	if len(out) > 0 {
		ks.grantLocked()
	}
	ks.mu.Unlock()
	for _, en := range out {
		e.endKernel(en, "handoff")
	}
}

// fence ends this executor's part in session, whose lease another took
// (this process was stopped or cut off from the store past the lease):
// its idle kernels are closed, not suspended (their state is older than
// the new holder's), and one running a call is marked fenced, so that it
// is closed when the call ends and its next call takes the lease again.
func (e *Executor) fence(session string) {
	ks := e.sessions
	ks.mu.Lock()
	var idle []*kernelEntry
	if s := ks.byName[session]; s != nil {
		for k, en := range s.kernels {
			if !en.key.suspendable() {
				continue
			}
			en.fenced = true
			if !en.running {
				delete(s.kernels, k)
				idle = append(idle, en)
			}
		}
	}
	if len(idle) > 0 {
		ks.grantLocked()
	}
	ks.mu.Unlock()
	for _, en := range idle {
		e.log.Log(context.Background(), slog.LevelWarn, "kernel fenced: the session's lease was lost", "session", session)
		en.k.Close()
	}
}

// waitSuspension waits while key's kernel is being suspended (evicted by
// another session's call, reaped, or handed over), so that the call then
// looks for its image, and takes the lease, after the suspension is done.
func (e *Executor) waitSuspension(ctx context.Context, key kernelKey) {
	if ch := e.sessions.suspendingFor(key); ch != nil {
		e.sessions.suspendWaits.Add(1)
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}
