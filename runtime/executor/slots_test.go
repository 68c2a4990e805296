package executor

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/approval"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// fakeKernel is a kernel that runs nothing: the tests below look only at
// who closes it.
type fakeKernel struct{ closed, dead atomic.Bool }

func (k *fakeKernel) Run(context.Context, *engine.Job) (engine.Outcome, error) {
	return engine.Outcome{}, nil
}
func (k *fakeKernel) Alive() bool  { return !k.dead.Load() && !k.closed.Load() }
func (k *fakeKernel) Close() error { k.closed.Store(true); return nil }

// started is what sessionCall does for a session with no kernel: a slot,
// then the kernel, added pinned. It returns the entry and the kernel
// evicted for it.
func started(t *testing.T, ks *sessionTable, session, parent string) (*kernelEntry, *kernelEntry) {
	t.Helper()
	var victim *kernelEntry
	if parent == "" {
		var err error
		victim, _, err = ks.reserveSlot(context.Background(), time.Minute)
		require.NoError(t, err)
	}
	en := &kernelEntry{key: kernelKey{session: session}, parent: parent, k: &fakeKernel{}}
	require.True(t, ks.add(en))
	return en, victim
}

// entry is the kernel for key in ks, if any.
func entry(ks *sessionTable, key kernelKey) *kernelEntry {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.entryLocked(key)
}

func closed(en *kernelEntry) bool { return en.k.(*fakeKernel).closed.Load() }

// waiting waits until n calls wait for a slot (a loop on the condition,
// with a generous deadline: the goroutines get there when scheduled).
func waiting(t *testing.T, ks *sessionTable, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ks.mu.Lock()
		defer ks.mu.Unlock()
		return len(ks.slotWait) == n
	}, 30*time.Second, time.Millisecond)
}

type slotResult struct {
	victim *kernelEntry
	err    error
}

// reserveAsync is reserveSlot in a goroutine.
func reserveAsync(ctx context.Context, ks *sessionTable, limit time.Duration) <-chan slotResult {
	ch := make(chan slotResult, 1)
	go func() {
		v, _, err := ks.reserveSlot(ctx, limit)
		ch <- slotResult{v, err}
	}()
	return ch
}

// A kernel pinned by its call is never closed by the idle reaper or by
// another session's eviction, however old; unpinned, it is the victim.
// (Before, a kernel was found or published idle and marked running a
// step later, and another session's eviction closed it in between.)
func TestKernelPin(t *testing.T) {
	e := &Executor{sessions: newSessionTable(1), log: slog.New(slog.DiscardHandler)}
	ks := e.sessions
	a, victim := started(t, ks, "a", "")
	require.Nil(t, victim, "a free slot")
	ks.unpin(a)
	require.Same(t, a, ks.pin(a.key), "found and pinned in one step")
	require.Equal(t, 2, a.count)

	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	require.False(t, closed(a), "the reaper skips a pinned kernel")
	require.Same(t, a, entry(ks, a.key))

	b := reserveAsync(context.Background(), ks, time.Minute)
	waiting(t, ks, 1) // every slot is held by a running call
	require.False(t, closed(a), "no eviction of a pinned kernel")
	require.Equal(t, 1, e.Stats().Waiting)

	ks.unpin(a) // idle: the waiting call evicts it
	got := <-b
	require.NoError(t, got.err)
	require.Same(t, a, got.victim, "handed to the waiting call, which closes it")
	require.Nil(t, entry(ks, a.key))
	require.Equal(t, uint64(1), ks.evictions.Load())
	bk := &kernelEntry{key: kernelKey{session: "b"}, k: &fakeKernel{}}
	require.True(t, ks.add(bk))

	// The session whose kernel was evicted is told why, once.
	require.Contains(t, ks.startNote(a.key), "max_session_kernels is 1")
	require.Empty(t, ks.startNote(a.key))

	// Idle, it is reaped, with a note for the session's next kernel.
	ks.unpin(bk)
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	require.True(t, closed(bk))
	require.Contains(t, ks.startNote(bk.key), "after 1s idle")
}

// A kernel that died while idle is dropped when its session's next call
// pins it, and its slot goes to the call waiting for one.
func TestKernelPinDead(t *testing.T) {
	ks := newSessionTable(1)
	a, _ := started(t, ks, "a", "")
	other := reserveAsync(context.Background(), ks, time.Minute)
	waiting(t, ks, 1)
	a.k.(*fakeKernel).dead.Store(true)
	require.Nil(t, ks.pin(a.key))
	require.True(t, closed(a))
	got := <-other
	require.NoError(t, got.err)
	require.Nil(t, got.victim, "the dead kernel's slot was freed, nothing evicted")
}

