package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
)

// durableExecutor is a strict-mode executor with a session store and room
// for max kernels.
func durableExecutor(t testing.TB, store string, max int, opts ...func(*config.Config, *Options)) *Executor {
	t.Helper()
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	cfg.CodeExecution.MaxSessionKernels = max
	cfg.CodeExecution.SessionStore = store
	level := slog.LevelInfo
	if _, bench := t.(*testing.B); bench {
		level = slog.LevelWarn // a benchmark's thousands of events would weigh on what it measures
	}
	o := Options{HermesHome: t.TempDir(), Environ: []string{}, Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: level}))}
	for _, f := range opts {
		f(&cfg, &o)
	}
	o.Config = &cfg
	e := New(o)
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// testLog writes an executor's log to its test's.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// blockingTool gives the executor a web_extract that closes started
// when a script calls it, then waits for release (or the call's end):
// a call held running, for as long as a test needs.
func blockingTool() (opt func(*config.Config, *Options), started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	opt = func(_ *config.Config, o *Options) {
		o.Tools = map[string]ToolHandler{"web_extract": func(ctx context.Context, _ json.RawMessage) map[string]any {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return map[string]any{"results": []any{}}
		}}
	}
	return opt, started, release
}

// shortLease sets code_execution.session_lease to its minimum.
func shortLease(c *config.Config, _ *Options) { c.CodeExecution.SessionLease = config.MinSessionLease }

// everyCall sets code_execution.session_checkpoint: every_call.
func everyCall(c *config.Config, _ *Options) {
	c.CodeExecution.SessionCheckpoint = config.CheckpointEveryCall
}

// withEnv sets the executor's environment.
func withEnv(env ...string) func(*config.Config, *Options) {
	return func(_ *config.Config, o *Options) { o.Environ = env }
}

// storeImages counts the images in the store at root.
func storeImages(t testing.TB, root string) int {
	t.Helper()
	dir, err := sessionstore.Open(root)
	require.NoError(t, err)
	n, _, err := dir.Usage()
	require.NoError(t, err)
	return n
}

// okCall runs req on e and requires it to succeed.
func okCall(t testing.TB, e *Executor, req Request) Result {
	t.Helper()
	res, err := e.Execute(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	return res
}

// With one kernel for eight sessions, every call evicts another session's
// kernel: each is suspended, and resumed at its session's next call, which
// finds its state.
func TestDurableKernelsAtTheLimit(t *testing.T) {
	sessions, calls := 8, 20
	if testing.Short() {
		sessions, calls = 4, 5
	}
	e := durableExecutor(t, t.TempDir(), 1)
	wd := t.TempDir()
	for i := range calls {
		for s := range sessions {
			res, err := e.Execute(context.Background(), Request{Session: fmt.Sprint("s", s), Workdir: wd,
				Code: fmt.Sprintf("n = globals().get('n', 0) + 1\nprint(n, %d)", s)})
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("%d %d\n", i+1, s), res.Output, "session %d, call %d", s, i)
			require.Equal(t, i+1, res.Kernel.ExecutionCount)
			if i > 0 && sessions > 1 {
				require.True(t, res.Kernel.Resumed, "session %d, call %d: %+v", s, i, res.Kernel)
				require.Empty(t, res.Kernel.Note)
			}
		}
	}
	st := e.Stats()
	require.Equal(t, 1, st.Kernels)
	require.EqualValues(t, (calls-1)*sessions, st.Resumed)
}

