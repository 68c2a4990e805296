// Package approval is the approval policy (docs/behaviour.md §8): who must
// approve what, by session kind and approvals.mode/cron_mode, asking an
// [Approver] within the approval timeout and remembering session- and
// always-scoped decisions (the session-scoped ones in the session's
// [SessionGrants]). What counts as a dangerous command is package
// cmdcheck's. runtime/executor applies a [Policy] to every call; its own
// ApprovalRequest, Decision and Approver are these types' public form,
// converted at the call.
package approval

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cmdcheck"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// Request is what an [Approver] is asked.
type Request struct {
	// Type is config.ApproveScript or config.ApproveCommand.
	Type string `json:"type"`
	// Session is the session the script runs in.
	Session string `json:"session"`
	// Code is the script, for config.ApproveScript.
	Code string `json:"code,omitempty"`
	// Command is the terminal command, for config.ApproveCommand.
	Command string `json:"command,omitempty"`
	// Reason says why approval is needed (for a command: what the
	// dangerous-command check matched).
	Reason string `json:"reason,omitempty"`
}

// Decision is an [Approver]'s answer.
type Decision struct {
	Approved bool `json:"approved"`
	// Scope is config.ScopeOnce (the default), config.ScopeSession or config.ScopeAlways;
	// session and always approvals are remembered.
	Scope string `json:"scope,omitempty"`
}

// Approver answers approval requests (the serve client, a terminal
// prompt, an embedder's policy). An error means no answer: the request is
// denied. Approve should return when ctx is done (the approval timeout);
// an approver that does not is abandoned at that point and the request
// denied.
type Approver interface {
	Approve(ctx context.Context, req Request) (Decision, error)
}

// Func adapts a function to [Approver].
type Func func(ctx context.Context, req Request) (Decision, error)

// Approve implements Approver.
func (f Func) Approve(ctx context.Context, req Request) (Decision, error) {
	return f(ctx, req)
}

// needsScriptApproval reports whether scripts of a session of kind are
// approved as a whole before they run (gateway and automation sessions);
// for a CLI session ("" included) only dangerous terminal commands are.
func needsScriptApproval(kind string) bool {
	return kind != config.KindCLI && kind != ""
}

// Policy applies the approval policy of docs/behaviour.md §8 for an executor:
// approvals.mode ("manual", "off" or "deny"; Hermes's "smart" needs a
// model and behaves as manual), approvals.cron_mode for automation
// sessions, the approval timeout, and the always-scoped decisions it
// remembers for its lifetime. Session-scoped decisions are the session's
// own ([SessionGrants]), which each check is given. It is safe for
// concurrent use.
type Policy struct {
	mode    string
	cron    string
	timeout time.Duration

	mu sync.Mutex
	// scriptsAlways: every script of every session is approved.
	scriptsAlways bool
	// commandsAlways: dangerous-command reasons approved in every session.
	commandsAlways map[string]bool
}

// SessionGrants are one session's session-scoped decisions: whether all
// its scripts are approved, and the dangerous-command reasons approved in
// it. The session that owns them drops them when it is closed. Use a
// pointer; it is safe for concurrent use.
type SessionGrants struct {
	// Session is the session's name, which the approver is told.
	Session string

	mu       sync.Mutex
	scripts  bool
	commands map[string]bool
}

// Empty reports whether the session has no approvals.
func (g *SessionGrants) Empty() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.scripts && len(g.commands) == 0
}

// scriptsApproved reports whether all of the session's scripts are approved.
func (g *SessionGrants) scriptsApproved() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.scripts
}

// commandApproved reports whether reason is approved in the session.
func (g *SessionGrants) commandApproved(reason string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.commands[reason]
}

// approveScripts remembers that all of the session's scripts are approved.
func (g *SessionGrants) approveScripts() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scripts = true
}

// approveCommands remembers reasons as approved in the session.
func (g *SessionGrants) approveCommands(reasons []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.commands == nil {
		g.commands = map[string]bool{}
	}
	for _, r := range reasons {
		g.commands[r] = true
	}
}

// New applies approvals.mode mode: "off" and "deny" as they are;
// "manual", "smart" (no model here: it behaves as manual), the former
// name "ask", "" and anything else as manual. Automation sessions are
// asked, like gateway sessions, until WithCron says otherwise.
func New(mode string, timeout time.Duration) *Policy {
	if mode, _ = config.NormalizeApprovalsMode(mode); mode != config.ApprovalsOff && mode != config.ApprovalsDeny {
		mode = config.ApprovalsManual
	}
	if timeout <= 0 {
		timeout = config.DefaultApprovalTimeout * time.Second
	}
	return &Policy{
		mode:           mode,
		cron:           config.CronModeAsk,
		timeout:        timeout,
		commandsAlways: map[string]bool{},
	}
}

