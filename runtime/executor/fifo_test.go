package executor

import (
	"context"
	"sync"
	"testing"

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
