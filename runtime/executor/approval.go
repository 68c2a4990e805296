package executor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
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
// denied. Approve should return when ctx is done (the approval timeout);
// an approver that does not is abandoned at that point and the request
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

// KindNeedsScriptApproval reports whether scripts of a session of kind are
// approved as a whole before they run (gateway and automation sessions);
// for a CLI session ("" included) only dangerous terminal commands are.
func KindNeedsScriptApproval(kind string) bool {
	return kind != KindCLI && kind != ""
}

// approvals applies the approval policy of SPEC §8 for an executor:
// approvals.mode ("off", "deny" or "ask"), the approval timeout, and the
// session- and always-scoped decisions it remembers for its lifetime.
// It is safe for concurrent use.
type approvals struct {
	mode    string
	timeout time.Duration

	mu sync.Mutex
	// scriptsAlways: every script of every session is approved.
	scriptsAlways bool
	// scriptsSession: sessions whose scripts are all approved.
	scriptsSession map[string]bool
	// commandsAlways: dangerous-command reasons approved in every session.
	commandsAlways map[string]bool
	// commandsSession: per session, the reasons approved in it.
	commandsSession map[string]map[string]bool
}

func newApprovals(mode string, timeout time.Duration) *approvals {
	switch mode {
	case config.ApprovalsOff, config.ApprovalsDeny, config.ApprovalsAsk:
	default:
		mode = config.ApprovalsAsk
	}
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	return &approvals{
		mode:            mode,
		timeout:         timeout,
		scriptsSession:  map[string]bool{},
		commandsAlways:  map[string]bool{},
		commandsSession: map[string]map[string]bool{},
	}
}

// script decides whether a script of kind may run in session; it returns
// "" when it may, else the reason it is blocked.
func (a *approvals) script(ctx context.Context, ap Approver, session, kind, code string) string {
	if !KindNeedsScriptApproval(kind) || a.mode == config.ApprovalsOff {
		return ""
	}
	who := kindLabel(kind)
	if a.mode == config.ApprovalsDeny {
		return fmt.Sprintf("Script blocked: approvals.mode is %q, so scripts of %s sessions never run, and this one did not. Do the task with individual tool calls, or ask the operator to set approvals.mode to \"ask\".", a.mode, who)
	}
	if a.scriptApproved(session) {
		return ""
	}
	d, err := a.ask(ctx, ap, ApprovalRequest{Type: ApproveScript, Session: session, Code: code})
	if err != nil {
		return "Script blocked: approval is required for " + who + " sessions and " + a.noAnswer(err) + ", so the script did not run. Ask the user to approve it, then run it again."
	}
	if !d.Approved {
		return "Script blocked: the " + who + " session's approval was denied, so the script did not run. Do not resubmit it unchanged; ask the user how to proceed."
	}
	a.mu.Lock()
	switch d.Scope {
	case ScopeSession:
		a.scriptsSession[session] = true
	case ScopeAlways:
		a.scriptsAlways = true
	}
	a.mu.Unlock()
	return ""
}

func (a *approvals) scriptApproved(session string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.scriptsAlways || a.scriptsSession[session]
}

// command decides whether a terminal command may run; "" when it may.
// Only CLI sessions approve commands one by one: in gateway and automation
// sessions the whole script was approved before it ran.
func (a *approvals) command(ctx context.Context, ap Approver, session, kind, command string) string {
	if KindNeedsScriptApproval(kind) || a.mode == config.ApprovalsOff {
		return ""
	}
	reasons := dangerousReasons(command)
	if len(reasons) == 0 {
		return ""
	}
	reason := strings.Join(reasons, "; ")
	shown := quoteCommand(command)
	if a.mode == config.ApprovalsDeny {
		return fmt.Sprintf("Command blocked: %s needs approval (%s) and approvals.mode is %q, so it was not run. Do not retry it; find a safer way, or ask the user to run it themselves.", shown, reason, a.mode)
	}
	if a.commandApproved(session, reasons) {
		return ""
	}
	d, err := a.ask(ctx, ap, ApprovalRequest{Type: ApproveCommand, Session: session, Command: command, Reason: reason})
	if err != nil {
		return "Command blocked: " + shown + " needs approval (" + reason + ") and " + a.noAnswer(err) + ", so it was not run. Ask the user to approve it, or find a safer way."
	}
	if !d.Approved {
		return "Command blocked: " + shown + " needs approval (" + reason + ") and was denied. Do not retry it; find another way or ask the user."
	}
	a.mu.Lock()
	for _, r := range reasons {
		switch d.Scope {
		case ScopeSession:
			m := a.commandsSession[session]
			if m == nil {
				m = map[string]bool{}
				a.commandsSession[session] = m
			}
			m[r] = true
		case ScopeAlways:
			a.commandsAlways[r] = true
		}
	}
	a.mu.Unlock()
	return ""
}