// The idle timeout and Close suspend a kernel too: a new executor on the
// same store (a restart) resumes it. CloseSession and a reset drop the
// image.
func TestDurableKernelsIdleAndRestart(t *testing.T) {
	store := t.TempDir()
	wd := t.TempDir()
	e := durableExecutor(t, store, 4)
	okCall(t, e, Request{Session: "a", Workdir: wd, Code: "x = 'kept'\nopen('f.txt', 'w').write('file kept')"})
	okCall(t, e, Request{Session: "b", Workdir: wd, Code: "y = 2"})
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	require.Zero(t, e.Stats().Kernels)
	res := okCall(t, e, Request{Session: "a", Workdir: wd, Code: "print(x, open('f.txt').read())"})
	require.Equal(t, "kept file kept\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Equal(t, 2, res.Kernel.ExecutionCount)

	require.NoError(t, e.Close(context.Background()))
	dir, err := sessionstore.Open(store)
	require.NoError(t, err)
	n, _, err := dir.Usage()
	require.NoError(t, err)
	require.Equal(t, 2, n, "a suspended at Close, b still suspended")

	e2 := durableExecutor(t, store, 4)
	res = okCall(t, e2, Request{Session: "a", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "kept\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Equal(t, 3, res.Kernel.ExecutionCount)

	e2.CloseSession(context.Background(), "b")
	res = okCall(t, e2, Request{Session: "b", Workdir: wd, Code: "print('y' in globals())"})
	require.Equal(t, "False\n", res.Output, "closed: its image is gone")
	e2.reapIdle(time.Now().Add(time.Hour), time.Second)
	res = okCall(t, e2, Request{Session: "a", Workdir: wd, Code: "print('x' in globals())", Reset: true})
	require.Equal(t, "False\n", res.Output, "reset: a fresh kernel, not the image")
	require.False(t, res.Kernel.Resumed)
}

// A kernel that holds an open directory (an os.scandir iterator) is
// closed, not suspended, and its next call says its state is lost.
func TestDurableKernelNotSuspendable(t *testing.T) {
	e := durableExecutor(t, t.TempDir(), 1)
	wd := t.TempDir()
	okCall(t, e, Request{Session: "a", Workdir: wd, Code: "import os\nit = os.scandir('.')"})
	okCall(t, e, Request{Session: "b", Workdir: wd, Code: "pass"})
	res, err := e.Execute(context.Background(), Request{Session: "a", Workdir: wd, Code: "print('it' in globals())"})
	require.NoError(t, err)
	require.Equal(t, "False\n", res.Output)
	require.False(t, res.Kernel.Resumed)
	require.Contains(t, res.Kernel.Note, "closed to make room")
}

// Open files and an sqlite3 connection survive a suspension into the
// store and a restart: the new process's kernel goes on writing and
// querying them.
func TestDurableOpenFiles(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e := durableExecutor(t, store, 4)
	okCall(t, e, Request{Session: "s", Workdir: wd, Code: "import sqlite3\ndb = sqlite3.connect('app.db')\ndb.execute('create table t(x)')\nlog = open('log.txt', 'w')\nlog.write('first ')"})
	require.NoError(t, e.Close(context.Background()))
	e = durableExecutor(t, store, 4)
	res := okCall(t, e, Request{Session: "s", Workdir: wd, Code: "db.execute('insert into t values (1)'); db.commit()\nlog.write('second'); log.close()\nprint(open('log.txt').read(), db.execute('select count(*) from t').fetchone()[0])"})
	require.Equal(t, "first second 1\n", res.Output)
	require.True(t, res.Kernel.Resumed)
}

// The file tools never write the session store: it holds every session's
// kernels.
func TestDurableStoreProtected(t *testing.T) {
	store := t.TempDir()
	e := durableExecutor(t, store, 1)
	res, err := e.Execute(context.Background(), Request{Workdir: t.TempDir(), Code: fmt.Sprintf(
		"from hermes_tools import write_file\nprint(write_file(%q, 'x'))", store+"/planted.img")})
	require.NoError(t, err)
	require.Contains(t, res.Output, "error")
	require.NoFileExists(t, store+"/planted.img")

	// Nor reads or lists it: a session's image holds its data.
	wd := t.TempDir()
	okCall(t, e, Request{Session: "victim", Workdir: wd, Code: "secret = 'x' * 10"})
	okCall(t, e, Request{Session: "other", Workdir: wd, Code: "pass"}) // evicts victim: suspended
	require.Equal(t, 1, storeImages(t, store))
	images, _ := filepath.Glob(filepath.Join(store, "*", "*.img"))
	res = okCall(t, e, Request{Workdir: wd, Code: fmt.Sprintf(`from hermes_tools import read_file, search_files
print(read_file(%q).get("error"))
print(search_files("img", path=%q, target="files"))`, images[0], store)})
	lines := strings.Split(res.Output, "\n")
	require.Contains(t, lines[0], "is in the session store")
	// (The error's path in Python's repr: backslashes doubled on Windows.)
	require.True(t, strings.HasPrefix(lines[1], "{'error': \"Access denied: "), lines[1])
	require.Contains(t, lines[1], "is the session store, which holds every session's suspended kernels, and cannot be listed or searched")
}

// A restarted process makes its interpreter snapshot again, and a
// snapshot differs from one making to the next: the store keeps the one
// its images were made against, and the new process resumes them on it.
func TestDurableKernelsAcrossSnapshots(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e := durableExecutor(t, store, 1)
	res := okCall(t, e, Request{Session: "a", Workdir: wd, Code: "x = 41"})
	require.NoError(t, e.Close(context.Background()))

	// The new process, with a cache of its own: it compiles the
	// interpreter and makes its snapshot again.
	private := t.TempDir()
	t.Setenv(config.CacheDirEnv, private)
	e2 := durableExecutor(t, store, 1)
	res, err := e2.Execute(context.Background(), Request{Session: "a", Workdir: wd, Code: "print(x + 1)"})
	require.NoError(t, err)
	require.Equal(t, "42\n", res.Output, "%+v", res.Kernel)
	require.True(t, res.Kernel.Resumed)
	snaps, err := filepath.Glob(filepath.Join(private, "snapshot-*"))
	require.NoError(t, err)
	require.Len(t, snaps, 1, "the new process made its own snapshot")
}

// A call whose kernel is being suspended (another session's call evicted
// it, or the reaper ended it, and its image is not stored yet) waits for
// the image rather than start afresh.
func TestDurableKernelResumeWaitsForSuspension(t *testing.T) {
	e := durableExecutor(t, t.TempDir(), 2)
	wd := t.TempDir()
	res := okCall(t, e, Request{Session: "a", Workdir: wd, Code: "x = 'kept'"})

	// Taken out as an eviction takes it: its suspension has begun.
	ks := e.sessions
	ks.mu.Lock()
	var en *kernelEntry
	for key, k := range ks.byName["a"].kernels {
		en = k
		delete(ks.byName["a"].kernels, key)
	}
	ks.noteGoneLocked(en, fmt.Sprintf(noteEvicted, ks.max))
	ks.mu.Unlock()

	done := make(chan Result, 1)
	go func() {
		res, _ := e.Execute(context.Background(), Request{Session: "a", Workdir: wd, Code: "print(x)"})
		done <- res
	}()
	require.Eventually(t, func() bool { return ks.suspendWaits.Load() == 1 }, time.Minute, time.Millisecond,
		"the call waits for the suspension")
	require.True(t, e.endKernel(en, "lru"))
	res = <-done
	require.Equal(t, "kept\n", res.Output, "%+v", res.Kernel)
	require.True(t, res.Kernel.Resumed)
}

// Sessions calling at once on two kernels: a call evicts another session's
// kernel while that session's next call may already have a slot and look
// for its image; that call waits for the suspension to end and finds its
// state.
func TestDurableKernelsConcurrent(t *testing.T) {
	sessions, calls := 6, 8
	if testing.Short() {
		calls = 4
	}
	e := durableExecutor(t, t.TempDir(), 2)
	wd := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Go(func() {
			for i := range calls {
				res, err := e.Execute(context.Background(), Request{Session: fmt.Sprint("s", s), Workdir: wd,
					Code: "n = globals().get('n', 0) + 1\nprint(n)"})
				if err == nil && res.Output != fmt.Sprintf("%d\n", i+1) {
					err = fmt.Errorf("session %d, call %d: %q (%+v)", s, i, res.Output, res.Kernel)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// ForkSession copies a session's kernel into a new session, without a
// session store: the copy has the state, both go on apart.
func TestForkSession(t *testing.T) {
	e := durableExecutor(t, "", 4)
	wd := t.TempDir()
	okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "import random\nx = 41\nopen('notes', 'w').write('kept')"})
	n, err := e.ForkSession(context.Background(), "parent", "child")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	res := okCall(t, e, Request{Session: "child", Workdir: wd, Code: "x += 1\nprint(x, open('notes').read())"})
	require.Equal(t, "42 kept\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Equal(t, 2, res.Kernel.ExecutionCount)
	require.Equal(t, "41\n", okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "print(x)"}).Output, "the parent goes on apart")
	require.NotEqual(t, okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "print(random.random())"}).Output, okCall(t, e, Request{Session: "child", Workdir: wd, Code: "print(random.random())"}).Output)

	_, err = e.ForkSession(context.Background(), "parent", "child")
	require.ErrorContains(t, err, "has a kernel already")
	n, err = e.ForkSession(context.Background(), "nobody", "fresh")
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, "False\n", okCall(t, e, Request{Session: "fresh", Workdir: wd, Code: "print('x' in globals())"}).Output)

	// An open file goes with the copy: each kernel's is its own.
	okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "f = open('held', 'w')\nf.write('p')"})
	_, err = e.ForkSession(context.Background(), "parent", "other")
	require.NoError(t, err)
	read := "f.close()\nprint(open('held').read())"
	require.Equal(t, "pc\n", okCall(t, e, Request{Session: "other", Workdir: wd, Code: "f.write('c')\n" + read}).Output)
	require.Equal(t, "p\n", okCall(t, e, Request{Session: "parent", Workdir: wd, Code: read}).Output)
	// An open directory does not.
	okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "import os\nit = os.scandir('.')"})
	_, err = e.ForkSession(context.Background(), "parent", "third")
	require.ErrorContains(t, err, "open directory")
	_, err = e.ForkSession(context.Background(), "parent", "parent")
	require.Error(t, err)
}

