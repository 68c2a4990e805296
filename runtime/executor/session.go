package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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
// file is what a session is and does: its table, its turn, what a call
// takes from it, closing it; kernels.go runs calls in its kernels.

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
	// ran is set when the session's first call takes its turn
	// (Request.InheritParent copies the parent's kernel before that call
	// only).
	ran bool
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
	owner  *session // the session whose kernels map holds (or held) it
	key    kernelKey
	parent string // the parent session of a subagent's kernel; "" for top level
	k      engine.Kernel
	count  int
	// prior is how many calls a resumed kernel had run before it was
	// suspended.
	prior    int
	lastUsed time.Time
	// running is true while a call holds the kernel (pin to unpin): no
	// eviction or idle reaper closes it then.
	running bool
	// detached: the session store could not give the session's lease when
	// the kernel started, so it is closed, never suspended or
	// checkpointed. fenced: the lease was lost since (another executor
	// took the session): the same, and its next call takes the lease
	// again rather than run in it.
	detached, fenced bool
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
	// suspended, resumed and resumeFailures count the kernels suspended
	// into the session store, resumed from it, and whose image did not
	// resume (durable.go).
	suspended, resumed, resumeFailures atomic.Uint64
	// checkpoints and storeFailures: Stats.
	checkpoints, storeFailures, storedBytes atomic.Uint64
	// end ends a kernel that closeAll finds idle: the executor's endKernel
	// (suspended when it can be), else closed.
	end func(en *kernelEntry, why string)
	// suspends reports whether a kernel of the key that the executor ends
	// (evicted, idle) is suspended rather than closed; suspending holds,
	// from its removal to its image's being stored, a channel closed then
	// (durable.go). nil: none are.
	suspends   func(kernelKey) bool
	suspending map[kernelKey]chan struct{}
	// suspendWaits counts the calls that waited for their kernel's
	// suspension to end.
	suspendWaits atomic.Int64

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
		t.dropIfEmptyLocked(s)
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
		t.dropIfEmptyLocked(s)
	}
}

// dropIfEmptyLocked takes s out of the table when it holds nothing that
// its absence would not give back (a session is made on first use): no
// call waits for or holds its turn, it has no kernel, gone-note, backend,
// approval, skill variable, parent or delegation. t.mu is held.
func (t *sessionTable) dropIfEmptyLocked(s *session) {
	if len(s.kernels) == 0 && len(s.gone) == 0 && s.backend == nil && s.grants.Empty() && len(s.skillEnv) == 0 &&
		s.parent == "" && len(s.delegates) == 0 && s.turn.interrupt == nil && !s.turn.busy() {
		delete(t.byName, s.name)
	}
}

// arrival is a session call as it arrived: its place in the session's
// turn, and the tool handlers its client's delegation gave it then.
type arrival struct {
	turn     *turn
	place    chan struct{} // nil once the turn was taken or given up
	delegate map[string]ToolHandler
	// session is the session as the turn was taken (takeTurn): a
	// CloseSession between the arrival and the turn replaced it.
	session *session
}

