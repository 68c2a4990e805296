package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// EnvOptions configures [ScrubEnv].
type EnvOptions struct {
	// Passthrough lists exact variable names that pass even when secret-named: the entries of
	// terminal.env_passthrough plus names registered by skills through
	// required_environment_variables. Host-managed credentials ([config.IsManagedCredential]) are
	// ignored here; use [RefusedPassthrough] to find them and warn. Default empty.
	Passthrough []string
	// Windows applies the Windows rules: the system variables of docs/behaviour.md §4
	// rule 5 pass, and names compare case-insensitively, as Windows itself does. Callers
	// pass goruntime.GOOS == "windows". Default false.
	Windows bool
	// Managed names further credentials the host holds, such as the variable holding the
	// web search provider's key (web.search.api_key_env). They are treated like
	// [config.ManagedCredentials]: always dropped, even when named in Passthrough or not
	// secret-looking. Default empty.
	Managed []string
	// Delegated marks a script run for a delegated child (a subagent), as Hermes marks its
	// delegate_task children: the environment gets HERMES_DELEGATED_CHILD_CONTEXT, and loses
	// the Kanban worker identity ((kanbanWorkerVars)) even when passed through, so that the
	// child cannot act as the parent's Kanban worker. The same applies, whatever Delegated
	// says, when the host's own environment carries the marker (the executor itself runs for
	// a delegated child). Default false.
	Delegated bool
}

// delegatedChildMarker is the variable that marks a delegated child's processes, as Hermes
// names it (agent/delegation_context.py). Its value is the Kanban board root the child is
// fenced from, or "1" for every board.
const delegatedChildMarker = "HERMES_DELEGATED_CHILD_CONTEXT"

// kanbanWorkerVars are the Kanban worker identity that a delegated child's environment never
// carries (Hermes's KANBAN_ENV_KEYS): without them a descendant cannot complete or claim the
// parent's task.
var kanbanWorkerVars = []string{
	"HERMES_KANBAN_TASK", "HERMES_KANBAN_RUN_ID", "HERMES_KANBAN_CLAIM_LOCK",
	"HERMES_KANBAN_GOAL_MODE", "HERMES_KANBAN_GOAL_MAX_TURNS",
}

// secretMarkers are the substrings (compared upper-case) that make a name secret (rule 2).
var secretMarkers = []string{
	"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASSWD", "AUTH",
	"DSN", "WEBHOOK", "CREDS", "BEARER", "APIKEY",
}

// safePrefixes are the name prefixes that pass (rule 3).
var safePrefixes = []string{
	"PATH", "HOME", "USER", "LANG", "LC_", "TERM", "TMPDIR", "TMP", "TEMP",
	"SHELL", "LOGNAME", "XDG_", "PYTHONPATH", "VIRTUAL_ENV", "CONDA",
}

// hermesAllowed are the HERMES_* names that pass by exact name (rule 4): Hermes's
// _HERMES_CHILD_ALLOWED, the runtime-location variables and the delegated-child marker.
var hermesAllowed = []string{"HERMES_HOME", "HERMES_PROFILE", "HERMES_CONFIG", "HERMES_ENV", delegatedChildMarker}

// windowsSystem are the Windows system variables that pass on Windows (rule 5).
var windowsSystem = []string{
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "OS",
	"PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS", "PUBLIC", "ALLUSERSPROFILE",
	"PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)", "PROGRAMW6432", "APPDATA",
	"LOCALAPPDATA", "USERPROFILE", "USERDOMAIN", "USERNAME", "HOMEDRIVE", "HOMEPATH",
	"COMPUTERNAME",
}