// With a session store, a suspended session is forked from its image.
func TestForkSuspendedSession(t *testing.T) {
	e := durableExecutor(t, t.TempDir(), 4)
	wd := t.TempDir()
	okCall(t, e, Request{Session: "a", Workdir: wd, Code: "x = 'suspended'"})
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	n, err := e.ForkSession(context.Background(), "a", "b")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, s := range []string{"a", "b"} {
		res, err := e.Execute(context.Background(), Request{Session: s, Workdir: wd, Code: "print(x)"})
		require.NoError(t, err)
		require.Equal(t, "suspended\n", res.Output, s)
	}
}

// One writer per session, and the session goes where its calls go: a
// call on e2 of a session whose kernel lives idle on e1 (both sharing the
// store) asks e1 to hand it over; e1 suspends it and releases the lease,
// and e2 resumes it. The next call on e1 asks it back the same way.
func TestDurableHandoff(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e1 := durableExecutor(t, store, 4)
	e2 := durableExecutor(t, store, 4)
	okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "x = 'from e1'"})
	res := okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "x += ', then e2'\nprint(x)"})
	require.Equal(t, "from e1, then e2\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Zero(t, e1.Stats().Kernels, "e1 handed it over")
	res = okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "from e1, then e2\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Equal(t, 3, res.Kernel.ExecutionCount)
}

