package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
)

// TestDangerousCommand: the exported check is internal/cmdcheck's (whose
// tests hold the rule table); the attacks the old hand-written lexer let
// through now need approval.
func TestDangerousCommand(t *testing.T) {
	t.Parallel()
	reason, ok := DangerousCommand("sudo rm -rf /")
	require.True(t, ok)
	require.Equal(t, "runs as another user (sudo/su); delete of /, ~ or a top-level directory", reason)
	for _, cmd := range []string{
		"$(echo rm) -rf x",
		"`echo rm` -rf x",
		"a=rm; $a -rf x",
		"${RM:-rm} -rf x",
		"echo cm0gLXJmIHg= | base64 -d | sh",
		"eval ls",
		"rm -rf 'x",
	} {
		reason, ok := DangerousCommand(cmd)
		require.True(t, ok, "%q must be flagged", cmd)
		require.NotEmpty(t, reason)
	}
	_, ok = DangerousCommand("ls -la")
	require.False(t, ok)
}

// TestApprovalNonLiteralCommand: a command whose name is only known at run
// time is asked about in a CLI session (it ran unasked before).
func TestApprovalNonLiteralCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ap := &recorder{d: Decision{Approved: false}}
	a := newApprovals(config.ApprovalsAsk, time.Second)
	for _, cmd := range []string{"$(echo rm) -rf x", "echo cm0gLXJmIHg= | base64 -d | sh"} {
		msg := a.command(ctx, ap, "s", KindCLI, cmd)
		require.True(t, strings.HasPrefix(msg, "Command blocked: "), "%q: %q", cmd, msg)
		require.Contains(t, msg, "was denied")
	}
	require.Equal(t, 2, ap.count())
	require.Contains(t, ap.asks[0].Reason, "only known at run time")
	require.Contains(t, ap.asks[1].Reason, "on stdin")
}

// recorder is an Approver that answers with a fixed decision and records
// what it was asked.
type recorder struct {
	mu   sync.Mutex
	asks []ApprovalRequest
	d    Decision
	err  error
}

func (r *recorder) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asks = append(r.asks, req)
	return r.d, r.err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asks)
}

func TestApprovalModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const danger = "rm -rf ./build"
	for _, kind := range []string{KindGateway, KindAutomation} {
		t.Run(kind, func(t *testing.T) {
			ap := &recorder{d: Decision{Approved: true}}
			off := newApprovals(config.ApprovalsOff, time.Second)
			require.Empty(t, off.script(ctx, ap, "s", kind, "print(1)"))
			deny := newApprovals(config.ApprovalsDeny, time.Second)
			msg := deny.script(ctx, ap, "s", kind, "print(1)")
			require.True(t, strings.HasPrefix(msg, "Script blocked: "), msg)
			require.Contains(t, msg, `approvals.mode is "deny"`)
			require.Contains(t, msg, kind+" sessions")
			require.Zero(t, ap.count(), "off and deny never ask")

			ask := newApprovals(config.ApprovalsAsk, time.Second)
			require.Empty(t, ask.script(ctx, ap, "s", kind, "print(1)"))
			require.Equal(t, []ApprovalRequest{{Type: ApproveScript, Session: "s", Code: "print(1)"}}, ap.asks)
			// The whole script was approved: its commands run.
			require.Empty(t, ask.command(ctx, ap, "s", kind, danger))
			require.Empty(t, deny.command(ctx, ap, "s", kind, danger))
			require.Equal(t, 1, ap.count())
		})
	}
	for _, kind := range []string{KindCLI, ""} {
		t.Run("cli"+kind, func(t *testing.T) {
			ap := &recorder{d: Decision{Approved: true}}
			for _, mode := range []string{config.ApprovalsOff, config.ApprovalsDeny, config.ApprovalsAsk} {
				require.Empty(t, newApprovals(mode, time.Second).script(ctx, ap, "s", kind, "print(1)"), mode)
			}
			require.Zero(t, ap.count(), "a CLI script is never asked about")

			require.Empty(t, newApprovals(config.ApprovalsOff, time.Second).command(ctx, ap, "s", kind, danger))
			msg := newApprovals(config.ApprovalsDeny, time.Second).command(ctx, ap, "s", kind, danger)
			require.Equal(t, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and approvals.mode is \"deny\", so it was not run. Do not retry it; find a safer way, or ask the user to run it themselves.", msg)
			require.Zero(t, ap.count())

			ask := newApprovals(config.ApprovalsAsk, time.Second)
			require.Empty(t, ask.command(ctx, ap, "s", kind, "ls -la"), "harmless commands are not asked about")
			require.Zero(t, ap.count())
			require.Empty(t, ask.command(ctx, ap, "s", kind, danger))
			require.Equal(t, []ApprovalRequest{{Type: ApproveCommand, Session: "s", Command: danger, Reason: "recursive delete"}}, ap.asks)
		})
	}
}

