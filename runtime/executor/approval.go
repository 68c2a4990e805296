package executor

import (
	"context"
	"time"
)

// Session kinds (SPEC §8): who is driving the session decides what needs
// approval.
const (
	// KindCLI is a local CLI/TUI/desktop session with a user typing: no
	// whole-script approval; terminal() commands flagged as dangerous are
	// approved one by one.
	KindCLI = "cli"
	// KindGateway is a messaging-gateway session: the whole script is
	// approved before it runs.
	KindGateway = "gateway"
	// KindAutomation is an injected or automated turn: the whole script is
	// approved before it runs.
	KindAutomation = "automation"
)

// Approval request types.
const (
	ApproveScript  = "script"
	ApproveCommand = "command"
)

// Approval scopes: how long an approval holds.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
	ScopeAlways  = "always"
)

// ApprovalRequest is what an [Approver] is asked.
type ApprovalRequest struct {
	// Type is ApproveScript or ApproveCommand.
	Type string `json:"type"`
	// Session is the session the script runs in.
	Session string `json:"session"`
	// Code is the script, for ApproveScript.
	Code string `json:"code,omitempty"`
	// Command is the terminal command, for ApproveCommand.
	Command string `json:"command,omitempty"`
	// Reason says why approval is needed (for a command: what the
	// dangerous-command check matched).
	Reason string `json:"reason,omitempty"`
}

// Decision is an [Approver]'s answer.
type Decision struct {
	Approved bool `json:"approved"`
	// Scope is ScopeOnce (the default), ScopeSession or ScopeAlways;
	// session and always approvals are remembered.
	Scope string `json:"scope,omitempty"`
}

// Approver answers approval requests (the serve client, a terminal
// prompt, an embedder's policy). An error means no answer: the request is
// denied.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Approve implements Approver.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}

// approvals applies the approval policy of SPEC §8 for an executor.
type approvals struct {
	mode    string
	timeout time.Duration
}

func newApprovals(mode string, timeout time.Duration) *approvals {
	return &approvals{mode: mode, timeout: timeout}
}

// script decides whether a script of kind may run in session; it returns
// "" when it may, else the reason it is blocked.
func (a *approvals) script(ctx context.Context, ap Approver, session, kind, code string) string {
	return ""
}

// command decides whether a terminal command may run; "" when it may.
func (a *approvals) command(ctx context.Context, ap Approver, session, kind, command string) string {
	return ""
}

// forgetSession drops the session-scoped decisions of session.
func (a *approvals) forgetSession(session string) {}