// arrive reserves req's place in its session's turn, records a subagent's
// parent and takes the delegation in effect for its client.
func (t *sessionTable) arrive(req Request) (*arrival, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	s := t.sessionLocked(req.Session)
	if req.ParentSession != "" {
		// Recorded on arrival, so that closing the parent closes the
		// subagent too, even before it has a kernel.
		s.parent = req.ParentSession
	}
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

// sessionExecute runs req in its session; a call without one has no turn
// to wait for and no kernel. It takes the session's turn (registering a
// subagent's parent and the delegation of its client on arrival), then
// what the call takes from its session (sessionParts: its approvals,
// delegated tools, backend and skill variables), and hands the call to
// call.go, which prepares it, asks for its approval and runs it in the
// session's kernel or a fresh interpreter (kernels.go).
func (e *Executor) sessionExecute(ctx context.Context, req Request, m requestMode, a *arrival) (Result, error) {
	if req.Session != "" && a == nil {
		var err error
		if a, err = e.sessions.arrive(req); err != nil {
			return failed(m.mode, err), err
		}
		defer a.withdraw() // given back unless the turn was taken
	}
	turnCtx, end, grants, err := e.sessions.takeTurn(ctx, req.Session, a)
	if errors.Is(err, ErrClosed) {
		return failed(m.mode, err), err
	}
	if err != nil {
		return interruptedBeforeStart(ctx, m.mode)
	}
	defer end()
	parts, err := e.sessionParts(turnCtx, req, a, grants)
	if err != nil {
		return failed(m.mode, err), err
	}
	return e.runCall(turnCtx, req, m, parts)
}

// firstCall reports whether a, whose turn has started, is its session's
// first call, and marks the session as having run one.
func (t *sessionTable) firstCall(a *arrival) bool {
	if a == nil || a.session == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	first := !a.session.ran
	a.session.ran = true
	return first
}

// sessionParts is what a call takes from its session, as its turn starts.
type sessionParts struct {
	// grants are the session's approvals (those of the calls without a
	// session for one without).
	grants *approval.SessionGrants
	// delegate are the tools the session's client runs itself, as the
	// call arrived.
	delegate map[string]ToolHandler
	// backend is the remote backend the tools act in, and where a
	// project-mode script runs; nil for this host.
	backend backend.Backend
	// skillEnv are the skill variables the call passes through: its
	// session's and its parent's, or a call's own without a session.
	skillEnv []string
	// subagent: the call is a subagent's (Request.ParentSession);
	// inherit: its session's first, which starts from a copy of the
	// parent's kernel (Request.InheritParent).
	subagent, inherit bool
}

// sessionParts finds (or makes) the backend of req's session, takes the
// delegation its arrival a carried (nil a: a call without a session), and
// registers the skill variables req names.
func (e *Executor) sessionParts(ctx context.Context, req Request, a *arrival, grants *approval.SessionGrants) (sessionParts, error) {
	p := sessionParts{grants: grants, subagent: req.ParentSession != ""}
	// A subagent's first call may start from its parent's kernel
	// (Request.InheritParent; durableStart copies it).
	p.inherit = e.sessions.firstCall(a) && req.InheritParent && req.ParentSession != ""
	var s *session
	if a != nil {
		p.delegate, s = a.delegate, a.session
	}
	be, err := e.remoteBackend(ctx, req.Session)
	if err != nil {
		return p, fmt.Errorf("terminal.backend %s: %w", e.cfg.Terminal.Backend, err)
	}
	p.backend = be
	p.skillEnv = e.callSkillEnv(req, s)
	// A reset starts the session afresh, not from a suspended kernel:
	// durableStart deletes its images (with a session store, once the
	// call holds the session's lease).
	return p, nil
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
	// The session as of now: a CloseSession between the arrival and the
	// turn dropped its earlier approvals and skill variables.
	a.session = t.sessionLocked(session)
	grants := a.session.grants
	t.mu.Unlock()
	return turnCtx, func() {
		t.mu.Lock()
		a.turn.interrupt = nil
		t.mu.Unlock()
		cancel(nil)
		a.turn.unlock()
	}, grants, nil
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
	e.closeSession(session, true)
}

// ReleaseSession is CloseSession for a front end that may have lost track
// of where the session runs (an `mcp --http` replica whose MCP session
// moved to another replica, which took its kernel over from the session
// store): it closes the session here, and deletes its images from the
// store only when this executor runs the session's kernel (holds its
// lease, lease.go). Otherwise they stay for the executor that resumes
// them, or until code_execution.session_ttl. Without a session store it
// is CloseSession.
func (e *Executor) ReleaseSession(ctx context.Context, session string) {
	e.closeSession(session, e.leases == nil || e.leases.owns(session))
}

// closeSession is CloseSession; forget says whether the session's images
// go too.
func (e *Executor) closeSession(session string, forget bool) {
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
	// A session suspended before a restart has no entry: its name is
	// enough.
	if forget {
		e.forgetImages(append(closing.names, session)...)
	}
}

// detached is what detach took out of the table: the interrupts of the
// calls holding the sessions' turns, their kernels and their backends.
type detached struct {
	names      []string // the sessions, the one named and its subagents
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
		out.names = append(out.names, s.name)
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
		e.endKernel(en, "idle")
	}
}

// hasLive reports whether session has a kernel alive that the session
// store keeps (a strict one).
func (ks *sessionTable) hasLive(session string) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if s := ks.byName[session]; s != nil {
		for _, en := range s.kernels {
			if en.key.suspendable() && !en.detached {
				return true
			}
		}
	}
	return false
}

// --- Shutdown, and the turn's lock ---

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
	var entries, idle []*kernelEntry
	backends := []*backendEntry{ks.sharedBackend}
	for _, s := range ks.byName {
		if s.turn.interrupt != nil {
			s.turn.interrupt(&InterruptError{Reason: shutdownReason})
		}
		for _, en := range s.kernels {
			if en.running || ks.end == nil {
				entries = append(entries, en)
			} else {
				idle = append(idle, en)
			}
		}
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
	for _, en := range idle {
		wg.Go(func() { ks.end(en, "shutdown") })
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