// ScrubEnv builds a script's environment from the host's environ (KEY=VALUE entries, as
// returned by os.Environ) by applying the allow-list of docs/behaviour.md §4. A
// host-managed credential ([config.IsManagedCredential], or named in opts.Managed) is dropped
// whatever its name looks like; every other variable takes the first rule that matches:
//
//  1. its name is in opts.Passthrough: kept;
//  2. its name contains, case-insensitively, KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL,
//     PASSWD, AUTH, DSN, WEBHOOK, CREDS, BEARER or APIKEY: dropped;
//  3. its name starts with PATH, HOME, USER, LANG, LC_, TERM, TMPDIR, TMP, TEMP, SHELL,
//     LOGNAME, XDG_, PYTHONPATH, VIRTUAL_ENV or CONDA: kept;
//  4. its name is HERMES_HOME, HERMES_PROFILE, HERMES_CONFIG, HERMES_ENV or
//     HERMES_DELEGATED_CHILD_CONTEXT: kept;
//  5. with opts.Windows, its name is one of the Windows system variables: kept;
//  6. anything else: dropped.
//
// Then, for a delegated child (opts.Delegated, or a host environment carrying
// [delegatedChildMarker]), the [kanbanWorkerVars] are removed, even when passed through,
// and the marker is set: to the host's value, else to "1" (fenced from every board), as
// Hermes's scrub_kanban_env does (Hermes sets the board root it knows instead of "1").
//
// kept preserves the input order. Entries without "=" or with an empty name are dropped.
// droppedHermes lists, sorted and without duplicates, the HERMES_* names dropped by rule 6
// (secret-named HERMES_* variables dropped by rule 2 are not listed); pass it to
// [DroppedHermesLine] for the debug log.
//
// # Notes
//
// With opts.Windows every comparison ignores case, because Windows variable names are
// case-insensitive ("Path" is the usual spelling of PATH there). Otherwise rules 1, 3 and 4
// compare names exactly, and only rule 2 and the managed credentials ignore case.
//
// ScrubEnv does not inject anything else; the executor adds HERMES_RPC_SOCKET,
// HERMES_RPC_TOKEN, TZ, HOME and the PYTHON* settings afterwards.
func ScrubEnv(environ []string, opts EnvOptions) (kept []string, droppedHermes []string) {
	fold := func(s string) string { return s }
	if opts.Windows {
		fold = strings.ToUpper
	}
	managed := make(map[string]bool, len(opts.Managed))
	for _, n := range opts.Managed {
		managed[strings.ToUpper(n)] = true
	}
	pass := make(map[string]bool, len(opts.Passthrough))
	for _, n := range opts.Passthrough {
		if n != "" {
			pass[fold(n)] = true
		}
	}

	kept = make([]string, 0, len(environ))
	seenHermes := map[string]bool{}
	marker := ""
	for _, entry := range environ {
		name, value, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			continue
		}
		key := fold(name)
		upper := strings.ToUpper(name)
		if key == delegatedChildMarker {
			marker = value
		}
		switch {
		case managed[upper] || config.IsManagedCredential(name): // Credentials the host holds never pass.
		case pass[key]: // Rule 1.
			kept = append(kept, entry)
		case containsAny(upper, secretMarkers): // Rule 2.
		case hasAnyPrefix(key, safePrefixes): // Rule 3.
			kept = append(kept, entry)
		case slices.Contains(hermesAllowed, key): // Rule 4.
			kept = append(kept, entry)
		case opts.Windows && slices.Contains(windowsSystem, upper): // Rule 5.
			kept = append(kept, entry)
		default: // Rule 6.
			if strings.HasPrefix(key, "HERMES_") && !seenHermes[name] {
				seenHermes[name] = true
				droppedHermes = append(droppedHermes, name)
			}
		}
	}
	if opts.Delegated || marker != "" {
		kept = slices.DeleteFunc(kept, func(entry string) bool {
			name, _, _ := strings.Cut(entry, "=")
			key := fold(name)
			return key == delegatedChildMarker || slices.Contains(kanbanWorkerVars, key)
		})
		if marker == "" {
			marker = "1"
		}
		kept = append(kept, delegatedChildMarker+"="+marker)
	}
	slices.Sort(droppedHermes)
	return kept, droppedHermes
}