// A session whose kernel runs a call on e1 is not handed over: e2's call
// for it waits (here: patience, 1 s; by default until e1's lease would
// end) and fails saying where the session runs. Two executors never run
// one session's kernel at once.
func TestDurableLeaseOneWriter(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	block, started, release := blockingTool()
	e1 := durableExecutor(t, store, 4, block)
	e2 := durableExecutor(t, store, 4)
	e2.leases.patience = time.Second
	okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "x = 1"})
	done := make(chan Result, 1)
	go func() {
		res, _ := e1.Execute(context.Background(), Request{Session: "s", Workdir: wd,
			Code: "from hermes_tools import web_extract\nweb_extract(['https://example.com'])\nx += 1"})
		done <- res
	}()
	<-started
	res, err := e2.Execute(context.Background(), Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.ErrorIs(t, err, ErrSessionElsewhere)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "session \"s\" is held by "+e1.leases.owner)
	require.Contains(t, res.Error, "session affinity")
	close(release)
	require.Equal(t, config.StatusSuccess, (<-done).Status)
	res = okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "2\n", res.Output, "handed over once idle")
}

// stopRenewing stops e's lease renewals as a process's death would, and
// with gone also forgets its owner (a process of this host that has
// exited).
func stopRenewing(e *Executor, gone bool) {
	l := e.leases
	l.mu.Lock()
	l.stopped = true
	close(l.stop)
	l.mu.Unlock()
	l.done.Wait()
	if gone {
		ownersHere.Delete(l.owner)
	}
}