// Calls waiting for a slot get one in the order they came.
func TestKernelSlotsFIFO(t *testing.T) {
	ks := newSessionTable(1)
	cur, _ := started(t, ks, "first", "")
	var waiters []<-chan slotResult
	for i := range 3 {
		waiters = append(waiters, reserveAsync(context.Background(), ks, time.Minute))
		waiting(t, ks, i+1)
	}
	for i, w := range waiters {
		ks.unpin(cur)
		got := <-w
		require.NoError(t, got.err, "waiter %d", i)
		require.Same(t, cur, got.victim, "waiter %d", i)
		for _, later := range waiters[i+1:] {
			select {
			case <-later:
				t.Fatalf("a later waiter got a slot before waiter %d", i)
			default:
			}
		}
		cur = &kernelEntry{key: kernelKey{session: "next"}, k: &fakeKernel{}}
		require.True(t, ks.add(cur))
	}
}

// The wait for a slot ends with the call's context (an interrupt), with
// closeAll, or after its limit; a subagent's kernel holds no slot and is
// never evicted.
func TestKernelSlotWaitEnds(t *testing.T) {
	ks := newSessionTable(1)
	a, _ := started(t, ks, "a", "")
	sub, _ := started(t, ks, "sub", "a")
	ks.unpin(sub) // idle, and older than anything: still not a victim

	ctx, cancel := context.WithCancel(context.Background())
	w := reserveAsync(ctx, ks, time.Minute)
	waiting(t, ks, 1)
	cancel()
	require.ErrorIs(t, (<-w).err, context.Canceled)
	waiting(t, ks, 0)

	_, waited, err := ks.reserveSlot(context.Background(), 50*time.Millisecond)
	require.ErrorIs(t, err, errNoSlot)
	require.GreaterOrEqual(t, waited, 50*time.Millisecond)
	require.False(t, closed(sub))
	require.False(t, closed(a))

	w = reserveAsync(context.Background(), ks, time.Minute)
	waiting(t, ks, 1)
	ks.closeAll()
	require.ErrorIs(t, (<-w).err, ErrClosed)
	require.True(t, closed(a), "closeAll closes running kernels too (their calls are interrupted)")
}

// idleAndInterrupt makes a idle (the first waiter is granted its slot,
// evicting a) and interrupts that waiter's call with cancel, under the lock,
// so that the waiter sees both at once.
func idleAndInterrupt(ks *sessionTable, a *kernelEntry, cancel context.CancelFunc) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	a.running = false
	ks.grantLocked()
	cancel()
}

// TestSlotGivenBackKeepsTheVictim: a call granted a slot at the moment
// its wait is interrupted does not take the slot, and the idle kernel
// evicted for it is not closed: its session keeps its state (before, the
// interrupted call closed it all the same). The slot goes on to the next
// waiter.
func TestSlotGivenBackKeepsTheVictim(t *testing.T) {
	ks := newSessionTable(1)
	a, _ := started(t, ks, "a", "")
	ctx, cancel := context.WithCancel(context.Background())
	b := reserveAsync(ctx, ks, time.Minute)
	waiting(t, ks, 1)
	c := reserveAsync(context.Background(), ks, time.Minute)
	waiting(t, ks, 2)

	idleAndInterrupt(ks, a, cancel)

	rb := <-b
	require.ErrorIs(t, rb.err, context.Canceled)
	require.Nil(t, rb.victim, "nothing for the interrupted call to close")
	rc := <-c
	require.NoError(t, rc.err)
	require.Same(t, a, rc.victim, "the next waiter got the slot, evicting a")
	require.Equal(t, uint64(1), ks.evictions.Load(), "one eviction, not two")
}

// TestSlotGivenBackToAClosedSession: the idle kernel evicted for a call
// whose wait is interrupted goes back to its session only if that session
// is still open; once CloseSession took the session away, the kernel is
// handed back to be closed (before, it was put in a new session of the
// same name, which kept the closed session's state).
func TestSlotGivenBackToAClosedSession(t *testing.T) {
	ks := newSessionTable(1)
	a, _ := started(t, ks, "a", "")
	ctx, cancel := context.WithCancel(context.Background())
	b := reserveAsync(ctx, ks, time.Minute)
	waiting(t, ks, 1)

	ks.mu.Lock()
	a.running = false
	ks.grantLocked() // b gets the slot, evicting a
	cancel()         // and is interrupted at the same moment
	got := ks.detachLocked("a")
	ks.mu.Unlock()
	require.Empty(t, got.kernels, "a's kernel was already evicted")

	rb := <-b
	require.ErrorIs(t, rb.err, context.Canceled)
	require.Same(t, a, rb.victim, "handed back to be closed")
	require.Nil(t, entry(ks, a.key))
	ks.mu.Lock()
	defer ks.mu.Unlock()
	require.NotContains(t, ks.byName, "a")
	require.Zero(t, ks.starting)
}

// TestSlotGivenBackWithoutWaiterKeepsTheKernel: with no one else waiting,
// the kernel evicted for an interrupted call stays in the set.
func TestSlotGivenBackWithoutWaiterKeepsTheKernel(t *testing.T) {
	ks := newSessionTable(1)
	a, _ := started(t, ks, "a", "")
	ctx, cancel := context.WithCancel(context.Background())
	b := reserveAsync(ctx, ks, time.Minute)
	waiting(t, ks, 1)
	idleAndInterrupt(ks, a, cancel)
	rb := <-b
	require.ErrorIs(t, rb.err, context.Canceled)
	require.Nil(t, rb.victim)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	require.Same(t, a, ks.entryLocked(a.key), "a's kernel is still there")
	require.Zero(t, ks.evictions.Load())
	require.NotContains(t, ks.byName["a"].gone, a.key)
	require.Zero(t, ks.starting)
}