// WithCron sets approvals.cron_mode: "approve" (and Hermes's spellings
// off, allow and yes) runs automation scripts without asking, "deny"
// blocks them at once, anything else ("ask", "") asks. It returns a.
func (a *Policy) WithCron(cron string) *Policy {
	a.cron = config.CronModeAsk
	if c, ok := config.NormalizeCronMode(cron); ok {
		a.cron = c
	}
	return a
}

// cronDenied is Hermes's text for an automation script blocked by
// approvals.cron_mode deny (tools/approval.py check_execute_code_guard).
const cronDenied = "BLOCKED: execute_code runs arbitrary local Python (including subprocess calls that bypass shell-string approval checks). Cron jobs run without a user present to approve it. Use normal tools instead, or set approvals.cron_mode: approve only if this cron profile is intentionally trusted."

// Script decides whether a script of kind may run in the session whose
// decisions are g; it returns
// "" when it may, else the reason it is blocked. approvals.mode off
// approves everything and deny blocks everything; otherwise an automation
// script follows approvals.cron_mode, and a gateway one (or an automation
// one under cron_mode ask) is asked about.
func (a *Policy) Script(ctx context.Context, ap Approver, g *SessionGrants, kind, code string) string {
	if !needsScriptApproval(kind) || a.mode == config.ApprovalsOff {
		return ""
	}
	who := kindLabel(kind)
	if a.mode == config.ApprovalsDeny {
		return fmt.Sprintf("Script blocked: approvals.mode is %q, so scripts of %s sessions never run, and this one did not. Do the task with individual tool calls, or ask the operator to set approvals.mode to \"manual\".", a.mode, who)
	}
	if kind == config.KindAutomation {
		switch a.cron {
		case config.CronModeApprove:
			return ""
		case config.CronModeDeny:
			return cronDenied
		}
	}
	if a.scriptApproved(g) {
		return ""
	}
	d, err := a.ask(ctx, ap, Request{Type: config.ApproveScript, Session: g.Session, Code: code})
	if err != nil {
		return "Script blocked: approval is required for " + who + " sessions and " + a.noAnswer(err) + ", so the script did not run. Ask the user to approve it, then run it again."
	}
	if !d.Approved {
		return "Script blocked: the " + who + " session's approval was denied, so the script did not run. Do not resubmit it unchanged; ask the user how to proceed."
	}
	switch d.Scope {
	case config.ScopeSession:
		g.approveScripts()
	case config.ScopeAlways:
		a.mu.Lock()
		a.scriptsAlways = true
		a.mu.Unlock()
	}
	return ""
}

func (a *Policy) scriptApproved(g *SessionGrants) bool {
	a.mu.Lock()
	always := a.scriptsAlways
	a.mu.Unlock()
	return always || g.scriptsApproved()
}

// Command decides whether a terminal command may run; "" when it may.
// Only CLI sessions approve commands one by one: in gateway and automation
// sessions the whole script was approved before it ran. shell is the
// dialect of the shell that will run the command (cmdcheck.Cmd for
// cmd.exe on a Windows host without Git Bash, else cmdcheck.Sh): the
// command is read as that shell reads it.
func (a *Policy) Command(ctx context.Context, ap Approver, g *SessionGrants, kind, command string, shell cmdcheck.Dialect) string {
	return a.command(ctx, ap, g, kind, command, shell, cmdcheck.CheckShell)
}

// CommandWithInput is [Policy.Command] for a command that runs with input
// the script gives it on stdin (subprocess.run(..., input=...) in the WASI
// interpreter): a shell or interpreter reading its program there needs
// approval, as behind a pipe (see cmdcheck.CheckShellInput).
func (a *Policy) CommandWithInput(ctx context.Context, ap Approver, g *SessionGrants, kind, command string, shell cmdcheck.Dialect) string {
	return a.command(ctx, ap, g, kind, command, shell, cmdcheck.CheckShellInput)
}

