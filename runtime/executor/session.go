package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/hostfuncs"
	"github.com/hermes-agent/hermes-wasm-exec/internal/approval"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// Sessions (docs/behaviour.md §7). Calls naming one Request.Session share a
// session: they run one at a time, in arrival order, in the session's
// persistent kernels; calls of different sessions run concurrently. This
// file is what a session is and does; kernels.go starts its kernels.

// session is everything the executor holds for one session name. It lives
// in the executor's session table (sessionTable.byName) from its first
// use until CloseSession, which drops it whole. Every field is guarded by
// the table's mu, except what turn and grants guard themselves.
type session struct {
	name string
	// turn orders the session's calls, and interrupts the one holding it.
	turn *turn
	// kernels are the session's live kernels, by what each is reused for
	// (mode, interpreter, working dir, tool set, backend).
	kernels map[kernelKey]*kernelEntry
	// gone says why the executor closed a kernel of the session (evicted,
	// or idle too long), for the note of the next kernel started for its
	// key; at most maxGoneNotes in the whole table, the oldest dropped.
	gone map[kernelKey]goneNote
	// backend is the session's own remote backend (docker: a container
	// per session); nil with the local backend, and with ssh and exec,
	// which every session shares (sessionTable.sharedBackend).
	backend *backendEntry
	// grants are the session's session-scoped approvals.
	grants *approval.SessionGrants
	// skillEnv are the skill variables registered for the session
	// (RegisterSessionSkillEnv, Request.SkillEnv).
	skillEnv []string
	// parent is the session this one is a subagent of, as its calls say
	// (Request.ParentSession); "" for a top-level session.
	parent string
	// delegates are the tools each client runs itself for the session
	// (OpenSession), by SessionOptions.Client.
	delegates map[string]SessionOptions
	// closed is set when CloseSession takes the session out of the table:
	// a kernel evicted from it before and given back after is closed,
	// not put back.
	closed bool
}

// turn is a session's queue: calls hold it one at a time, in the order
// their places were reserved, from before their approval to their result.
type turn struct {
	fifo
	// interrupt cancels the call holding the turn (nil: none); guarded by
	// the table's mu.
	interrupt context.CancelCauseFunc
}

// kernelEntry is one live kernel.
type kernelEntry struct {
	owner    *session // the session whose kernels map holds (or held) it
	key      kernelKey
	parent   string // the parent session of a subagent's kernel; "" for top level
	k        engine.Kernel
	count    int
	lastUsed time.Time
	// running is true while a call holds the kernel (pin to unpin): no
	// eviction or idle reaper closes it then.
	running bool
}

// sessionTable is an executor's sessions, and what their kernels share:
// the slots of max_session_kernels, the idle reaper, the warm pools and
// the backend every session uses (ssh, exec).
type sessionTable struct {
	mu     sync.Mutex
	byName map[string]*session
	// unnamed are the session-scoped approvals of calls without a session,
	// which share them as if they were one session.
	unnamed  *approval.SessionGrants
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
	// sharedBackend is the ssh or exec backend every session uses, and the
	// docker one of calls without a session.
	sharedBackend *backendEntry
	// evictions counts the kernels closed to make room (LRU) or for being
	// idle (the reaper): Stats.
	evictions atomic.Uint64

	// The slots of code_execution.max_session_kernels: every top-level
	// kernel of a session holds one, and so does every call starting one
	// (starting); subagents' kernels hold none. Their sum never exceeds
	// max. A call that finds them all held evicts the least recently used
	// idle kernel, or, when every kernel runs a call, waits in slotWait
	// (first come, first served) until one goes idle or is closed.
	max      int
	starting int
	slotWait []*slotWaiter
	// goneNotes counts the sessions' gone notes (maxGoneNotes at most).
	goneNotes int
}

// slotWaiter is a call waiting for a kernel slot.
type slotWaiter struct {
	granted chan struct{} // closed when the slot is the call's
	victim  *kernelEntry  // the idle kernel evicted for it, which the call closes
}

