package executor

import (
	"context"

	"github.com/hermes-agent/hermes-wasm-exec/internal/approval"
)

// The approval API. Session kinds (config.KindCLI, config.KindGateway,
// config.KindAutomation), request types (config.ApproveScript,
// config.ApproveCommand) and scopes (config.ScopeOnce, config.ScopeSession,
// config.ScopeAlways) are in config; the policy that decides what needs
// approval is described in docs/behaviour.md §8.

// ApprovalRequest is what an [Approver] is asked: a whole script
// (config.ApproveScript) or a terminal command (config.ApproveCommand),
// the session, and why approval is needed.
type ApprovalRequest struct {
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
	// Approved lets the script or command run.
	Approved bool `json:"approved"`
	// Scope is how long the answer holds: config.ScopeOnce (the default,
	// this request only), config.ScopeSession (the rest of the session) or
	// config.ScopeAlways (every session, for the executor's lifetime).
	// Session and always decisions are remembered, so the same request is
	// not asked again.
	Scope string `json:"scope,omitempty"`
}

// Approver answers approval requests (the serve client, a terminal
// prompt, an embedder's policy). An error means no answer: the request
// is denied. Approve should return when ctx is done (the approval
// timeout); an approver that does not is abandoned then and the request
// denied.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Approve implements [Approver].
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}

// policyApprover is a as the approval policy asks it (nil for nil, so
// that the policy sees that nobody answers). The conversions compile only
// while these types have internal/approval's fields, tags included, so
// the two stay in step.
func policyApprover(a Approver) approval.Approver {
	if a == nil {
		return nil
	}
	return approval.Func(func(ctx context.Context, r approval.Request) (approval.Decision, error) {
		d, err := a.Approve(ctx, ApprovalRequest(r))
		return approval.Decision(d), err
	})
}
