package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
)

// durableExecutor is a strict-mode executor with a session store and room
// for max kernels.
func durableExecutor(t *testing.T, store string, max int) *Executor {
	t.Helper()
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	cfg.CodeExecution.MaxSessionKernels = max
	cfg.CodeExecution.SessionStore = store
	e := New(Options{Config: &cfg, HermesHome: t.TempDir(), Environ: []string{}})
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// okCall runs req on e and requires it to succeed.
func okCall(t *testing.T, e *Executor, req Request) Result {
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
	n, _ := dir.Images()
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

// A kernel that holds an open file is closed, not suspended, and its next
// call says its state is lost.
func TestDurableKernelNotSuspendable(t *testing.T) {
	e := durableExecutor(t, t.TempDir(), 1)
	wd := t.TempDir()
	okCall(t, e, Request{Session: "a", Workdir: wd, Code: "f = open('x', 'w')"})
	okCall(t, e, Request{Session: "b", Workdir: wd, Code: "pass"})
	res, err := e.Execute(context.Background(), Request{Session: "a", Workdir: wd, Code: "print('f' in globals())"})
	require.NoError(t, err)
	require.Equal(t, "False\n", res.Output)
	require.False(t, res.Kernel.Resumed)
	require.Contains(t, res.Kernel.Note, "closed to make room")
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

	okCall(t, e, Request{Session: "parent", Workdir: wd, Code: "f = open('held', 'w')"})
	_, err = e.ForkSession(context.Background(), "parent", "other")
	require.ErrorContains(t, err, "open files")
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