// ClientEnvOptions configures [ClientEnv].
type ClientEnvOptions struct {
	// Extra names more variables the client gets, by exact name: terminal.client_env.
	// Host-managed credentials among them are dropped (config.Load refuses them). Default
	// empty.
	Extra []string
	// Windows applies the Windows rules: the system variables of docs/behaviour.md §4 rule
	// 5, TEMP and TMP pass too, and names compare case-insensitively. Callers pass
	// goruntime.GOOS == "windows". Default false.
	Windows bool
	// Managed names further credentials the host holds (web.search.api_key_env), dropped
	// like [config.ManagedCredentials]. Default empty.
	Managed []string
}

// ClientEnv builds the whole environment of a remote backend's local client (the docker
// CLI, ssh, the exec prefix, and whatever they start) from the executor's environ (KEY=VALUE
// entries, as returned by os.Environ). A host-managed credential ([config.IsManagedCredential],
// or named in opts.Managed) is dropped whatever the lists say; every other variable is kept
// when its name is
//
//   - one of [config.ClientEnvNames], or in opts.Extra;
//   - or starts with one of [config.ClientEnvPrefixes] and does not look secret (§4 rule 2:
//     it holds none of KEY, TOKEN, SECRET, ...);
//   - or, with opts.Windows, is one of the Windows system variables, TEMP or TMP;
//
// and dropped otherwise. kept preserves the input order. Entries without "=" or with an empty
// name are dropped.
//
// A script's own environment is [ScrubEnv]'s, which a remote backend sends over the command's
// stdin; this one is only what the client needs to reach the target, so that a client that
// passes its environment on (an exec prefix such as env or setpriv) hands a script no more.
func ClientEnv(environ []string, opts ClientEnvOptions) []string {
	fold := func(s string) string { return s }
	if opts.Windows {
		fold = strings.ToUpper
	}
	want := make(map[string]bool, len(config.ClientEnvNames)+len(opts.Extra))
	for _, n := range slices.Concat(config.ClientEnvNames, opts.Extra) {
		want[fold(n)] = true
	}
	kept := make([]string, 0, len(want))
	for _, entry := range environ {
		name, _, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			continue
		}
		key, upper := fold(name), strings.ToUpper(name)
		switch {
		case config.IsManagedCredential(name) || slices.ContainsFunc(opts.Managed, func(m string) bool { return strings.EqualFold(name, m) }):
		case want[key],
			hasAnyPrefix(key, config.ClientEnvPrefixes) && !containsAny(upper, secretMarkers),
			opts.Windows && (slices.Contains(windowsSystem, upper) || upper == "TEMP" || upper == "TMP"):
			kept = append(kept, entry)
		}
	}
	return kept
}

// RefusedPassthrough returns, in input order, the names among a passthrough list that are
// host-managed credentials ([config.IsManagedCredential], or among the extra managed names) and are
// therefore never passed to a script, so that the caller can warn about them. Names are
// compared case-insensitively. It returns nil when none are refused.
func RefusedPassthrough(names []string, managed ...string) []string {
	var refused []string
	for _, n := range names {
		if config.IsManagedCredential(n) || slices.ContainsFunc(managed, func(m string) bool { return strings.EqualFold(n, m) }) {
			refused = append(refused, n)
		}
	}
	return refused
}

// DroppedHermesLine formats the debug log line for the HERMES_* variables dropped by
// [ScrubEnv], in Hermes's words (tools/code_execution_tool.py). It returns "" when dropped is
// empty, otherwise exactly
//
//	execute_code: dropped N non-allowlisted HERMES_* var(s) from the sandbox child env (NAME1, NAME2). This is intentional hardening (#27303); if a sandbox script legitimately needs one, declare it via env_passthrough in the skill/config so it passes by explicit opt-in.
//
// with the names in the order given (ScrubEnv returns them sorted). #27303 is Hermes's issue
// that dropped the HERMES_ prefix from the allow-list.
func DroppedHermesLine(dropped []string) string {
	if len(dropped) == 0 {
		return ""
	}
	return fmt.Sprintf("execute_code: dropped %d non-allowlisted HERMES_* var(s) from the "+
		"sandbox child env (%s). This is intentional hardening (#27303); if "+
		"a sandbox script legitimately needs one, declare it via "+
		"env_passthrough in the skill/config so it passes by explicit opt-in.",
		len(dropped), strings.Join(dropped, ", "))
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
