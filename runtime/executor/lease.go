package executor

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
)

// One writer per session (code_execution.session_lease): an executor with
// a session store holds a session's lease in the store while it has the
// session's strict kernel alive, renews it every third of the lease, and
// releases it when the kernel is suspended, closed, or the executor shuts
// down. Another executor sharing the store (a replica of `mcp --http`, a
// restarted `serve`) that gets a call of the session takes the lease over
// once it has lapsed, or at once when its holder is a process of this
// machine that has exited, and then resumes the session's image; a live
// holder is asked to hand the session over (inbox), and does once no call
// runs in it. A holder whose renewal finds the lease taken is fenced: its
// kernels of the session are closed and never written to the store.

// ErrSessionElsewhere: another executor holds the session's lease.
var ErrSessionElsewhere = errors.New("the session is running on another executor")

// leases are the session leases an executor holds.
type leases struct {
	store sessionstore.Store
	owner string // host/pid/nonce
	ttl   time.Duration
	log   *slog.Logger
	// live reports whether the executor has a strict kernel of the session
	// alive.
	live func(session string) bool
	// handOff suspends the session's idle kernels (the executor's
	// handOff), asked by another executor that has its calls now.
	handOff func(session string)
	// wait waits until until (sleepUntil; tests replace it), and patience
	// bounds how long acquire waits for a live holder (0: until the end of
	// the holder's lease as first seen).
	wait     func(ctx context.Context, until time.Time) error
	patience time.Duration

	// ttlImages is code_execution.session_ttl (0: images never expire);
	// lastSweep when the store was last swept of older images.
	ttlImages time.Duration
	lastSweep time.Time

	// fence closes the session's kernels after the lease was lost (the
	// executor's fence).
	fence func(session string)

	mu   sync.Mutex
	held map[string]time.Time // session: when last taken or used
	// starting counts, by session, the calls between the lease's taking
	// and the end of the call (a kernel resuming or starting is not live
	// yet): their leases are neither released nor left to lapse.
	starting map[string]int
	stop     chan struct{}
	stopped  bool
	done     sync.WaitGroup
}

// ownersHere are the lease owners of this process's executors: a lease of
// this host and pid whose owner is not here was left by an earlier
// process that had the same pid (a container restarted).
var ownersHere sync.Map

// newLeases returns the lease keeper of an executor whose store is store:
// leases last ttl; images expire after imageTTL (0: never), swept now and
// every sweepEvery.
func newLeases(store sessionstore.Store, ttl, imageTTL time.Duration, log *slog.Logger, live func(string) bool, handOff, fence func(string)) *leases {
	nonce := make([]byte, 6)
	rand.Read(nonce)
	l := &leases{store: store, ttl: ttl, log: log, live: live, handOff: handOff, fence: fence, wait: sleepUntil, held: map[string]time.Time{}, stop: make(chan struct{}),
		owner: fmt.Sprintf("%s/%s/%d/%s", hostName(), machineID(), os.Getpid(), hex.EncodeToString(nonce))}
	ownersHere.Store(l.owner, true)
	l.ttlImages, l.lastSweep = imageTTL, time.Now()
	l.done.Add(2)
	go l.renew()
	go l.inbox()
	if imageTTL > 0 {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			l.sweepNow()
		}()
	}
	return l
}