func (a *Policy) command(ctx context.Context, ap Approver, g *SessionGrants, kind, command string, shell cmdcheck.Dialect,
	check func(string, cmdcheck.Dialect) []string) string {
	if needsScriptApproval(kind) || a.mode == config.ApprovalsOff {
		return ""
	}
	reasons := check(command, shell)
	if len(reasons) == 0 {
		return ""
	}
	reason := strings.Join(reasons, "; ")
	shown := quoteCommand(command)
	if a.mode == config.ApprovalsDeny {
		return fmt.Sprintf("Command blocked: %s needs approval (%s) and approvals.mode is %q, so it was not run. Do not retry it; find a safer way, or ask the user to run it themselves.", shown, reason, a.mode)
	}
	if a.commandApproved(g, reasons) {
		return ""
	}
	d, err := a.ask(ctx, ap, Request{Type: config.ApproveCommand, Session: g.Session, Command: command, Reason: reason})
	if err != nil {
		return "Command blocked: " + shown + " needs approval (" + reason + ") and " + a.noAnswer(err) + ", so it was not run. Ask the user to approve it, or find a safer way."
	}
	if !d.Approved {
		return "Command blocked: " + shown + " needs approval (" + reason + ") and was denied. Do not retry it; find another way or ask the user."
	}
	switch d.Scope {
	case config.ScopeSession:
		g.approveCommands(reasons)
	case config.ScopeAlways:
		a.mu.Lock()
		for _, r := range reasons {
			a.commandsAlways[r] = true
		}
		a.mu.Unlock()
	}
	return ""
}

// commandApproved reports whether every reason is already approved, in
// every session or in g's.
func (a *Policy) commandApproved(g *SessionGrants, reasons []string) bool {
	for _, r := range reasons {
		a.mu.Lock()
		always := a.commandsAlways[r]
		a.mu.Unlock()
		if !always && !g.commandApproved(r) {
			return false
		}
	}
	return true
}

// Reasons ask can fail without a decision.
var (
	errNoApprover   = errors.New("no approver")
	errApprovalWait = errors.New("approval timed out")
)

// ask puts req to ap within the approval timeout. A decision with an
// unknown scope counts as once.
func (a *Policy) ask(ctx context.Context, ap Approver, req Request) (Decision, error) {
	if ap == nil {
		return Decision{}, errNoApprover
	}
	actx, cancel := context.WithTimeoutCause(ctx, a.timeout, errApprovalWait)
	defer cancel()
	type answer struct {
		d   Decision
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: approverError{fmt.Errorf("the approver panicked: %v", p)}}
			}
		}()
		d, err := ap.Approve(actx, req)
		ch <- answer{d, err}
	}()
	select {
	case ans := <-ch:
		if ans.err != nil {
			if errors.Is(context.Cause(actx), errApprovalWait) {
				return Decision{}, errApprovalWait
			}
			if ctx.Err() != nil {
				return Decision{}, context.Cause(ctx)
			}
			return Decision{}, approverError{ans.err}
		}
		// An answer that raced the deadline is still an answer.
		return normalizeDecision(ans.d), nil
	case <-actx.Done():
		if errors.Is(context.Cause(actx), errApprovalWait) {
			return Decision{}, errApprovalWait
		}
		return Decision{}, context.Cause(ctx)
	}
}

// approverError is an error the Approver returned.
type approverError struct{ err error }

func (e approverError) Error() string { return e.err.Error() }

func normalizeDecision(d Decision) Decision {
	switch d.Scope {
	case config.ScopeSession, config.ScopeAlways:
	default:
		d.Scope = config.ScopeOnce
	}
	return d
}

// noAnswer says why no decision came, for a blocked message.
func (a *Policy) noAnswer(err error) string {
	var ae approverError
	if errors.As(err, &ae) {
		return "the approval request failed (" + ae.Error() + ")"
	}
	switch {
	case errors.Is(err, errNoApprover):
		return "nobody is connected to approve it"
	case errors.Is(err, errApprovalWait):
		return "nobody answered within " + seconds(a.timeout)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the call ended while waiting for the answer"
	}
	var ie engine.Interrupt
	if errors.As(err, &ie) {
		return "the call was interrupted while waiting for the answer (" + ie.InterruptReason() + ")"
	}
	return "the approval request failed (" + err.Error() + ")"
}

// seconds formats d as "120s" (or "1.5s").
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

func kindLabel(kind string) string {
	if kind == "" {
		return config.KindCLI
	}
	return kind
}

// quoteCommand shows a command in a blocked message: one line, in
// backquotes, cut when very long.
func quoteCommand(cmd string) string {
	s := strings.Join(strings.Fields(cmd), " ")
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return "`" + s + "`"
}