// commandApproved reports whether every reason is already approved for
// session.
func (a *approvals) commandApproved(session string, reasons []string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range reasons {
		if !a.commandsAlways[r] && !a.commandsSession[session][r] {
			return false
		}
	}
	return true
}

// forgetSession drops the session-scoped decisions of session.
func (a *approvals) forgetSession(session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.scriptsSession, session)
	delete(a.commandsSession, session)
}

// Reasons ask can fail without a decision.
var (
	errNoApprover   = errors.New("no approver")
	errApprovalWait = errors.New("approval timed out")
)

// ask puts req to ap within the approval timeout. A decision with an
// unknown scope counts as once.
func (a *approvals) ask(ctx context.Context, ap Approver, req ApprovalRequest) (Decision, error) {
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
	case ScopeSession, ScopeAlways:
	default:
		d.Scope = ScopeOnce
	}
	return d
}

// noAnswer says why no decision came, for a blocked message.
func (a *approvals) noAnswer(err error) string {
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
	var ie *shared.InterruptError
	if errors.As(err, &ie) {
		return "the call was interrupted while waiting for the answer (" + strings.TrimPrefix(ie.Error(), "execution interrupted: ") + ")"
	}
	return "the approval request failed (" + err.Error() + ")"
}

// seconds formats d as "120s" (or "1.5s").
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