// goneNote is why a kernel was closed, and when.
type goneNote struct {
	note string
	at   time.Time
}

// maxGoneNotes bounds the gone notes of all sessions: the notes of
// sessions that never call again are dropped, oldest first.
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

// newSessionTable returns an empty table with room for maxKernels
// top-level kernels (below 1: 1, as config clamps it).
func newSessionTable(maxKernels int) *sessionTable {
	return &sessionTable{
		byName:   map[string]*session{},
		unnamed:  &approval.SessionGrants{},
		stopReap: make(chan struct{}),
		max:      max(maxKernels, 1),
	}
}

// unnamedGrants are the approvals of calls without a session.
func (t *sessionTable) unnamedGrants() *approval.SessionGrants {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unnamed
}

// sessionLocked returns session name, made on first use. t.mu is held.
func (t *sessionTable) sessionLocked(name string) *session {
	s := t.byName[name]
	if s == nil {
		s = &session{name: name, turn: &turn{}, kernels: map[kernelKey]*kernelEntry{}, gone: map[kernelKey]goneNote{},
			grants: &approval.SessionGrants{Session: name}}
		t.byName[name] = s
	}
	return s
}

// --- Delegation: the tools a session's client runs itself ---

// SessionOptions is what a front end registers on a session with
// [Executor.OpenSession]: the tools one of its clients runs itself.
type SessionOptions struct {
	// Client names the client (a connection) the options are for: they
	// apply to the session's calls whose Request.Client is the same.
	Client string
	// Delegate lists the tools Client runs itself for the session (some
	// of the seven, hostfuncs.Names): the scripts' calls of them go to
	// Run instead of running here. Empty ends Client's delegation.
	Delegate []string
	// Run runs a delegated tool call; required when Delegate is not empty.
	Run DelegateFunc
}

// DelegateFunc runs a script's call of a delegated tool and returns the
// tool's result object, as a [ToolHandler] does (failures are results
// with an "error" key). ctx ends with the script's run.
type DelegateFunc func(ctx context.Context, call DelegatedCall) map[string]any

// DelegatedCall is a script's call of a tool its client runs itself.
type DelegatedCall struct {
	// Session is the session of the script.
	Session string
	// Tool is the tool's name, and Args the JSON object of its arguments.
	Tool string
	Args json.RawMessage
	// Tag is the Request.Tag of the call whose script made it (serve: the
	// execute request's id).
	Tag any
}

// OpenSession registers opts on session: calls of the session made after
// it with Request.Client set to opts.Client send their calls of the tools
// in opts.Delegate to opts.Run. A later OpenSession of the same client
// replaces them; an empty Delegate ends them, as do
// [Executor.ForgetClient] and [Executor.CloseSession]. Calls that
// already arrived keep the delegation in effect when they did.
func (e *Executor) OpenSession(session string, opts SessionOptions) error {
	if session == "" {
		return errors.New("no session given: name the session to open")
	}
	for _, name := range opts.Delegate {
		if !slices.Contains(hostfuncs.Names, name) {
			return fmt.Errorf("delegated tool %q: scripts can call only the seven tools %v", name, hostfuncs.Names)
		}
	}
	if len(opts.Delegate) > 0 && opts.Run == nil {
		return errors.New("SessionOptions.Run is nil: give the function that runs the delegated tools")
	}
	t := e.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	s := t.sessionLocked(session)
	if len(opts.Delegate) == 0 {
		delete(s.delegates, opts.Client)
		return nil
	}
	if s.delegates == nil {
		s.delegates = map[string]SessionOptions{}
	}
	opts.Delegate = slices.Clone(opts.Delegate)
	s.delegates[opts.Client] = opts
	return nil
}

