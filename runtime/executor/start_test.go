package executor

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// TestStartKeepsOrder: calls of one session started one after another run
// in that order, from their approval on (a gateway session approves each
// script before it runs), however the goroutines are scheduled.
func TestStartKeepsOrder(t *testing.T) {
	t.Parallel()
	ex := New(Options{HermesHome: t.TempDir()})
	defer ex.Close(context.Background())
	var mu sync.Mutex
	var order []string
	ap := ApproverFunc(func(ctx context.Context, r ApprovalRequest) (Decision, error) {
		mu.Lock()
		order = append(order, r.Code)
		mu.Unlock()
		return Decision{Approved: true}, nil
	})
	codes := []string{"a = 1", "a += 1", "a += 1", "print(a)"}
	calls := make([]*Call, len(codes))
	wd := t.TempDir()
	for i, code := range codes {
		calls[i] = ex.Start(context.Background(), Request{Code: code, Mode: config.ModeStrict, Session: "s", Kind: config.KindGateway, Approver: ap, Workdir: wd})
	}
	for i, c := range calls {
		res, err := c.Wait()
		require.NoError(t, err)
		require.Equal(t, config.StatusSuccess, res.Status, "call %d: %s", i, res.Output)
		if i == len(calls)-1 {
			require.Equal(t, "3\n", res.Output, "the cells ran in order")
		}
	}
	require.Equal(t, codes, order, "approved in the order started")
}

// TestInterruptWhileApproving: Interrupt reaches a call that holds its
// session's turn but waits for its approval; the script never runs.
func TestInterruptWhileApproving(t *testing.T) {
	t.Parallel()
	ex := New(Options{HermesHome: t.TempDir()})
	defer ex.Close(context.Background())
	asked := make(chan struct{})
	ap := ApproverFunc(func(ctx context.Context, r ApprovalRequest) (Decision, error) {
		close(asked)
		<-ctx.Done()
		return Decision{}, ctx.Err()
	})
	call := ex.Start(context.Background(), Request{Code: "print('ran')", Mode: config.ModeStrict, Session: "s", Kind: config.KindGateway, Approver: ap, Workdir: t.TempDir()})
	<-asked
	require.True(t, ex.Interrupt("s", "the user pressed stop"))
	res, err := call.Wait()
	require.NoError(t, err)
	require.True(t, res.Blocked, res.Error)
	require.Contains(t, res.Error, "interrupted while waiting for the answer (the user pressed stop)")
	require.False(t, ex.Interrupt("s", "again"), "nothing holds the turn any more")
}
