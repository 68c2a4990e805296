package executor

import (
	"github.com/hermes-agent/hermes-wasm-exec/internal/approval"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cmdcheck"
)

// The approval API: the policy itself is internal/approval's; these are
// the same types. Session kinds (config.KindCLI, config.KindGateway,
// config.KindAutomation), request types (config.ApproveScript, config.ApproveCommand)
// and scopes (config.ScopeOnce, config.ScopeSession, config.ScopeAlways) are in config.
type (
	// ApprovalRequest is what an [Approver] is asked: a whole script
	// (config.ApproveScript) or a terminal command (config.ApproveCommand),
	// the session, and why approval is needed.
	ApprovalRequest = approval.Request
	// Decision is an [Approver]'s answer: approved or not, and for how long
	// (config.ScopeOnce, config.ScopeSession or config.ScopeAlways).
	Decision = approval.Decision
	// Approver answers approval requests (the serve client, a terminal
	// prompt, an embedder's policy). An error means no answer: the request
	// is denied. Approve should return when ctx is done (the approval
	// timeout); an approver that does not is abandoned then and the request
	// denied.
	Approver = approval.Approver
	// ApproverFunc adapts a function to [Approver].
	ApproverFunc = approval.Func
)

// DangerousCommand reports whether a terminal command needs approval in a
// CLI session, and why (the reasons found, joined with "; "). The check
// itself, its rules and what it can and cannot see are described in
// package internal/cmdcheck: it parses the command as a shell does, flags
// what it cannot read for certain (a command name only known at run time,
// eval, a program piped into a shell, a syntax error), and is defence in
// depth, not a boundary. It reads cmd as a POSIX sh line (bash and dash),
// as terminal() runs it on Linux, macOS, Git Bash and the remote
// backends; a CLI session on a Windows host without Git Bash, whose
// commands cmd.exe runs, reads them as cmd.exe does instead
// (docs/behaviour.md §8).
func DangerousCommand(cmd string) (reason string, dangerous bool) {
	return cmdcheck.Dangerous(cmd)
}
