package shared

import (
	"fmt"
	"slices"
	"strings"
)

// EnvOptions configures [ScrubEnv].
type EnvOptions struct {
	// Passthrough lists exact variable names that pass even when secret-named: the entries of
	// terminal.env_passthrough plus names registered by skills through
	// required_environment_variables. Names in [ManagedCredentials] are ignored here; use
	// [RefusedPassthrough] to find them and warn. Default empty.
	Passthrough []string
	// Windows applies the Windows rules: the system variables of SPEC §4 rule 5 pass, and
	// names compare case-insensitively, as Windows itself does. Callers pass
	// goruntime.GOOS == "windows". Default false.
	Windows bool
	// Managed names further credentials the host holds, such as the variable holding the
	// web search provider's key (web.search.api_key_env). They are treated like
	// [ManagedCredentials]: always dropped, even when named in Passthrough or not
	// secret-looking. Default empty.
	Managed []string
}

// ManagedCredentials lists the provider credentials the host manages. They never reach a
// script, not even when named in terminal.env_passthrough or by a skill: a script gets the
// results of tools that use them, never the credentials themselves. Names are compared
// case-insensitively.
//
// The list covers the model providers and tool back-ends the host talks to, and the token of
// the executor's own RPC channel, which the executor injects per run and must not be
// overridden from the host environment.
var ManagedCredentials = []string{
	// Model providers.
	"OPENAI_API_KEY",
	"ANTHROPIC_API_KEY",
	"ANTHROPIC_AUTH_TOKEN",
	"OPENROUTER_API_KEY",
	"NOUS_API_KEY",
	"GOOGLE_API_KEY",
	"GEMINI_API_KEY",
	"XAI_API_KEY",
	"GROQ_API_KEY",
	"MISTRAL_API_KEY",
	"DEEPSEEK_API_KEY",
	"TOGETHER_API_KEY",
	"FIREWORKS_API_KEY",
	"HF_TOKEN",
	"HUGGINGFACE_API_KEY",
	"AZURE_OPENAI_API_KEY",
	// Web tool back-ends.
	"BRAVE_API_KEY",
	"TAVILY_API_KEY",
	"FIRECRAWL_API_KEY",
	"EXA_API_KEY",
	"SERPER_API_KEY",
	"SERPAPI_API_KEY",
	"PARALLEL_API_KEY",
	"JINA_API_KEY",
	// The executor's own tool channel.
	"HERMES_RPC_TOKEN",
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

// hermesAllowed are the HERMES_* names that pass by exact name (rule 4).
var hermesAllowed = []string{"HERMES_HOME", "HERMES_PROFILE", "HERMES_CONFIG", "HERMES_ENV"}

// windowsSystem are the Windows system variables that pass on Windows (rule 5).
var windowsSystem = []string{
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "OS",
	"PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS", "PUBLIC", "ALLUSERSPROFILE",
	"PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)", "PROGRAMW6432", "APPDATA",
	"LOCALAPPDATA", "USERPROFILE", "USERDOMAIN", "USERNAME", "HOMEDRIVE", "HOMEPATH",
	"COMPUTERNAME",
}

// ScrubEnv builds a script's environment from the host's environ (KEY=VALUE entries, as
// returned by os.Environ) by applying the allow-list of SPEC §4. Each variable takes the first
// rule that matches:
//
//  1. its name is in opts.Passthrough and not in [ManagedCredentials]: kept;
//  2. its name contains, case-insensitively, KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL,
//     PASSWD, AUTH, DSN, WEBHOOK, CREDS, BEARER or APIKEY: dropped;
//  3. its name starts with PATH, HOME, USER, LANG, LC_, TERM, TMPDIR, TMP, TEMP, SHELL,
//     LOGNAME, XDG_, PYTHONPATH, VIRTUAL_ENV or CONDA: kept;
//  4. its name is HERMES_HOME, HERMES_PROFILE, HERMES_CONFIG or HERMES_ENV: kept;
//  5. with opts.Windows, its name is one of the Windows system variables: kept;
//  6. anything else: dropped.
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
// compare names exactly, and only rule 2 ignores case.
//
// ScrubEnv does not inject anything; the executor adds HERMES_RPC_SOCKET, HERMES_RPC_TOKEN,
// TZ, HOME and the PYTHON* settings afterwards.
func ScrubEnv(environ []string, opts EnvOptions) (kept []string, droppedHermes []string) {
	fold := func(s string) string { return s }
	if opts.Windows {
		fold = strings.ToUpper
	}
	refused := RefusedPassthrough(opts.Passthrough, opts.Managed...)
	managed := make(map[string]bool, len(opts.Managed))
	for _, n := range opts.Managed {
		managed[strings.ToUpper(n)] = true
	}
	pass := make(map[string]bool, len(opts.Passthrough))
	for _, n := range opts.Passthrough {
		if n != "" && !slices.Contains(refused, n) {
			pass[fold(n)] = true
		}
	}

	kept = make([]string, 0, len(environ))
	seenHermes := map[string]bool{}
	for _, entry := range environ {
		name, _, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			continue
		}
		key := fold(name)
		upper := strings.ToUpper(name)
		switch {
		case managed[upper]: // Credentials the host holds never pass.
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
	slices.Sort(droppedHermes)
	return kept, droppedHermes
}

// RefusedPassthrough returns, in input order, the names among a passthrough list that are
// [ManagedCredentials] (or among the extra managed names) and are therefore never passed to a
// script, so that the caller can warn about them. Names are compared case-insensitively. It
// returns nil when none are refused.
func RefusedPassthrough(names []string, managed ...string) []string {
	all := append(slices.Clone(ManagedCredentials), managed...)
	var refused []string
	for _, n := range names {
		for _, m := range all {
			if strings.EqualFold(n, m) {
				refused = append(refused, n)
				break
			}
		}
	}
	return refused
}

// DroppedHermesLine formats the debug log line for the HERMES_* variables dropped by
// [ScrubEnv]. It returns "" when dropped is empty, otherwise exactly
//
//	execute_code: dropped N non-allowlisted HERMES_* var(s): NAME1, NAME2 (add them to terminal.env_passthrough to pass them through)
//
// with the names in the order given (ScrubEnv returns them sorted).
func DroppedHermesLine(dropped []string) string {
	if len(dropped) == 0 {
		return ""
	}
	return fmt.Sprintf("execute_code: dropped %d non-allowlisted HERMES_* var(s): %s (add them to terminal.env_passthrough to pass them through)",
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