func TestApprovalDenied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ap := &recorder{d: Decision{Approved: false, Scope: ScopeSession}}
	a := newApprovals(config.ApprovalsAsk, time.Second)
	require.Equal(t, "Script blocked: the gateway session's approval was denied, so the script did not run. Do not resubmit it unchanged; ask the user how to proceed.",
		a.script(ctx, ap, "s", KindGateway, "print(1)"))
	require.Equal(t, "Command blocked: `rm -rf /tmp/x` needs approval (recursive delete) and was denied. Do not retry it; find another way or ask the user.",
		a.command(ctx, ap, "s", KindCLI, "rm -rf /tmp/x"))
	// Denials are never remembered, even with a scope.
	a.script(ctx, ap, "s", KindGateway, "print(1)")
	a.command(ctx, ap, "s", KindCLI, "rm -rf /tmp/x")
	require.Equal(t, 4, ap.count())
}

func TestApprovalNoAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("no approver", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		require.Equal(t, "Script blocked: approval is required for automation sessions and nobody is connected to approve it, so the script did not run. Ask the user to approve it, then run it again.",
			a.script(ctx, nil, "s", KindAutomation, "print(1)"))
		require.Contains(t, a.command(ctx, nil, "s", KindCLI, "sudo ls"), "Command blocked: `sudo ls` needs approval (runs as another user (sudo/su)) and nobody is connected")
	})
	t.Run("never answers", func(t *testing.T) {
		// An approver that ignores ctx is abandoned at the timeout.
		block := make(chan struct{})
		defer close(block)
		never := ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Decision, error) {
			<-block
			return Decision{Approved: true}, nil
		})
		a := newApprovals(config.ApprovalsAsk, 100*time.Millisecond)
		start := time.Now()
		msg := a.script(ctx, never, "s", KindGateway, "print(1)")
		require.Less(t, time.Since(start), 2*time.Second)
		require.Equal(t, "Script blocked: approval is required for gateway sessions and nobody answered within 0.1s, so the script did not run. Ask the user to approve it, then run it again.", msg)
		msg = a.command(ctx, never, "s", KindCLI, "git push --force")
		require.Contains(t, msg, "nobody answered within 0.1s")
	})
	t.Run("honours ctx", func(t *testing.T) {
		waiting := ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Decision, error) {
			<-ctx.Done()
			return Decision{}, ctx.Err()
		})
		a := newApprovals(config.ApprovalsAsk, 100*time.Millisecond)
		require.Contains(t, a.script(ctx, waiting, "s", KindGateway, "x"), "nobody answered within 0.1s")
		require.Contains(t, newApprovals(config.ApprovalsAsk, 120*time.Second).script(ctx, ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Decision, error) {
			return Decision{}, context.DeadlineExceeded
		}), "s", KindGateway, "x"), "approval request failed")
	})
	t.Run("error", func(t *testing.T) {
		ap := &recorder{d: Decision{Approved: true}, err: errors.New("client went away")}
		a := newApprovals(config.ApprovalsAsk, time.Second)
		require.Equal(t, "Script blocked: approval is required for gateway sessions and the approval request failed (client went away), so the script did not run. Ask the user to approve it, then run it again.",
			a.script(ctx, ap, "s", KindGateway, "print(1)"))
		require.Contains(t, a.command(ctx, ap, "s", KindCLI, "crontab -r"), "the approval request failed (client went away)")
	})
	t.Run("panics", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		msg := a.script(ctx, ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) { panic("boom") }), "s", KindGateway, "x")
		require.Contains(t, msg, "the approver panicked: boom")
	})
	t.Run("interrupted", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, 10*time.Second)
		cctx, cancel := context.WithCancelCause(ctx)
		go func() {
			time.Sleep(50 * time.Millisecond)
			cancel(&shared.InterruptError{Reason: "user sent a new message"})
		}()
		msg := a.script(cctx, ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Decision, error) {
			<-ctx.Done()
			return Decision{}, context.Cause(ctx)
		}), "s", KindGateway, "x")
		require.Contains(t, msg, "the call was interrupted while waiting for the answer (user sent a new message)")
	})
}

func TestApprovalScopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("script once", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: ScopeOnce}}
		a.script(ctx, ap, "s", KindGateway, "1")
		a.script(ctx, ap, "s", KindGateway, "2")
		require.Equal(t, 2, ap.count(), "once is not remembered")
	})
	t.Run("unknown scope is once", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: "forever"}}
		a.script(ctx, ap, "s", KindGateway, "1")
		a.script(ctx, ap, "s", KindGateway, "2")
		require.Equal(t, 2, ap.count())
	})
	t.Run("script session", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: ScopeSession}}
		require.Empty(t, a.script(ctx, ap, "s", KindGateway, "1"))
		require.Empty(t, a.script(ctx, ap, "s", KindAutomation, "another script"))
		require.Equal(t, 1, ap.count(), "a session approval holds for later scripts of the session")
		ap.d = Decision{Approved: false}
		require.NotEmpty(t, a.script(ctx, ap, "t", KindGateway, "1"), "not for other sessions")
		require.Equal(t, 2, ap.count())
		a.forgetSession("s")
		require.NotEmpty(t, a.script(ctx, ap, "s", KindGateway, "1"), "forgotten with the session")
		require.Equal(t, 3, ap.count())
	})
	t.Run("script always", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: ScopeAlways}}
		require.Empty(t, a.script(ctx, ap, "s", KindGateway, "1"))
		a.forgetSession("s")
		require.Empty(t, a.script(ctx, ap, "s", KindGateway, "2"))
		require.Empty(t, a.script(ctx, nil, "other", KindAutomation, "3"))
		require.Equal(t, 1, ap.count())
	})
	t.Run("command session", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: ScopeSession}}
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "rm -rf ./build"))
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "rm -r dist"), "the same reason is approved for the session")
		require.Equal(t, 1, ap.count())
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "git reset --hard"), "another reason is asked about")
		require.Equal(t, 2, ap.count())
		require.Empty(t, a.command(ctx, ap, "t", KindCLI, "rm -rf ./build"), "another session is asked")
		require.Equal(t, 3, ap.count())
		// sudo rm -rf x needs both reasons; only one is approved.
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "sudo rm -rf x"))
		require.Equal(t, 4, ap.count())
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "sudo ls"))
		require.Equal(t, 4, ap.count(), "sudo was approved with the previous command")
		a.forgetSession("s")
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "rm -rf ./build"))
		require.Equal(t, 5, ap.count())
	})
	t.Run("command always", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: ScopeAlways}}
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "git push --force"))
		a.forgetSession("s")
		require.Empty(t, a.command(ctx, nil, "t", KindCLI, "git push -f origin main"))
		require.Equal(t, 1, ap.count())
		msg := a.command(ctx, nil, "t", KindCLI, "git clean -fd")
		require.Contains(t, msg, "nobody is connected", "always covers only the approved reason")
	})
	t.Run("scripts and commands are separate", func(t *testing.T) {
		a := newApprovals(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: ScopeAlways}}
		require.Empty(t, a.script(ctx, ap, "s", KindGateway, "1"))
		require.NotEmpty(t, a.command(ctx, nil, "s", KindCLI, "rm -rf x"))
	})
}

func TestApprovalConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(config.ApprovalsAsk, time.Second)
	var asked atomic.Int32
	ap := ApproverFunc(func(ctx context.Context, req ApprovalRequest) (Decision, error) {
		asked.Add(1)
		return Decision{Approved: true, Scope: ScopeSession}, nil
	})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := fmt.Sprintf("s%d", i%5)
			require.Empty(t, a.script(ctx, ap, s, KindGateway, "x"))
			require.Empty(t, a.command(ctx, ap, s, KindCLI, "rm -rf x"))
			if i%7 == 0 {
				a.forgetSession(s)
			}
		}()
	}
	wg.Wait()
	require.GreaterOrEqual(t, int(asked.Load()), 10)
}

func TestQuoteCommand(t *testing.T) {
	t.Parallel()
	require.Equal(t, "`rm -rf x`", quoteCommand("rm   -rf\n x"))
	long := quoteCommand(strings.Repeat("é", 300))
	require.True(t, strings.HasSuffix(long, "…`"))
	require.LessOrEqual(t, len(long), 210)
}
