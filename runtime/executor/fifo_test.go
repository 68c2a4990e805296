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
	require.NoError(t, f.lock(context.Background()))
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, f.lock(context.Background()))
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			f.unlock()
		}()
		// Queue them in a known order.
		require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.waiters) == i+1 }, time.Second, time.Millisecond)
	}
	// A waiter that gives up leaves the queue.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.lock(ctx) }()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.waiters) == 6 }, time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	f.unlock()
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4}, order)
	require.NoError(t, f.lock(context.Background()), "free again")
}