func kindLabel(kind string) string {
	if kind == "" {
		return KindCLI
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

// The reasons DangerousCommand gives: stable labels, so that a session or
// always approval of one holds for later commands with the same reason.
const (
	reasonRootDelete      = "delete of /, ~ or a top-level directory"
	reasonRecursiveDelete = "recursive delete"
	reasonXargsDelete     = "delete of the files xargs is given"
	reasonFindDelete      = "delete of the files find matches"
	reasonPrivilege       = "runs as another user (sudo/su)"
	reasonFormat          = "formats or partitions a disk (mkfs)"
	reasonDeviceWrite     = "writes to a disk or memory device"
	reasonChmod777        = "recursive world-writable permissions (chmod -R 777)"
	reasonChmodRoot       = "recursive permission change of /, ~ or a top-level directory"
	reasonChownRoot       = "recursive ownership change of /, ~ or a top-level directory"
	reasonMoveRoot        = "moves /, ~ or a top-level directory"
	reasonForkBomb        = "fork bomb"
	reasonRemoteScript    = "runs a script downloaded from the network (curl | sh)"
	reasonShutdown        = "shuts down or reboots the machine"
	reasonKillAll         = "kills every process (kill -9 -1)"
	reasonKillByName      = "kills processes by name (killall, pkill -9)"
	reasonForcePush       = "rewrites remote history (git push --force)"
	reasonResetHard       = "discards uncommitted changes (git reset --hard)"
	reasonGitClean        = "deletes untracked files (git clean -f)"
	reasonSQLDrop         = "SQL DROP TABLE/DATABASE"
	reasonSQLTruncate     = "SQL TRUNCATE"
	reasonSQLDelete       = "SQL DELETE without WHERE"
	reasonService         = "stops or disables a system service"
	reasonFirewall        = "flushes or disables the firewall"
	reasonHistory         = "clears the shell history"
	reasonCrontab         = "removes all cron jobs (crontab -r)"
	reasonEtc             = "writes to /etc (system configuration)"
	reasonSSH             = "writes to ~/.ssh"
	reasonTooComplex      = "too deeply nested to check automatically"
)

// DangerousCommand reports whether a terminal command needs approval in a
// CLI session, and why (the reasons found, joined with "; "). It is
// modelled on Hermes Agent's dangerous-command patterns, but reads the
// command the way a shell does: quoting and escaping tricks (r'm', "rm",
// \rm, $'\x72m', ${IFS}), paths (/bin/rm), case, wrappers (sudo, env,
// nohup, timeout, xargs, command, exec), sh -c / eval strings, command
// substitutions and pipelines are seen through, while quoted text that is
// only data (grep -r 'rm -rf' docs/, echo "sudo") is not a command.
func DangerousCommand(cmd string) (reason string, dangerous bool) {
	r := dangerousReasons(cmd)
	return strings.Join(r, "; "), len(r) > 0
}

// dangerousReasons lists the reasons cmd is dangerous, each once, in the
// order found.
func dangerousReasons(cmd string) []string {
	c := &cmdCheck{}
	c.check(cmd, 0)
	return c.reasons
}

type cmdCheck struct {
	reasons []string
	work    int // bytes checked so far, nested strings included
}

func (c *cmdCheck) add(reason string) {
	for _, r := range c.reasons {
		if r == reason {
			return
		}
	}
	c.reasons = append(c.reasons, reason)
}

// maxCheckDepth bounds the nesting of sh -c, eval and $(...) followed, and
// maxCheckWork the text checked in all (a command is re-read for each
// level it is nested in); past either the command is flagged as too
// complex to check.
const (
	maxCheckDepth = 8
	maxCheckWork  = 1 << 20
)

var (
	ifsRe      = regexp.MustCompile(`\$\{IFS[^}]*\}|\$IFS\b`)
	spaceRe    = regexp.MustCompile(`\s+`)
	forkBombRe = regexp.MustCompile(`([A-Za-z_:.][\w:.-]*)\s*\(\)\s*\{\s*([\w:.-]+)\s*\|\s*([\w:.-]+)\s*&\s*;?\s*\}`)
	// bash <(curl ...), . <(wget ...), sh -c "$(curl ...)", eval "$(curl ...)".
	remoteSubstRe = regexp.MustCompile(`(^|[\s;&|(])(sh|bash|zsh|dash|ksh|source|\.)\s+(-\S+\s+)*<\(\s*(curl|wget)\b`)
	remoteEvalRe  = regexp.MustCompile(`\b(sh|bash|zsh|dash|ksh|eval|python[0-9.]*|perl|ruby|node)\b[^|;&\n]*(\$\(|` + "`" + `)\s*(curl|wget)\b`)
	sqlDropRe     = regexp.MustCompile(`\bdrop\s+(table|database|schema)\b`)
	sqlTruncateRe = regexp.MustCompile(`\btruncate\s+(table\s+)?[a-z_"` + "`" + `\[]`)
	sqlDeleteRe   = regexp.MustCompile(`\bdelete\s+from\b`)
	sqlWhereRe    = regexp.MustCompile(`\bwhere\b`)
	deviceRe      = regexp.MustCompile(`^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|loop|mapper/|sr|mem$|kmem$|port$)`)
)

func (c *cmdCheck) check(s string, depth int) {
	if strings.TrimSpace(s) == "" {
		return
	}
	c.work += len(s)
	if depth > maxCheckDepth || c.work > maxCheckWork {
		// Nested or repeated beyond reason: a person should look at it.
		c.add(reasonTooComplex)
		return
	}
	s = ifsRe.ReplaceAllString(s, " ")
	flat := spaceRe.ReplaceAllString(s, " ")
	low := strings.ToLower(flat)

	for _, m := range forkBombRe.FindAllStringSubmatch(flat, -1) {
		if m[1] == m[2] && m[2] == m[3] {
			c.add(reasonForkBomb)
		}
	}
	if remoteSubstRe.MatchString(low) || remoteEvalRe.MatchString(low) {
		c.add(reasonRemoteScript)
	}

	pipes, subs := parseShell(s)
	inert := true
	for _, pipe := range pipes {
		var stages []unwrapped
		for _, sc := range pipe {
			u := c.unwrap(sc.words, depth)
			if u.name != "" && !inertCommands[u.name] {
				inert = false
			}
			c.simple(u, depth)
			c.redirects(sc.redirs)
			if u.name != "" && len(stages) > 0 && readsScriptFromStdin(u) {
				for _, prev := range stages {
					switch prev.name {
					case "curl", "wget", "fetch", "aria2c", "http", "https":
						c.add(reasonRemoteScript)
					}
				}
				if prev := stages[len(stages)-1]; prev.name == "echo" || prev.name == "printf" {
					c.check(strings.Join(prev.args, " "), depth+1)
				}
			}
			stages = append(stages, u)
		}
	}
	for _, sub := range subs {
		c.check(sub, depth+1)
	}
	if !inert {
		if sqlDropRe.MatchString(low) {
			c.add(reasonSQLDrop)
		}
		if sqlTruncateRe.MatchString(low) {
			c.add(reasonSQLTruncate)
		}
		for _, loc := range sqlDeleteRe.FindAllStringIndex(low, -1) {
			stmt := low[loc[1]:]
			if i := strings.IndexByte(stmt, ';'); i >= 0 {
				stmt = stmt[:i]
			}
			if !sqlWhereRe.MatchString(stmt) {
				c.add(reasonSQLDelete)
				break
			}
		}
	}
}

// inertCommands only print or search text: SQL in their arguments is data
// (grep -rn "DROP TABLE" migrations/).
var inertCommands = map[string]bool{
	"echo": true, "printf": true, "grep": true, "egrep": true, "fgrep": true, "rg": true,
	"ag": true, "ack": true, "cat": true, "head": true, "tail": true, "less": true,
	"more": true, "wc": true, "sort": true, "uniq": true, "cut": true, "tr": true,
	"awk": true, "sed": true, "jq": true, "man": true, "true": true, "false": true,
	":": true, "test": true, "[": true, "ls": true, "diff": true,
}

// unwrapped is a simple command with its wrappers (sudo, env, xargs, ...)
// taken off.
type unwrapped struct {
	name string   // base name, lower-case
	args []string // its arguments
	via  []string // wrappers it was found behind
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true, "mksh": true, "yash": true, "fish": true, "csh": true, "tcsh": true}

var interpreters = map[string]bool{"python": true, "python2": true, "python3": true, "perl": true, "ruby": true, "node": true, "php": true, "pwsh": true}

// cmdName is the base name of a command word, lower-case.
func cmdName(w string) string {
	if i := strings.LastIndexAny(w, `/\`); i >= 0 {
		w = w[i+1:]
	}
	w = strings.ToLower(w)
	return strings.TrimSuffix(w, ".exe")
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i, r := range w[:eq] {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

var shellKeywords = map[string]bool{"!": true, "{": true, "}": true, "if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true, "while": true, "until": true, "time": true, "coproc": true}

// skipOptions skips leading options of a wrapper; withArg lists the options
// that take the next word as their value.
func skipOptions(args []string, withArg string) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") && len(a) == 2 && strings.Contains(withArg, a[1:]) && len(args) > 0 {
			args = args[1:]
		}
	}
	return args
}

func (c *cmdCheck) unwrap(words []string, depth int) unwrapped {
	var u unwrapped
	for {
		for len(words) > 0 && (isAssignment(words[0]) || shellKeywords[words[0]]) {
			words = words[1:]
		}
		if len(words) == 0 {
			u.name, u.args = "", nil
			return u
		}
		u.name, u.args = cmdName(words[0]), words[1:]
		switch u.name {
		case "sudo", "doas", "pkexec", "run0":
			c.add(reasonPrivilege)
			words = skipOptions(u.args, "ugpChDrtUT")
		case "su":
			c.add(reasonPrivilege)
			for i, a := range u.args {
				if (a == "-c" || a == "--command") && i+1 < len(u.args) {
					c.check(u.args[i+1], depth+1)
				} else if v, ok := strings.CutPrefix(a, "--command="); ok {
					c.check(v, depth+1)
				}
			}
			return u
		case "env":
			rest := u.args
			for len(rest) > 0 {
				a := rest[0]
				switch {
				case a == "-S" || a == "--split-string":
					if len(rest) > 1 {
						c.check(strings.Join(rest[1:], " "), depth+1)
					}
					return u
				case a == "-u" || a == "-C" || a == "--unset" || a == "--chdir":
					rest = rest[min(2, len(rest)):]
				case a == "--":
					rest = rest[1:]
				case strings.HasPrefix(a, "-") || isAssignment(a):
					rest = rest[1:]
				default:
					goto envDone
				}
			}
		envDone:
			words = rest
		case "nohup", "command", "builtin", "exec", "setsid", "unbuffer", "busybox", "stdbuf", "nice", "ionice":
			words = skipOptions(u.args, "nocp")
		case "timeout":
			words = skipOptions(u.args, "sk")
			if len(words) > 0 {
				words = words[1:] // the duration
			}
		case "chroot":
			words = skipOptions(u.args, "")
			if len(words) > 0 {
				words = words[1:] // the new root
			}
		case "xargs":
			u.via = append(u.via, "xargs")
			words = skipOptions(u.args, "IiLlnPsdEea")
		default:
			if shells[u.name] {
				for i, a := range u.args {
					if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
						for _, b := range u.args[i+1:] {
							if !strings.HasPrefix(b, "-") {
								c.check(b, depth+1)
								break
							}
						}
						break
					}
				}
			}
			if u.name == "eval" {
				c.check(strings.Join(u.args, " "), depth+1)
			}
			return u
		}
		if len(u.via) == 0 || u.via[len(u.via)-1] != u.name {
			u.via = append(u.via, u.name)
		}
	}
}

// readsScriptFromStdin reports whether a pipeline stage runs what it reads
// on stdin as code (sh, bash -s, python3 -, node).
func readsScriptFromStdin(u unwrapped) bool {
	if !shells[u.name] && !interpreters[u.name] {
		return false
	}
	for _, a := range u.args {
		switch {
		case a == "-" || a == "-s":
			return true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
			if strings.ContainsAny(a[1:], "cme") {
				return false // -c CODE, -m MODULE, -e CODE: stdin is data
			}
		case strings.HasPrefix(a, "--"):
		default:
			return false // a script file
		}
	}
	return true
}

// shortFlag reports whether a is a short-option cluster containing one of
// the letters.
func shortFlag(a, letters string) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], letters)
}

func (c *cmdCheck) simple(u unwrapped, depth int) {
	args := u.args
	name := u.name
	if strings.HasPrefix(name, "mkfs.") || strings.HasPrefix(name, "mkfs_") {
		name = "mkfs"
	}
	switch name {
	case "rm", "unlink":
		recursive, broad := false, false
		opts := true
		for _, a := range args {
			switch {
			case opts && a == "--":
				opts = false
			case opts && a == "--no-preserve-root":
				broad = true
			case opts && (a == "--recursive" || a == "--dir"):
				recursive = recursive || a == "--recursive"
			case opts && strings.HasPrefix(a, "--"):
			case opts && shortFlag(a, "rR"):
				recursive = true
			case opts && strings.HasPrefix(a, "-") && a != "-":
			default:
				if broadPath(a) {
					broad = true
				}
			}
		}
		switch {
		case broad:
			c.add(reasonRootDelete)
		case recursive:
			c.add(reasonRecursiveDelete)
		}
		if slices.Contains(u.via, "xargs") {
			c.add(reasonXargsDelete)
		}
	case "shred", "wipe", "srm":
		for _, a := range args {
			if deviceRe.MatchString(a) {
				c.add(reasonDeviceWrite)
			} else if broadPath(a) {
				c.add(reasonRootDelete)
			}
		}
	case "mkfs", "mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs", "newfs", "fdisk", "sfdisk", "gdisk", "sgdisk", "parted", "cfdisk":
		for _, a := range args {
			if a == "-l" || a == "--list" || a == "--version" || a == "-v" {
				return
			}
		}
		c.add(reasonFormat)
	case "dd":
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				c.writeTarget(v)
			}
		}
	case "tee":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				c.writeTarget(a)
			}
		}
	case "cp", "mv", "install", "ln", "rsync", "truncate":
		pos := positional(args)
		if len(pos) > 0 {
			c.writeTarget(pos[len(pos)-1])
		}
		if u.name == "mv" && len(pos) > 1 {
			for _, a := range pos[:len(pos)-1] {
				if broadPath(a) {
					c.add(reasonMoveRoot)
				}
			}
		}
	case "sed", "perl":
		inPlace := false
		for _, a := range args {
			if strings.HasPrefix(a, "-i") || strings.HasPrefix(a, "--in-place") || (u.name == "perl" && shortFlag(a, "i")) {
				inPlace = true
			}
		}
		if inPlace {
			for _, a := range positional(args) {
				c.writeTarget(a)
			}
		}
	case "chmod":
		recursive, open, broad := false, false, false
		for _, a := range args {
			switch {
			case a == "--recursive" || (shortFlag(a, "R") && !isMode(a)):
				recursive = true
			case isWorldWritable(a):
				open = true
			case !strings.HasPrefix(a, "-") && broadPath(a):
				broad = true
			}
		}
		if recursive && open {
			c.add(reasonChmod777)
		}
		if recursive && broad {
			c.add(reasonChmodRoot)
		}
	case "chown", "chgrp":
		recursive, broad := false, false
		pos := 0
		for _, a := range args {
			switch {
			case a == "--recursive" || shortFlag(a, "R"):
				recursive = true
			case strings.HasPrefix(a, "-"):
			default:
				if pos > 0 && broadPath(a) { // the first positional is the owner
					broad = true
				}
				pos++
			}
		}
		if recursive && broad {
			c.add(reasonChownRoot)
		}
	case "shutdown", "reboot", "halt", "poweroff", "kexec":
		if slices.Contains(args, "-c") || slices.Contains(args, "--help") {
			return
		}
		c.add(reasonShutdown)
	case "init", "telinit":
		if len(args) > 0 && (args[0] == "0" || args[0] == "6") {
			c.add(reasonShutdown)
		}
	case "systemctl":
		if pos := positional(args); len(pos) > 0 {
			switch strings.ToLower(pos[0]) {
			case "reboot", "poweroff", "halt", "kexec", "soft-reboot":
				c.add(reasonShutdown)
			case "stop", "disable", "mask", "kill", "isolate":
				c.add(reasonService)
			}
		}
	case "service", "rc-service":
		pos := positional(args)
		if len(pos) > 1 && (pos[1] == "stop" || pos[1] == "disable") {
			c.add(reasonService)
		}
	case "kill":
		i := 0
		if i < len(args) {
			switch a := args[i]; {
			case a == "-l" || a == "-L":
				return
			case a == "-s" || a == "-n":
				i += 2
			case a == "--":
			case strings.HasPrefix(a, "-"):
				i++ // the signal
			}
		}
		for _, a := range args[min(i, len(args)):] {
			if a == "-1" {
				c.add(reasonKillAll)
			}
		}
	case "killall5":
		c.add(reasonKillAll)
	case "killall":
		c.add(reasonKillByName)
	case "pkill":
		for i, a := range args {
			l := strings.ToLower(a)
			if l == "-9" || l == "-kill" || l == "-sigkill" || l == "--signal=9" || l == "--signal=kill" ||
				((l == "--signal" || l == "-s") && i+1 < len(args) && (args[i+1] == "9" || strings.EqualFold(args[i+1], "kill"))) {
				c.add(reasonKillByName)
			}
		}
	case "git":
		c.git(args)
	case "iptables", "ip6tables", "iptables-legacy", "iptables-nft":
		for _, a := range args {
			if a == "-F" || a == "--flush" || a == "-X" || a == "--delete-chain" || (strings.HasPrefix(a, "-F") && len(a) > 2 && a[1] != '-') {
				c.add(reasonFirewall)
			}
		}
	case "nft":
		if len(args) >= 2 && args[0] == "flush" && args[1] == "ruleset" {
			c.add(reasonFirewall)
		}
	case "ufw":
		if pos := positional(args); len(pos) > 0 && (pos[0] == "disable" || pos[0] == "reset") {
			c.add(reasonFirewall)
		}
	case "history":
		for _, a := range args {
			if shortFlag(a, "c") {
				c.add(reasonHistory)
			}
		}
	case "crontab":
		for _, a := range args {
			if shortFlag(a, "r") {
				c.add(reasonCrontab)
			}
		}
	case "find":
		for i, a := range args {
			switch a {
			case "-delete":
				c.add(reasonFindDelete)
			case "-exec", "-execdir", "-ok", "-okdir":
				if i+1 < len(args) {
					switch cmdName(args[i+1]) {
					case "rm", "shred", "unlink", "rmdir":
						c.add(reasonFindDelete)
					case "sh", "bash":
						c.check(strings.Join(args[i+1:], " "), depth+1)
					}
				}
			}
		}
	}
}

func (c *cmdCheck) git(args []string) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch a := args[0]; a {
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env":
			args = args[min(2, len(args)):]
		default:
			args = args[1:]
		}
	}
	if len(args) == 0 {
		return
	}
	sub, rest := strings.ToLower(args[0]), args[1:]
	switch sub {
	case "push":
		for _, a := range rest {
			if a == "--force" || a == "--mirror" || strings.HasPrefix(a, "--force-with-lease") || a == "--force-if-includes" ||
				shortFlag(a, "f") || (strings.HasPrefix(a, "+") && len(a) > 1) {
				c.add(reasonForcePush)
			}
		}
	case "reset":
		if slices.Contains(rest, "--hard") {
			c.add(reasonResetHard)
		}
	case "clean":
		for _, a := range rest {
			if a == "--force" || shortFlag(a, "f") {
				c.add(reasonGitClean)
			}
		}
	}
}

// positional drops the options (words starting with "-") of args.
func positional(args []string) []string {
	var out []string
	opts := true
	for _, a := range args {
		if opts && a == "--" {
			opts = false
			continue
		}
		if opts && strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// redirects checks where a simple command's output goes.
func (c *cmdCheck) redirects(rs []redirect) {
	for _, r := range rs {
		if strings.Contains(r.op, ">") {
			c.writeTarget(r.target)
			if (r.op == ">" || r.op == ">|" || r.op == "&>") && strings.HasSuffix(strings.ToLower(r.target), "_history") {
				c.add(reasonHistory)
			}
		}
	}
}

// writeTarget checks a path something is written to.
func (c *cmdCheck) writeTarget(p string) {
	lp := strings.ToLower(strings.TrimSpace(p))
	switch {
	case deviceRe.MatchString(lp):
		c.add(reasonDeviceWrite)
	case lp == "/etc" || strings.HasPrefix(lp, "/etc/") || strings.HasPrefix(lp, "/private/etc/"):
		c.add(reasonEtc)
	case strings.HasPrefix(lp, "~/.ssh") || strings.HasPrefix(lp, "$home/.ssh") || strings.HasPrefix(lp, "${home}/.ssh") ||
		strings.HasPrefix(lp, ".ssh/") || lp == ".ssh" || strings.Contains(lp, "/.ssh/") || strings.HasSuffix(lp, "/.ssh"):
		c.add(reasonSSH)
	}
}

// isMode reports whether a chmod argument is a mode like -rwx (a mode
// removing permissions), not an option.
func isMode(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	return strings.Trim(a[1:], "rwxXst") == ""
}

// isWorldWritable reports whether a chmod mode makes files writable by
// everyone (777, 0777, 666, a+w, o+rwx, ...).
func isWorldWritable(m string) bool {
	if m == "" || m[0] == '-' {
		return false
	}
	if n, err := strconv.ParseUint(m, 8, 32); err == nil && len(m) >= 3 {
		return n&0o002 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		who, perm, ok := strings.Cut(clause, "+")
		if !ok {
			who, perm, ok = strings.Cut(clause, "=")
		}
		if ok && (who == "" || strings.ContainsAny(who, "oa")) && strings.Contains(perm, "w") {
			return true
		}
	}
	return false
}

// broadPath reports whether p is /, ~, a top-level directory, a home
// directory, the current or a parent directory, or everything in one
// (/*, ~/*, *).
func broadPath(p string) bool {
	p = strings.TrimSpace(p)
	if p == "" {
		return false
	}
	for _, home := range []string{"$HOME", "${HOME}"} {
		if rest, ok := strings.CutPrefix(p, home); ok && (rest == "" || rest[0] == '/') {
			p = "~" + rest
		}
	}
	wasRoot := strings.HasPrefix(p, "/")
	for {
		t := p
		for _, suf := range []string{"/*", "/.*", "/.", "/"} {
			t = strings.TrimSuffix(t, suf)
		}
		if t == p {
			break
		}
		p = t
	}
	if p == "" {
		return wasRoot
	}
	switch p {
	case "~", ".", "..", "*", ".*":
		return true
	}
	if strings.HasPrefix(p, "~") && !strings.Contains(p, "/") {
		return true // ~user
	}
	if strings.HasPrefix(p, "/") {
		var parts []string
		for _, s := range strings.Split(p, "/") {
			if s != "" && s != "." {
				parts = append(parts, s)
			}
		}
		if len(parts) <= 1 {
			return true
		}
		switch strings.ToLower(parts[0]) {
		case "home", "users":
			return len(parts) == 2
		}
		return false
	}
	// ../.., ./.. and the like.
	for _, s := range strings.Split(p, "/") {
		if s != "." && s != ".." && s != "" {
			return false
		}
	}
	return true
}

// redirect is one output or input redirection of a simple command.
type redirect struct {
	op, target string
}

// simpleCmd is a command's words (quotes removed) and its redirections.
type simpleCmd struct {
	words  []string
	redirs []redirect
}

// shellParser splits a command line the way a POSIX shell reads it, well
// enough to find the commands it runs: words with their quotes removed,
// pipelines, and the text of command and process substitutions (returned
// to be checked on their own).
type shellParser struct {
	s       string
	i       int
	pipes   [][]simpleCmd
	cur     []simpleCmd
	cmd     simpleCmd
	word    strings.Builder
	inWord  bool
	pending string // a redirection operator waiting for its target
	subs    []string
}

func parseShell(s string) (pipes [][]simpleCmd, subs []string) {
	p := &shellParser{s: s}
	p.run()
	return p.pipes, p.subs
}

func (p *shellParser) endWord() {
	if !p.inWord {
		return
	}
	w := p.word.String()
	p.word.Reset()
	p.inWord = false
	if p.pending != "" {
		p.cmd.redirs = append(p.cmd.redirs, redirect{p.pending, w})
		p.pending = ""
		return
	}
	p.cmd.words = append(p.cmd.words, w)
}

func (p *shellParser) endCmd() {
	p.endWord()
	p.pending = ""
	if len(p.cmd.words) > 0 || len(p.cmd.redirs) > 0 {
		p.cur = append(p.cur, p.cmd)
	}
	p.cmd = simpleCmd{}
}

func (p *shellParser) endPipe() {
	p.endCmd()
	if len(p.cur) > 0 {
		p.pipes = append(p.pipes, p.cur)
	}
	p.cur = nil
}

func (p *shellParser) peek(off int) byte {
	if p.i+off < len(p.s) {
		return p.s[p.i+off]
	}
	return 0
}

func (p *shellParser) run() {
	s := p.s
	for p.i < len(s) {
		c := s[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			p.endWord()
			p.i++
		case c == '\n' || c == ';':
			p.endPipe()
			p.i++
		case c == '&':
			switch p.peek(1) {
			case '&':
				p.endPipe()
				p.i += 2
			case '>':
				p.endWord()
				p.i += 2
				p.pending = "&>"
				if p.peek(0) == '>' {
					p.i++
					p.pending = "&>>"
				}
			default:
				p.endPipe()
				p.i++
			}
		case c == '|':
			switch p.peek(1) {
			case '|':
				p.endPipe()
				p.i += 2
			case '&':
				p.endCmd()
				p.i += 2
			default:
				p.endCmd()
				p.i++
			}
		case c == '(' || c == ')':
			p.endPipe()
			p.i++
		case c == '<' || c == '>':
			if p.peek(1) == '(' {
				content, end := matchParen(s, p.i+1)
				p.subs = append(p.subs, content)
				p.word.WriteString(string(c) + "(…)")
				p.inWord = true
				p.i = end
				continue
			}
			if p.inWord && isDigits(p.word.String()) {
				p.word.Reset()
				p.inWord = false
			} else {
				p.endWord()
			}
			j := p.i + 1
			for j < len(s) && j-p.i < 3 && strings.IndexByte("<>&|", s[j]) >= 0 {
				j++
			}
			p.pending = s[p.i:j]
			p.i = j
		case c == '\'':
			j := strings.IndexByte(s[p.i+1:], '\'')
			if j < 0 {
				j = len(s) - p.i - 1
			}
			p.word.WriteString(s[p.i+1 : p.i+1+j])
			p.inWord = true
			p.i += j + 2
		case c == '$' && p.peek(1) == '\'':
			p.i += 2
			p.ansiC()
		case c == '$' && p.peek(1) == '(':
			content, end := matchParen(s, p.i+1)
			p.subs = append(p.subs, content)
			p.word.WriteString("$(…)")
			p.inWord = true
			p.i = end
		case c == '`':
			p.backtick()
		case c == '"':
			p.i++
			p.doubleQuoted()
		case c == '\\':
			if p.peek(1) == '\n' {
				p.i += 2
				continue
			}
			if p.i+1 < len(s) {
				p.word.WriteByte(s[p.i+1])
			}
			p.inWord = true
			p.i += 2
		case c == '#' && !p.inWord:
			for p.i < len(s) && s[p.i] != '\n' {
				p.i++
			}
		default:
			p.word.WriteByte(c)
			p.inWord = true
			p.i++
		}
	}
	p.endPipe()
}

// doubleQuoted reads a "..." word part; p.i is just past the opening quote.
func (p *shellParser) doubleQuoted() {
	s := p.s
	p.inWord = true
	for p.i < len(s) {
		c := s[p.i]
		switch {
		case c == '"':
			p.i++
			return
		case c == '\\' && p.i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[p.i+1]) >= 0:
			if s[p.i+1] != '\n' {
				p.word.WriteByte(s[p.i+1])
			}
			p.i += 2
		case c == '$' && p.peek(1) == '(':
			content, end := matchParen(s, p.i+1)
			p.subs = append(p.subs, content)
			p.word.WriteString("$(…)")
			p.i = end
		case c == '`':
			p.backtick()
		default:
			p.word.WriteByte(c)
			p.i++
		}
	}
}