// DelegatedTools returns the tools client runs itself for session
// ([Executor.OpenSession]); nil when none.
func (e *Executor) DelegatedTools(session, client string) []string {
	t := e.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byName[session]; s != nil {
		return slices.Clone(s.delegates[client].Delegate)
	}
	return nil
}

// ForgetClient ends every delegation of client ([Executor.OpenSession]),
// as when its connection has gone away.
func (e *Executor) ForgetClient(client string) {
	t := e.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.byName {
		delete(s.delegates, client)
	}
}

// arrival is a session call as it arrived: its place in the session's
// turn, and the tool handlers its client's delegation gave it then.
type arrival struct {
	turn     *turn
	place    chan struct{} // nil once the turn was taken or given up
	delegate map[string]ToolHandler
}

// arrive reserves req's place in its session's turn and takes the
// delegation in effect for its client.
func (t *sessionTable) arrive(req Request) (*arrival, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	s := t.sessionLocked(req.Session)
	a := &arrival{turn: s.turn, place: s.turn.reserve()}
	if d, ok := s.delegates[req.Client]; ok && req.ToolHandlers == nil {
		a.delegate = make(map[string]ToolHandler, len(d.Delegate))
		for _, tool := range d.Delegate {
			a.delegate[tool] = func(ctx context.Context, args json.RawMessage) map[string]any {
				return d.Run(ctx, DelegatedCall{Session: req.Session, Tool: tool, Args: args, Tag: req.Tag})
			}
		}
	}
	return a, nil
}

// withdraw gives a's place up if its turn was not taken (nil: nothing).
func (a *arrival) withdraw() {
	if a != nil && a.place != nil {
		a.turn.withdraw(a.place)
		a.place = nil
	}
}

// --- A session call, top to bottom ---

// sessionExecute runs req in its session; a call without one has neither
// turn nor kernel. It registers what the request says of its session,
// takes what the call needs from it (the delegation of its client, its
// backend: sessionParts), prepares the call (call.go), waits for the
// session's turn, asks for approval, and runs the script in the session's
// kernel, or, without a session, in a fresh interpreter.
func (e *Executor) sessionExecute(ctx context.Context, req Request, m requestMode, a *arrival) (Result, error) {
	if req.Session != "" {
		if a == nil {
			var err error
			if a, err = e.sessions.arrive(req); err != nil {
				return failed(m.mode, err), err
			}
			defer a.withdraw() // given back unless the turn was taken
		}
		e.registerRequest(req)
	}
	if !m.known {
		e.log.Log(context.Background(), slog.LevelWarn, "unknown mode, falling back to strict", "mode", m.asked)
	}
	parts, err := e.sessionParts(ctx, req, a)
	if err != nil {
		return failed(m.mode, err), err
	}
	c, res, err := e.prepare(ctx, req, m, parts)
	if c == nil {
		return res, err
	}
	turnCtx, end, grants, err := e.sessions.takeTurn(ctx, req.Session, a)
	if errors.Is(err, ErrClosed) {
		return failed(c.mode, err), err
	}
	if err != nil {
		return e.interruptedBeforeStart(ctx, c)
	}
	defer end()
	c.grants = grants
	if blocked := e.approvals.Script(turnCtx, policyApprover(c.approver), grants, c.kind, req.Code); blocked != "" {
		return blockedResult(c.mode, blocked), nil
	}
	if req.Session != "" {
		return e.sessionCall(turnCtx, c, req)
	}
	res, err = e.oneShot(turnCtx, c, req.Code)
	return e.finish(c, res, err)
}

// sessionParts is what a call takes from its session before it is
// prepared.
type sessionParts struct {
	// delegate are the tools the session's client runs itself, as the
	// call arrived.
	delegate map[string]ToolHandler
	// backend is the remote backend the tools act in, and where a
	// project-mode script runs; nil for this host.
	backend backend.Backend
}