// A holder that stops renewing (another host's process that died, or
// hangs) is taken over once its lease lapses.
func TestDurableLeaseLapses(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e1 := durableExecutor(t, store, 4, shortLease, everyCall)
	okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "x = 'checkpointed'"})
	stopRenewing(e1, false)
	// Its last renewal: 3 s from now.
	_, err := e1.images.Acquire("s", e1.leases.owner, time.Now().Add(3*time.Second), "")
	require.NoError(t, err)
	e2 := durableExecutor(t, store, 4, shortLease, everyCall)
	waited := 0
	e2.leases.wait = func(ctx context.Context, until time.Time) error {
		waited++
		return sleepUntil(ctx, until)
	}
	res := okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "checkpointed\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Positive(t, waited, "waited for the lease to lapse (nobody answered the handoff)")
}

// With session_checkpoint: every_call, the image is written after each
// call while the kernel lives; when its process dies (here: its owner is
// no longer one of this process's executors, as after a restart), another
// executor takes the session over at once and resumes the last call's
// state.
func TestDurableEveryCallSurvivesACrash(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e1 := durableExecutor(t, store, 4, everyCall)
	okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "x = 41"})
	okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "x += 1"})
	require.Equal(t, 1, storeImages(t, store), "checkpointed while alive")
	require.Equal(t, uint64(2), e1.Stats().Checkpoints)
	require.Equal(t, 1, e1.Stats().Kernels)

	// The crash: e1's renewals stop and its owner is gone.
	stopRenewing(e1, true)

	e2 := durableExecutor(t, store, 4, everyCall)
	start := time.Now()
	res := okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "42\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Equal(t, 3, res.Kernel.ExecutionCount)
	require.Less(t, time.Since(start), 20*time.Second, "taken over without waiting for the 30 s lease")
	require.Equal(t, 1, storeImages(t, store), "kept after the resume until the next checkpoint")
}

