package executor

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
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
			cancel(&engine.InterruptError{Reason: "user sent a new message"})
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

// TestApprovalHermesModes: Hermes's approvals.mode values. smart asks a
// model in Hermes; there is none here, so it behaves exactly as manual
// (and as "ask", manual's former name): scripts of gateway sessions and
// dangerous commands of CLI sessions are asked about.
func TestApprovalHermesModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []string{config.ApprovalsManual, config.ApprovalsSmart, "ask", " Smart ", "", "bogus"} {
		ap := &recorder{d: Decision{Approved: false}}
		a := newApprovals(mode, time.Second)
		require.Equal(t, config.ApprovalsManual, a.mode, "%q", mode)
		msg := a.script(ctx, ap, "s", KindGateway, "print(1)")
		require.Contains(t, msg, "approval was denied", "%q", mode)
		msg = a.command(ctx, ap, "s", KindCLI, "rm -rf ./build")
		require.Contains(t, msg, "was denied", "%q", mode)
		require.Equal(t, 2, ap.count(), "%q asks", mode)
	}
	for _, mode := range []string{"off", "OFF"} {
		ap := &recorder{}
		a := newApprovals(mode, time.Second)
		require.Empty(t, a.script(ctx, ap, "s", KindGateway, "print(1)"))
		require.Empty(t, a.command(ctx, ap, "s", KindCLI, "rm -rf ./build"))
		require.Zero(t, ap.count())
	}
}

// TestApprovalCronMode: approvals.cron_mode decides for automation
// sessions (Hermes's cron jobs), where nobody is there to approve: deny
// blocks the script at once with Hermes's text, approve runs it (and its
// commands) without asking, ask (the default) asks like a gateway session.
// approvals.mode off and deny still win, and gateway sessions are not
// affected.
func TestApprovalCronMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const danger = "rm -rf ./build"

	ap := &recorder{d: Decision{Approved: true}}
	deny := newApprovals(config.ApprovalsManual, time.Second).withCron(config.CronModeDeny)
	require.Equal(t, "BLOCKED: execute_code runs arbitrary local Python (including subprocess calls that bypass shell-string approval checks). Cron jobs run without a user present to approve it. Use normal tools instead, or set approvals.cron_mode: approve only if this cron profile is intentionally trusted.",
		deny.script(ctx, ap, "s", KindAutomation, "print(1)"))
	require.Zero(t, ap.count(), "cron_mode deny never asks")
	require.Empty(t, deny.script(ctx, ap, "s", KindGateway, "print(1)"), "a gateway session is still asked")
	require.Equal(t, 1, ap.count())

	for _, approve := range []string{config.CronModeApprove, "off", "Allow", "yes"} {
		ap := &recorder{d: Decision{Approved: false}}
		a := newApprovals(config.ApprovalsSmart, time.Second).withCron(approve)
		require.Empty(t, a.script(ctx, ap, "s", KindAutomation, "print(1)"), approve)
		require.Empty(t, a.command(ctx, ap, "s", KindAutomation, danger), approve)
		require.Zero(t, ap.count(), "cron_mode %s never asks", approve)
	}

	for _, ask := range []string{config.CronModeAsk, "", "whatever"} {
		ap := &recorder{d: Decision{Approved: false}}
		a := newApprovals(config.ApprovalsManual, time.Second).withCron(ask)
		require.Contains(t, a.script(ctx, ap, "s", KindAutomation, "print(1)"), "automation session's approval was denied")
		require.Equal(t, 1, ap.count())
		require.Contains(t, newApprovals(config.ApprovalsManual, time.Second).withCron(ask).script(ctx, nil, "s", KindAutomation, "print(1)"),
			"approval is required for automation sessions and nobody is connected to approve it")
	}

	// approvals.mode wins: off runs everything, deny blocks everything.
	ap = &recorder{}
	require.Empty(t, newApprovals(config.ApprovalsOff, time.Second).withCron(config.CronModeDeny).script(ctx, ap, "s", KindAutomation, "print(1)"))
	require.Contains(t, newApprovals(config.ApprovalsDeny, time.Second).withCron(config.CronModeApprove).script(ctx, ap, "s", KindAutomation, "print(1)"),
		`approvals.mode is "deny"`)
	require.Zero(t, ap.count())
}

// TestExecutorCronMode: the executor passes approvals.cron_mode from its
// configuration.
func TestExecutorCronMode(t *testing.T) {
	t.Parallel()
	for cron, want := range map[string]string{config.CronModeDeny: config.CronModeDeny, config.CronModeApprove: config.CronModeApprove, "": config.CronModeAsk} {
		cfg := config.Default()
		cfg.Approvals.CronMode = cron
		e := New(Options{Config: &cfg, HermesHome: t.TempDir()})
		require.Equal(t, want, e.approvals.cron)
		require.NoError(t, e.Close(context.Background()))
	}
}

// TestInjectTimezone: TZ comes from the effective zone (config.Config.Timezone,
// which config.Load resolves from $HERMES_TIMEZONE, code_execution.timezone
// and the top-level timezone), and a Config built in code may set only
// CodeExecution.Timezone. (Kept with the approval tests: both are the
// executor's reading of config.Config.)
func TestInjectTimezone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ top, ce, want string }{
		{"Asia/Tokyo", "", "TZ=Asia/Tokyo"},
		{"", "Europe/Paris", "TZ=Europe/Paris"},
		{"Asia/Tokyo", "Europe/Paris", "TZ=Asia/Tokyo"},
		{"", "", ""},
	} {
		cfg := config.Default()
		cfg.Timezone, cfg.CodeExecution.Timezone = tt.top, tt.ce
		e := New(Options{Config: &cfg, HermesHome: t.TempDir()})
		require.Equal(t, tt.want, strings.Join(e.inject(true), " "), "strict guest %+v", tt)
		got := strings.Join(e.inject(false), " ")
		if goruntime.GOOS == "windows" {
			tt.want = "" // as in Hermes: Windows programs do not read IANA names in TZ
		}
		require.Equal(t, tt.want, got, "%+v", tt)
		require.NoError(t, e.Close(context.Background()))
	}
}