// sessionParts finds (or makes) the backend of req's session and takes the
// delegation its arrival a carried (nil a: a call without a session).
func (e *Executor) sessionParts(ctx context.Context, req Request, a *arrival) (sessionParts, error) {
	var p sessionParts
	if a != nil {
		p.delegate = a.delegate
	}
	be, err := e.remoteBackend(ctx, req.Session)
	if err != nil {
		return p, fmt.Errorf("terminal.backend %s: %w", e.cfg.Terminal.Backend, err)
	}
	p.backend = be
	return p, nil
}

// registerRequest records what req says of its session before the call
// builds its environment: a subagent's parent, so that closing the parent
// closes the subagent too, even when it has no live kernel, and the skill
// variables of Request.SkillEnv, which its later calls keep.
func (e *Executor) registerRequest(req Request) {
	if req.ParentSession != "" {
		t := e.sessions
		t.mu.Lock()
		t.sessionLocked(req.Session).parent = req.ParentSession
		t.mu.Unlock()
	}
	if len(req.SkillEnv) > 0 {
		_, _ = e.RegisterSessionSkillEnv(req.Session, req.SkillEnv...)
	}
}

// takeTurn waits for the turn of session at a's place and returns the
// turn's context, which Interrupt cancels, the function that ends the
// turn, and the session's approvals; a call without a session (nil a) has
// no turn to wait for and takes the approvals of the calls without one. Calls of one session hold their turn
// one at a time, in the order their places were reserved, from before
// their approval to their result.
func (t *sessionTable) takeTurn(ctx context.Context, session string, a *arrival) (context.Context, func(), *approval.SessionGrants, error) {
	if a == nil {
		return ctx, func() {}, t.unnamedGrants(), nil
	}
	place := a.place
	a.place = nil // taken, or given up
	if err := a.turn.wait(ctx, place); err != nil {
		return nil, nil, nil, err
	}
	turnCtx, cancel := context.WithCancelCause(ctx)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		cancel(nil)
		a.turn.unlock()
		return nil, nil, nil, ErrClosed
	}
	a.turn.interrupt = cancel
	// The session's approvals as of now: a CloseSession between the
	// arrival and the turn dropped the session's earlier ones.
	grants := t.sessionLocked(session).grants
	t.mu.Unlock()
	return turnCtx, func() {
		t.mu.Lock()
		a.turn.interrupt = nil
		t.mu.Unlock()
		cancel(nil)
		a.turn.unlock()
	}, grants, nil
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
				e.log.Log(context.Background(), slog.LevelWarn, "no kernel slot", "session", req.Session, "max_session_kernels", ks.max, "timeout", c.timeout, "waited", waited)
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

// --- Interrupt and close ---

// Interrupt stops the call holding session's turn, if any. A running
// script ends with status "interrupted" and `[execution interrupted —
// <reason>]` (reason "" means the default, "user sent a new message"), and
// the session's kernel is killed; a call still waiting for its approval is
// blocked, one waiting for a kernel (max_session_kernels) or for its
// interpreter to start ends interrupted. It reports whether a call held
// the turn.
func (e *Executor) Interrupt(session, reason string) bool {
	t := e.sessions
	t.mu.Lock()
	var cancel context.CancelCauseFunc
	if s := t.byName[session]; s != nil {
		cancel = s.turn.interrupt
	}
	t.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(&InterruptError{Reason: reason})
	return true
}

// CloseSession closes session and its subagents (the sessions whose calls
// named it as their parent): it interrupts the calls holding their turns,
// closes their kernels and their backends (a docker container, kept when
// container_persistent), and drops everything else the executor held for
// them: session-scoped approvals, skill variables
// (RegisterSessionSkillEnv), delegations (OpenSession) and the notes of
// closed kernels. Calls that already wait for a turn keep their order and
// run afterwards in a fresh session.
func (e *Executor) CloseSession(ctx context.Context, session string) {
	// Taken out of the table first, with what they hold read under its
	// lock; then the calls that held their turns then are interrupted
	// (not one that takes a turn afterwards), then the kernels closed: a
	// call that takes a turn after the detach finds no kernel to be closed
	// under it and starts a fresh one.
	closing := e.sessions.detach(session)
	for _, interrupt := range closing.interrupts {
		interrupt(&InterruptError{Reason: "the session was closed"})
	}
	for _, en := range closing.kernels {
		en.k.Close()
	}
	for _, be := range closing.backends {
		be.close()
	}
}