// Images are encrypted with HERMES_SESSION_STORE_KEY: a process without
// the key refuses them with a note, and starts the session afresh.
func TestDurableEncrypted(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	key := sessionstore.KeyEnv + "=" + strings.Repeat("ab", 32)
	e := durableExecutor(t, store, 4, withEnv(key))
	okCall(t, e, Request{Session: "s", Workdir: wd, Code: "marker = 'plain-' + 'text-marker-' * 50"})
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	files, _ := filepath.Glob(filepath.Join(store, "*", "*.img"))
	require.Len(t, files, 1)
	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NotContains(t, string(raw), "text-marker-")
	res := okCall(t, e, Request{Session: "s", Workdir: wd, Code: "print(len(marker))"})
	require.Equal(t, "606\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.NoError(t, e.Close(context.Background()))

	e2 := durableExecutor(t, store, 4)
	res, err = e2.Execute(context.Background(), Request{Session: "s", Workdir: wd, Code: "print('marker' in globals())"})
	require.NoError(t, err)
	require.Equal(t, "False\n", res.Output)
	require.False(t, res.Kernel.Resumed)
	require.Contains(t, res.Kernel.Note, "encrypted and "+sessionstore.KeyEnv+" is not set")
}

// A kernel whose image would pass session_store_max_mb is closed, not
// suspended, and its session's next call says its state is lost.
func TestDurableImageOverCap(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e := durableExecutor(t, store, 4, func(c *config.Config, _ *Options) { c.CodeExecution.SessionStoreMaxMB = 1 })
	okCall(t, e, Request{Session: "s", Workdir: wd, Code: "import os\nblob = os.urandom(3 << 20)"})
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	require.Zero(t, storeImages(t, store))
	res := okCall(t, e, Request{Session: "s", Workdir: wd, Code: "print('blob' in globals())"})
	require.Equal(t, "False\n", res.Output)
	require.False(t, res.Kernel.Resumed)
	require.Contains(t, res.Kernel.Note, "state")
	require.Zero(t, e.Stats().StoreFailures, "the cap is a rule, not a failure")
}

// Images not written for session_ttl are removed when an executor opens
// the store (and every hour after); younger ones stay.
func TestDurableImagesExpire(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e := durableExecutor(t, store, 4)
	okCall(t, e, Request{Session: "old", Workdir: wd, Code: "x = 1"})
	require.NoError(t, e.Close(context.Background()))
	files, err := filepath.Glob(filepath.Join(store, "*", "*.img"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	aged := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(files[0], aged, aged))
	e = durableExecutor(t, store, 4)
	okCall(t, e, Request{Session: "new", Workdir: wd, Code: "x = 2"})
	require.NoError(t, e.Close(context.Background()))
	require.Equal(t, 2, storeImages(t, store))

	e = durableExecutor(t, store, 4, func(c *config.Config, _ *Options) { c.CodeExecution.SessionTTL = 3600 })
	require.Eventually(t, func() bool { return storeImages(t, store) == 1 }, 30*time.Second, 10*time.Millisecond)
	res := okCall(t, e, Request{Session: "new", Workdir: wd, Code: "print(x)"})
	require.True(t, res.Kernel.Resumed)
	res = okCall(t, e, Request{Session: "old", Workdir: wd, Code: "print('x' in globals())"})
	require.Equal(t, "False\n", res.Output)
}

// BenchmarkCheckpointCall is a warm strict kernel's call with a session
// store: without checkpoints (the anchor), and with session_checkpoint:
// every_call, whose image is written after each call (the kernel of the
// issue's goal: `import json, re, sqlite3` and 1 MB of data), plain and
// encrypted.
//
//	go test -run X -bench CheckpointCall ./runtime/executor/
func BenchmarkCheckpointCall(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []func(*config.Config, *Options)
	}{
		{"off", nil},
		{"every_call", []func(*config.Config, *Options){everyCall}},
		{"every_call_encrypted", []func(*config.Config, *Options){everyCall, withEnv(sessionstore.KeyEnv + "=" + strings.Repeat("cd", 32))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store, wd := b.TempDir(), b.TempDir()
			cfg := config.Default()
			cfg.CodeExecution.Mode = config.ModeStrict
			cfg.CodeExecution.SessionStore = store
			o := Options{HermesHome: b.TempDir(), Environ: []string{}}
			for _, f := range bc.opts {
				f(&cfg, &o)
			}
			o.Config = &cfg
			e := New(o)
			defer e.Close(context.Background())
			req := Request{Session: "s", Workdir: wd, Code: "import json, re, sqlite3, os\ndata = os.urandom(1 << 19).hex()"}
			res, err := e.Execute(context.Background(), req)
			require.NoError(b, err)
			require.Equal(b, config.StatusSuccess, res.Status, res.Output)
			req.Code = "n = len(data)"
			for b.Loop() {
				res, err := e.Execute(context.Background(), req)
				if err != nil || res.Status != config.StatusSuccess {
					b.Fatalf("%v %+v", err, res)
				}
			}
			if bc.opts != nil && e.Stats().Checkpoints == 0 {
				b.Fatal("no checkpoint written")
			}
		})
	}
}

// The file tools and Landlock protect a dir store; an object store's URL
// is no path of this machine.
func TestStoreDir(t *testing.T) {
	cfg := config.Default()
	require.Empty(t, storeDir(cfg))
	cfg.CodeExecution.SessionStore = "/var/lib/hermes/sessions"
	require.Equal(t, "/var/lib/hermes/sessions", storeDir(cfg))
	cfg.CodeExecution.SessionStore = "s3://bucket/kernels"
	require.Empty(t, storeDir(cfg))
}

// A subagent's first call with InheritParent starts from a copy of its
// parent's kernel (without a session store too); a parent that runs a
// call cannot be copied, and the subagent starts empty with a note.
func TestInheritParent(t *testing.T) {
	block, started, release := blockingTool()
	e := durableExecutor(t, "", 4, block)
	wd := t.TempDir()
	okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "x = 41"})
	res := okCall(t, e, Request{Session: "sub", ParentSession: "parent", InheritParent: true, Workdir: wd, Code: "x += 1\nprint(x)"})
	require.Equal(t, "42\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.Empty(t, res.Kernel.Note)
	require.Equal(t, "41\n", okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "print(x)"}).Output, "the parent goes on as it was")

	// The parent's call runs (it started the subagent, say).
	done := make(chan Result, 1)
	go func() {
		res, _ := e.Execute(context.Background(), Request{Session: "parent", Workdir: wd,
			Code: "from hermes_tools import web_extract\nweb_extract(['https://example.com'])"})
		done <- res
	}()
	<-started
	res = okCall(t, e, Request{Session: "sub2", ParentSession: "parent", InheritParent: true, Workdir: wd, Code: "print('x' in globals())"})
	require.Equal(t, "False\n", res.Output)
	require.Contains(t, res.Kernel.Note, "could not be copied (a call runs in it")
	close(release)
	require.Equal(t, config.StatusSuccess, (<-done).Status)

	res = okCall(t, e, Request{Session: "orphan", ParentSession: "nobody", InheritParent: true, Workdir: wd, Code: "pass"})
	require.Contains(t, res.Kernel.Note, "has no kernel to copy")
}

