package executor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFIFOOrderAndCancel(t *testing.T) {
	var f fifo
	require.NoError(t, f.wait(context.Background(), f.reserve()))
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 5 {
		place := f.reserve() // places are taken in this order, whatever the goroutines do
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, f.wait(context.Background(), place))
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			f.unlock()
		}()
	}
	// A waiter that gives up leaves the queue.
	ctx, cancel := context.WithCancel(context.Background())
	place := f.reserve()
	cancel()
	require.ErrorIs(t, f.wait(ctx, place), context.Canceled)
	f.mu.Lock()
	require.Len(t, f.waiters, 5, "the place given up left the queue")
	f.mu.Unlock()
	f.unlock()
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4}, order)
	require.NoError(t, f.wait(context.Background(), f.reserve()), "free again")
}

// A call that waited for a kernel says so even when the wait was shorter
// than the millisecond waited_seconds is rounded to (a warm kernel's call
// ends in about a tenth of one): the CI once saw 0 for a real wait.
func TestWaitedSecondsShowsAnyWait(t *testing.T) {
	require.Zero(t, waitedSeconds(0))
	require.Equal(t, 0.001, waitedSeconds(100*time.Microsecond))
	require.Equal(t, 0.001, waitedSeconds(time.Millisecond))
	require.Equal(t, 2.5, waitedSeconds(2500*time.Millisecond))
}

// A session call that fails before its turn (here: its working dir does
// not exist) gives its place back: the session's next call runs, rather
// than waiting behind it until its own timeout.
func TestFailedSessionCallGivesItsPlaceBack(t *testing.T) {
	e := New(Options{HermesHome: t.TempDir()})
	defer e.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Execute(ctx, Request{Code: "print(1)", Session: "s", Workdir: t.TempDir() + "/missing"})
	require.Error(t, err)
	require.Equal(t, "error", res.Status)

	e.sessions.mu.Lock()
	busy := e.sessions.byName["s"].turn.busy()
	e.sessions.mu.Unlock()
	require.False(t, busy, "the failed call's place is given back")

	res, err = e.Execute(ctx, Request{Code: "print(2)", Session: "s", Workdir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "2\n", res.Output)
}