// detached is what detach took out of the table: the interrupts of the
// calls holding the sessions' turns, their kernels and their backends.
type detached struct {
	interrupts []context.CancelCauseFunc
	kernels    []*kernelEntry
	backends   []*backendEntry
}

// detach removes session and its subagents from the table and returns
// what they held. A session whose turn is held or awaited leaves a fresh
// session in its place with only that turn, so that the calls in it keep
// their order and Interrupt still reaches the one holding it.
func (t *sessionTable) detach(name string) detached {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.detachLocked(name)
}

// detachLocked is detach with t.mu held.
func (t *sessionTable) detachLocked(name string) detached {
	var out detached
	if name == "" {
		t.unnamed = &approval.SessionGrants{}
		return out
	}
	var closing []*session
	for _, s := range t.byName {
		if s.name == name || s.parent == name || s.hasSubagentKernelOf(name) {
			closing = append(closing, s)
		}
	}
	for _, s := range closing {
		s.closed = true
		delete(t.byName, s.name)
		t.goneNotes -= len(s.gone)
		if s.turn.interrupt != nil {
			out.interrupts = append(out.interrupts, s.turn.interrupt)
		}
		out.kernels = append(out.kernels, slices.Collect(maps.Values(s.kernels))...)
		if s.backend != nil {
			out.backends = append(out.backends, s.backend)
		}
		if s.turn.busy() {
			t.byName[s.name] = &session{name: s.name, turn: s.turn, kernels: map[kernelKey]*kernelEntry{}, gone: map[kernelKey]goneNote{},
				grants: &approval.SessionGrants{Session: s.name}}
		}
	}
	if len(closing) > 0 {
		t.grantLocked()
	}
	return out
}

// hasSubagentKernelOf reports whether s holds a kernel of a subagent of
// parent.
func (s *session) hasSubagentKernelOf(parent string) bool {
	for _, en := range s.kernels {
		if en.parent == parent {
			return true
		}
	}
	return false
}

// closeEvicted closes victim, an idle kernel that reserveSlot evicted to
// make room (nil: none).
func (e *Executor) closeEvicted(victim *kernelEntry) {
	if victim == nil {
		return
	}
	max := e.sessions.max
	e.log.Log(context.Background(), slog.LevelInfo, "kernel evicted", "session", victim.key.session, "mode", victim.key.mode, "reason", "lru", "max_session_kernels", max)
	victim.k.Close()
}

// startReaper starts the idle reaper once.
func (e *Executor) startReaper() {
	ks := e.sessions
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
	ks := e.sessions
	note := fmt.Sprintf(noteIdle, engine.Seconds(idle))
	for _, en := range ks.take(func(en *kernelEntry) bool { return !en.running && now.Sub(en.lastUsed) >= idle }, note) {
		ks.evictions.Add(1)
		e.log.Log(context.Background(), slog.LevelInfo, "idle kernel closed", "session", en.key.session, "mode", en.key.mode, "kernel_idle_timeout", idle)
		en.k.Close()
	}
}

// --- Kernels of the sessions, and their slots ---

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
	en.count = 1
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