// acquire takes session's lease for a call about to start or resume its
// kernel, and counts the call (settle ends it). A holder known gone is
// replaced at once; a live one is asked to hand the session over, every
// handoffPoll, until the end of its lease as first seen (or patience, or
// ctx's end): one that keeps a call running past that still runs the
// session, and acquire returns ErrSessionElsewhere saying so; one that
// stopped renewing has lapsed then. Other errors are the store's.
func (l *leases) acquire(ctx context.Context, session string) error {
	l.mu.Lock()
	if _, ok := l.held[session]; ok {
		l.held[session] = time.Now()
		l.startingLocked(session)
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	replace := ""
	var deadline time.Time
	for {
		holder, err := l.store.Acquire(session, l.owner, time.Now().Add(l.ttl), replace)
		if err == nil {
			l.mu.Lock()
			l.held[session] = time.Now()
			l.startingLocked(session)
			l.mu.Unlock()
			if replace != "" {
				l.log.Log(context.Background(), slog.LevelInfo, "session taken over", "session", session, "from", replace)
			}
			return nil
		}
		if !errors.Is(err, sessionstore.ErrLeased) {
			return err
		}
		if holderGone(holder.Owner) && replace != holder.Owner {
			replace = holder.Owner
			continue
		}
		if deadline.IsZero() {
			// Waited for at most until the holder's lease ends: one that
			// stopped renewing (its process died, or hangs) has lapsed then.
			deadline = holder.Until
			if l.patience > 0 {
				deadline = earliest(deadline, time.Now().Add(l.patience))
			}
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: session %q is held by %s, whose lease (code_execution.session_lease) runs until %s and which did not hand it over (a call of the session runs there); send the session's calls to one executor (session affinity), or retry once that call has ended",
				ErrSessionElsewhere, session, holder.Owner, holder.Until.UTC().Format(time.RFC3339))
		}
		// A live holder hands the session over once no call runs in it:
		// the session goes where its calls go (a proxy that moved it).
		if err := l.store.AskHandoff(holder.Owner, session); err != nil {
			l.log.Log(context.Background(), slog.LevelWarn, "session handoff not asked", "session", session, "error", err.Error())
		}
		if err := l.wait(ctx, earliest(deadline, time.Now().Add(handoffPoll))); err != nil {
			return err
		}
	}
}

// handoffPoll is how often an executor reads its handoff requests, and
// how often one waiting for a handoff tries the lease again.
const handoffPoll = 250 * time.Millisecond

// inbox hands over, every handoffPoll, the sessions other executors asked
// for.
func (l *leases) inbox() {
	defer l.done.Done()
	t := time.NewTicker(handoffPoll)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		holding := len(l.held) > 0
		l.mu.Unlock()
		if !holding {
			continue // nothing to hand over: no listing of the store
		}
		asked, err := l.store.Asked(l.owner)
		if err != nil {
			l.log.Log(context.Background(), slog.LevelWarn, "session handoff requests not read", "error", err.Error())
			continue
		}
		for _, s := range asked {
			if l.owns(s) {
				l.log.Log(context.Background(), slog.LevelInfo, "session handed over", "session", s)
				l.handOff(s)
			}
		}
	}
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// sleepUntil waits until a little past until, or ctx's end.
func sleepUntil(ctx context.Context, until time.Time) error {
	t := time.NewTimer(max(time.Until(until)+50*time.Millisecond, 0))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// startingLocked counts a call of session that took the lease (acquire),
// until its settle. l.mu is held.
func (l *leases) startingLocked(session string) {
	if l.starting == nil {
		l.starting = map[string]int{}
	}
	l.starting[session]++
}

// settle ends what acquire counted for one call of session.
func (l *leases) settle(session string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.starting[session]--; l.starting[session] <= 0 {
		delete(l.starting, session)
	}
}

// inUseLocked reports whether session's lease is needed: a call holds it,
// or a kernel of the session lives. l.mu is held.
func (l *leases) inUseLocked(session string) bool {
	return l.starting[session] > 0 || l.live(session)
}

// release gives up session's lease, when the executor holds it, no call
// of the session runs and no kernel of it lives.
func (l *leases) release(session string) {
	l.mu.Lock()
	_, ok := l.held[session]
	if ok && l.inUseLocked(session) {
		l.mu.Unlock()
		return
	}
	delete(l.held, session)
	l.mu.Unlock()
	if ok {
		if err := l.store.Release(session, l.owner); err != nil {
			l.log.Log(context.Background(), slog.LevelWarn, "session lease not released", "session", session, "error", err.Error())
		}
	}
}

// forget drops session's lease without touching the store (its Delete
// removed it).
func (l *leases) forget(session string) {
	l.mu.Lock()
	delete(l.held, session)
	l.mu.Unlock()
}

// renew renews, every third of the lease, the leases of sessions with a
// kernel alive, and releases the others (a call that took the lease but
// started no kernel).
func (l *leases) renew() {
	defer l.done.Done()
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		var keep, drop []string
		for s, used := range l.held {
			if l.inUseLocked(s) || time.Since(used) < l.ttl/3 {
				keep = append(keep, s)
			} else {
				drop = append(drop, s)
			}
		}
		l.mu.Unlock()
		for _, s := range keep {
			if _, err := l.store.Acquire(s, l.owner, time.Now().Add(l.ttl), ""); err != nil {
				// Lost (this process was stopped past the lease, and
				// another took the session) or the store failed: the
				// next renewal tries again; a taken lease is not ours,
				// and neither is the session: its kernels here are
				// fenced (closed, never written to the store).
				l.log.Log(context.Background(), slog.LevelWarn, "session lease not renewed", "session", s, "error", err.Error())
				if errors.Is(err, sessionstore.ErrLeased) {
					l.forget(s)
					l.fence(s)
				}
			}
		}
		for _, s := range drop {
			l.release(s)
		}
		if l.ttlImages > 0 && time.Since(l.lastSweep) >= sweepEvery {
			// Apart: a long listing must not hold up the renewals.
			l.lastSweep = time.Now()
			l.done.Add(1)
			go func() {
				defer l.done.Done()
				l.sweepNow()
			}()
		}
	}
}