// A reset of a session another executor runs goes through the lease: the
// other hands the session over, and only then are its images deleted, so
// the other's kernel never writes the old state back (a review found e1's
// stale kernel resumed after e2's reset).
func TestDurableResetElsewhere(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e1 := durableExecutor(t, store, 4)
	e2 := durableExecutor(t, store, 4)
	okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "x = 'old'"})
	res := okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "print('x' in globals())", Reset: true})
	require.Equal(t, "False\n", res.Output)
	require.Zero(t, e1.Stats().Kernels, "e1 handed the session over")
	okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "x = 'after reset'"})
	e2.reapIdle(time.Now().Add(time.Hour), time.Second)
	e1.reapIdle(time.Now().Add(time.Hour), time.Second)
	res = okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "after reset\n", res.Output)
}

// slowStore is a store whose Take waits for gate, or (no gate) takes d:
// a store's latency.
type slowStore struct {
	sessionstore.Store
	d    time.Duration
	gate <-chan struct{}
}

func (s slowStore) Take(session, kernel string) ([]byte, error) {
	if s.gate != nil {
		<-s.gate
	} else {
		time.Sleep(s.d) // the latency itself is what is tested: longer than a lease renewal's period
	}
	return s.Store.Take(session, kernel)
}

// The lease is kept while a kernel resumes, however long that takes: a
// renewal tick during a slow resume used to release it.
func TestDurableLeaseKeptDuringSlowResume(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e := durableExecutor(t, store, 4, shortLease)
	okCall(t, e, Request{Session: "s", Workdir: wd, Code: "x = 1"})
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	e.images = slowStore{Store: e.images, d: 2 * time.Second} // longer than a renewal tick
	res := okCall(t, e, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.True(t, res.Kernel.Resumed)
	other, err := sessionstore.Open(store)
	require.NoError(t, err)
	_, err = other.Acquire("s", "elsewhere/-/1/x", time.Now().Add(time.Minute), "")
	require.ErrorIs(t, err, sessionstore.ErrLeased, "the session's kernel lives here")
}

// An interrupt while a kernel resumes leaves its image in the store.
func TestDurableInterruptedResumeKeepsImage(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e := durableExecutor(t, store, 4)
	okCall(t, e, Request{Session: "s", Workdir: wd, Code: "x = 'precious'"})
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	inner := e.images
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	e.images = slowStore{Store: inner, gate: ctx.Done()} // the image read as the call is interrupted
	res, _ := e.Execute(ctx, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, config.StatusInterrupted, res.Status, res.Output)
	e.images = inner
	res = okCall(t, e, Request{Session: "s", Workdir: wd, Code: "print(globals().get('x'))"})
	require.Equal(t, "precious\n", res.Output)
	require.True(t, res.Kernel.Resumed)
}

// An executor without the images' key leaves them in the store for one
// with it, and never writes over them: its calls run detached.
func TestDurableWrongKeyKeepsImage(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	keyed := withEnv(sessionstore.KeyEnv + "=" + strings.Repeat("ab", 32))
	e := durableExecutor(t, store, 4, keyed)
	okCall(t, e, Request{Session: "s", Workdir: wd, Code: "x = 'precious'"})
	require.NoError(t, e.Close(context.Background()))
	e2 := durableExecutor(t, store, 4)
	res := okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "y = 1"})
	require.Contains(t, res.Kernel.Note, "could not be used")
	require.NoError(t, e2.Close(context.Background()))
	require.Equal(t, 1, storeImages(t, store), "the sealed image stays, not written over")
	e3 := durableExecutor(t, store, 4, keyed)
	res = okCall(t, e3, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "precious\n", res.Output)
}