// noteGoneLocked records, on its session, why en was closed. ks.mu is
// held.
func (ks *sessionTable) noteGoneLocked(en *kernelEntry, note string) {
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

// closeAll interrupts running calls, closes every kernel, the pools and
// then the backends, and waits for the reaper and for replaced pools to
// finish closing.
func (ks *sessionTable) closeAll() {
	ks.mu.Lock()
	if ks.closed {
		ks.mu.Unlock()
		return
	}
	ks.closed = true
	close(ks.stopReap)
	var entries []*kernelEntry
	backends := []*backendEntry{ks.sharedBackend}
	for _, s := range ks.byName {
		if s.turn.interrupt != nil {
			s.turn.interrupt(&InterruptError{Reason: shutdownReason})
		}
		entries = append(entries, slices.Collect(maps.Values(s.kernels))...)
		clear(s.kernels)
		backends = append(backends, s.backend)
		s.backend = nil
	}
	ks.sharedBackend = nil
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
	for _, be := range backends {
		if be != nil {
			wg.Go(be.close)
		}
	}
	wg.Wait()
}

// fifo is a lock granted in arrival order.
type fifo struct {
	mu      sync.Mutex
	held    bool
	waiters []chan struct{}
}

// busy reports whether a call holds the lock or waits for it.
func (f *fifo) busy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
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

// remoteBackend returns the backend of session's calls, making it on first
// use; nil for the local backend. A failed start is not remembered: the
// next call tries again.
func (e *Executor) remoteBackend(ctx context.Context, session string) (backend.Backend, error) {
	kind := e.cfg.Terminal.Backend
	if kind == "" || kind == config.BackendLocal {
		return nil, nil
	}
	t := e.sessions
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	// Where the entry lives: the session's own for docker, else shared.
	slot := &t.sharedBackend
	if kind == config.BackendDocker && session != "" {
		slot = &t.sessionLocked(session).backend
	}
	en := *slot
	if en == nil {
		en = &backendEntry{ready: make(chan struct{})}
		*slot = en
		t.mu.Unlock()
		en.be, en.err = e.newBackend(context.WithoutCancel(ctx), session)
		t.mu.Lock()
		if en.err != nil && *slot == en {
			*slot = nil
		} else if en.err == nil && t.closed {
			en.be.Close()
			en.be, en.err = nil, ErrClosed
		}
		close(en.ready)
	}
	t.mu.Unlock()
	select {
	case <-en.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return en.be, en.err
}

// RegisterSessionSkillEnv adds environment variables that a skill declares
// (see [SkillEnvFromMarkdown], [ParseSkillFile]) for one session: they
// pass through the env layer for calls of that session, and of its
// subagents (Request.ParentSession), exactly like the names in
// terminal.env_passthrough, in both modes. Other sessions do not see them;
// [Executor.RegisterSkillEnv] registers names for every session.
// [Executor.CloseSession] forgets them.
//
// As with RegisterSkillEnv, host-managed credentials and invalid names are
// not added: they are returned in refused and logged as a warning event.
// A session kernel that is already running keeps the environment it was
// started with: its scripts see the new variables after a reset
// (Request.Reset), as in Hermes; terminal() commands see them at once. With
// an empty session nothing is registered and err is [ErrNoSession]. It is
// safe for concurrent use.
func (e *Executor) RegisterSessionSkillEnv(session string, names ...string) (refused []string, err error) {
	if session == "" {
		return nil, ErrNoSession
	}
	ok, refused := e.screenSkillNames(session, names)
	var added []string
	t := e.sessions
	t.mu.Lock()
	s := t.sessionLocked(session)
	for _, n := range ok {
		if !slices.Contains(s.skillEnv, n) && !slices.Contains(added, n) {
			added = append(added, n)
		}
	}
	s.skillEnv = append(slices.Clone(s.skillEnv), added...)
	t.mu.Unlock()
	if len(added) > 0 {
		e.log.Log(context.Background(), slog.LevelInfo, "skill environment variables registered", "names", added, "session", session)
	}
	return refused, nil
}

// SessionSkillEnv returns the variables registered for session with
// [Executor.RegisterSessionSkillEnv] (not those registered executor-wide).
func (e *Executor) SessionSkillEnv(session string) []string {
	t := e.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byName[session]; s != nil {
		return slices.Clone(s.skillEnv)
	}
	return nil
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