// backtick reads a `...` substitution; p.i is at the opening backquote.
func (p *shellParser) backtick() {
	s := p.s
	var b strings.Builder
	j := p.i + 1
	for j < len(s) && s[j] != '`' {
		if s[j] == '\\' && j+1 < len(s) {
			j++
		}
		b.WriteByte(s[j])
		j++
	}
	p.subs = append(p.subs, b.String())
	p.word.WriteString("`…`")
	p.inWord = true
	p.i = j + 1
}

// ansiC reads a $'...' word part; p.i is just past the opening quote.
func (p *shellParser) ansiC() {
	s := p.s
	p.inWord = true
	for p.i < len(s) {
		c := s[p.i]
		if c == '\'' {
			p.i++
			return
		}
		if c != '\\' || p.i+1 >= len(s) {
			p.word.WriteByte(c)
			p.i++
			continue
		}
		e := s[p.i+1]
		p.i += 2
		switch e {
		case 'n':
			p.word.WriteByte('\n')
		case 't':
			p.word.WriteByte('\t')
		case 'x':
			n, k := 0, 0
			for k < 2 && p.i < len(s) && isHex(s[p.i]) {
				n = n*16 + hexVal(s[p.i])
				p.i++
				k++
			}
			p.word.WriteByte(byte(n))
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, k := int(e-'0'), 1
			for k < 3 && p.i < len(s) && s[p.i] >= '0' && s[p.i] <= '7' {
				n = n*8 + int(s[p.i]-'0')
				p.i++
				k++
			}
			p.word.WriteByte(byte(n))
		default:
			p.word.WriteByte(e)
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

func isDigits(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}

// matchParen returns the text inside the parenthesis opening at s[open]
// and the index just past its match (the end of s when unbalanced).
func matchParen(s string, open int) (string, int) {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '\'':
			if k := strings.IndexByte(s[j+1:], '\''); k >= 0 {
				j += k + 1
			} else {
				j = len(s)
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[open+1 : j], j + 1
			}
		}
	}
	if open+1 > len(s) {
		return "", len(s)
	}
	return s[open+1:], len(s)
}