// sweepEvery is how often the store is swept of expired images.
const sweepEvery = time.Hour

// sweepNow removes the images not written for code_execution.session_ttl.
func (l *leases) sweepNow() {
	n, err := l.store.Sweep(time.Now().Add(-l.ttlImages))
	if err != nil {
		l.log.Log(context.Background(), slog.LevelWarn, "session store sweep", "error", err.Error())
	} else if n > 0 {
		l.log.Log(context.Background(), slog.LevelInfo, "expired session images removed", "images", n, "session_ttl", l.ttlImages)
	}
}

// owns reports whether the executor holds session's lease.
func (l *leases) owns(session string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.held[session]
	return ok
}

// close stops the renewals and releases every lease held.
func (l *leases) close() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	close(l.stop)
	sessions := make([]string, 0, len(l.held))
	for s := range l.held {
		sessions = append(sessions, s)
	}
	clear(l.held)
	l.mu.Unlock()
	l.done.Wait()
	for _, s := range sessions {
		if err := l.store.Release(s, l.owner); err != nil {
			l.log.Log(context.Background(), slog.LevelWarn, "session lease not released", "session", s, "error", err.Error())
		}
	}
	ownersHere.Delete(l.owner)
}

// holderGone reports whether owner (host/machine/pid/nonce) is a process
// of this machine known to have exited: its pid is not running, or is
// this process, whose executors do not include owner. The machine is
// the host name with, on Linux, the boot and the pid namespace: two
// containers named alike (host networking), or two boots, are not one
// machine, and their pids say nothing of each other.
func holderGone(owner string) bool {
	rest, nonce, ok := cutLast(owner, "/")
	rest, pidText, ok2 := cutLast(rest, "/")
	host, machine, ok3 := cutLast(rest, "/")
	pid, err := strconv.Atoi(pidText)
	if !ok || !ok2 || !ok3 || nonce == "" || err != nil || pid <= 0 {
		return false
	}
	if host != hostName() || machine != machineID() {
		return false
	}
	if pid == os.Getpid() {
		_, here := ownersHere.Load(owner)
		return !here
	}
	return !proctree.Running(pid)
}

// hostName is the host's name, as an owner names it.
func hostName() string {
	host, _ := os.Hostname()
	return strings.ReplaceAll(host, "/", "_")
}

// machineID tells this boot and pid namespace apart from others of the
// same host name (Linux); "-" elsewhere.
var machineID = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "-"
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "-"
	}
	sum := sha256.Sum256(append(bytes.TrimSpace(boot), ns...))
	return hex.EncodeToString(sum[:6])
})

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