// TestSessionClosedLeavesNothing: the executor holds one entry per session,
// with everything of it (kernels, backend, approvals, skill variables,
// subagent links, delegations), and CloseSession leaves nothing of the
// session nor of its subagents behind; other sessions keep theirs.
func TestSessionClosedLeavesNothing(t *testing.T) {
	e := New(Options{HermesHome: t.TempDir(), Environ: []string{}})
	defer e.Close(context.Background())
	ks := e.sessions
	run := func(context.Context, DelegatedCall) map[string]any { return nil }
	for _, s := range []string{"a", "b"} {
		require.NoError(t, e.OpenSession(s, SessionOptions{Client: "c1", Delegate: []string{"terminal"}, Run: run}))
		_, err := e.RegisterSessionSkillEnv(s, "SKILL_TOKEN")
		require.NoError(t, err)
	}
	recordArrival(t, e, Request{Session: "a-sub", ParentSession: "a", SkillEnv: []string{"SUB_TOKEN"}})
	a, _ := started(t, ks, "a", "")
	sub, _ := started(t, ks, "a-sub", "a")
	b, _ := started(t, ks, "b", "")
	// A session-scoped approval of a's scripts.
	asked := 0
	ap := ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) {
		asked++
		return Decision{Approved: true, Scope: config.ScopeSession}, nil
	})
	grants := func(s string) *approval.SessionGrants {
		ks.mu.Lock()
		defer ks.mu.Unlock()
		return ks.sessionLocked(s).grants
	}
	require.Empty(t, e.approvals.Script(context.Background(), policyApprover(ap), grants("a"), config.KindGateway, "1"))
	require.Empty(t, e.approvals.Script(context.Background(), policyApprover(ap), grants("a"), config.KindGateway, "2"))
	require.Equal(t, 1, asked)
	// The subagent's own approval and delegation.
	require.Empty(t, e.approvals.Script(context.Background(), policyApprover(ap), grants("a-sub"), config.KindGateway, "1"))
	require.Equal(t, 2, asked)
	require.NoError(t, e.OpenSession("a-sub", SessionOptions{Client: "c1", Delegate: []string{"web_search"}, Run: run}))
	ks.mu.Lock()
	ks.byName["a"].backend = &backendEntry{ready: make(chan struct{})}
	close(ks.byName["a"].backend.ready)
	ks.noteGoneLocked(&kernelEntry{key: kernelKey{session: "a", mode: "project"}}, "evicted")
	require.Len(t, ks.byName, 3, "one entry per session")
	ks.mu.Unlock()
	require.Equal(t, []string{"terminal"}, e.DelegatedTools("a", "c1"))

	e.CloseSession(context.Background(), "a")

	ks.mu.Lock()
	require.Equal(t, []string{"b"}, mapKeys(ks.byName), "nothing of a nor of its subagent")
	require.Equal(t, 0, len(ks.byName["b"].gone))
	require.Equal(t, 0, ks.goneNotes)
	ks.mu.Unlock()
	require.True(t, closed(a) && closed(sub), "their kernels are closed")
	require.False(t, closed(b))
	require.Nil(t, entry(ks, a.key))
	require.Empty(t, e.SessionSkillEnv("a"))
	require.Empty(t, e.SessionSkillEnv("a-sub"))
	require.Empty(t, e.DelegatedTools("a", "c1"))
	require.Equal(t, []string{"SKILL_TOKEN"}, e.SessionSkillEnv("b"))
	require.Equal(t, []string{"terminal"}, e.DelegatedTools("b", "c1"))
	require.Equal(t, 1, e.Stats().Kernels)

	require.Empty(t, e.DelegatedTools("a-sub", "c1"))
	// Sessions of the same names start without their approvals.
	require.Empty(t, e.approvals.Script(context.Background(), policyApprover(ap), grants("a"), config.KindGateway, "3"))
	require.Equal(t, 3, asked, "asked again")
	require.Empty(t, e.approvals.Script(context.Background(), policyApprover(ap), grants("a-sub"), config.KindGateway, "3"))
	require.Equal(t, 4, asked, "the subagent is asked again too")
	e.CloseSession(context.Background(), "a")
	e.CloseSession(context.Background(), "a-sub")

	// A client that goes away takes its delegations with it, and a session
	// that held nothing else goes with them.
	require.NoError(t, e.OpenSession("d", SessionOptions{Client: "c1", Delegate: []string{"terminal"}, Run: run}))
	require.NoError(t, e.OpenSession("e", SessionOptions{Client: "c1"}))
	e.ForgetClient("c1")
	require.Empty(t, e.DelegatedTools("b", "c1"))
	ks.mu.Lock()
	require.Equal(t, []string{"b"}, mapKeys(ks.byName), "b keeps its kernel; d and e held nothing")
	ks.mu.Unlock()
}

// mapKeys is m's keys, sorted.
func mapKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