// With every_call, a kernel that ended (sys.exit) leaves no checkpoint
// behind: its session's next call starts afresh, as its note said.
func TestDurableEveryCallEndedKernel(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	e := durableExecutor(t, store, 4, everyCall)
	okCall(t, e, Request{Session: "s", Workdir: wd, Code: "x = 1"})
	res, err := e.Execute(context.Background(), Request{Session: "s", Workdir: wd, Code: "import sys\nsys.exit(0)"})
	require.NoError(t, err)
	require.True(t, res.Kernel.Ended)
	res = okCall(t, e, Request{Session: "s", Workdir: wd, Code: "print('x' in globals())"})
	require.Equal(t, "False\n", res.Output)
	require.False(t, res.Kernel.Resumed)
}

// A sandboxed project-mode session kernel (code_execution.sandbox: wasm)
// is suspended and resumed over its working dir like a strict one.
func TestDurableSandboxedProject(t *testing.T) {
	store, wd := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(wd, "notes.txt"), []byte("one\ntwo\n"), 0o644))
	e := durableExecutor(t, store, 4)
	req := func(code string) Request {
		return Request{Session: "s", Workdir: wd, Mode: config.ModeProject, Sandbox: config.SandboxWasm, Code: code}
	}
	okCall(t, e, req("f = open('notes.txt')\nfirst = f.readline().strip()"))
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	require.Equal(t, 1, storeImages(t, store))
	res := okCall(t, e, req("print(first, f.readline().strip())"))
	require.Equal(t, "one two\n", res.Output)
	require.True(t, res.Kernel.Resumed)
}
