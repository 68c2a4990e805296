package engine

import (
	"fmt"
	"slices"
	"strings"
)

// EnvOptions configures [ScrubEnv].
type EnvOptions struct {
	// Passthrough lists exact variable names that pass even when secret-named: the entries of
	// terminal.env_passthrough plus names registered by skills through
	// required_environment_variables. Host-managed credentials ((isManagedCredential)) are
	// ignored here; use [RefusedPassthrough] to find them and warn. Default empty.
	Passthrough []string
	// Windows applies the Windows rules: the system variables of docs/behaviour.md §4
	// rule 5 pass, and names compare case-insensitively, as Windows itself does. Callers
	// pass goruntime.GOOS == "windows". Default false.
	Windows bool
	// Managed names further credentials the host holds, such as the variable holding the
	// web search provider's key (web.search.api_key_env). They are treated like
	// [ManagedCredentials]: always dropped, even when named in Passthrough or not
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

// ManagedCredentials lists the credentials and provider settings the host manages. They never
// reach a script, not even when named in terminal.env_passthrough or by a skill: a script gets
// the results of tools that use them, never the credentials themselves. Names are compared
// case-insensitively; [isManagedCredential] also covers Hermes's dynamic names.
//
// It is Hermes's _HERMES_PROVIDER_ENV_BLOCKLIST (tools/environments/local_env_policy.py, as
// derived there), which env_passthrough and skill registration refuse (GHSA-rhgp-j443-p4rf):
// its static list; every provider's API-key variables and base-URL variable from the provider
// registry (hermes_cli/auth.py PROVIDER_REGISTRY; Hermes leaves out CLAUDE_CODE_OAUTH_TOKEN,
// which belongs to the user's Claude Code install, and so does this list); the tool and
// messaging settings and password settings of hermes_cli/config.py OPTIONAL_ENV_VARS; and the
// secrets Hermes strips from every child (_ALWAYS_STRIP_KEYS). To those it adds what this
// executor manages itself: the token of its own tool channel, which it injects per run, the
// default key variable of its Brave web search back-end, and the provider keys this list held
// before it followed Hermes's (a superset is safe: dropping one would hand it to scripts).
var ManagedCredentials = []string{
	// Hermes: static provider, tool and gateway list.
	"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_ORG_ID",
	"OPENAI_ORGANIZATION", "OPENROUTER_API_KEY", "ANTHROPIC_BASE_URL",
	"ANTHROPIC_API_KEY", "ANTHROPIC_TOKEN", "LLM_MODEL", "GOOGLE_API_KEY",
	"VERTEX_CREDENTIALS_PATH", "GOOGLE_APPLICATION_CREDENTIALS", "DEEPSEEK_API_KEY",
	"MISTRAL_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY", "PERPLEXITY_API_KEY",
	"COHERE_API_KEY", "FIREWORKS_API_KEY", "XAI_API_KEY", "HELICONE_API_KEY",
	"PARALLEL_API_KEY", "FIRECRAWL_API_KEY", "FIRECRAWL_API_URL",
	"TELEGRAM_HOME_CHANNEL", "TELEGRAM_HOME_CHANNEL_NAME", "DISCORD_HOME_CHANNEL",
	"DISCORD_HOME_CHANNEL_NAME", "DISCORD_REQUIRE_MENTION",
	"DISCORD_FREE_RESPONSE_CHANNELS", "DISCORD_AUTO_THREAD", "SLACK_HOME_CHANNEL",
	"SLACK_HOME_CHANNEL_NAME", "SLACK_ALLOWED_USERS", "WHATSAPP_ENABLED",
	"WHATSAPP_MODE", "WHATSAPP_ALLOWED_USERS", "SIGNAL_HTTP_URL", "SIGNAL_ACCOUNT",
	"SIGNAL_ALLOWED_USERS", "SIGNAL_GROUP_ALLOWED_USERS", "SIGNAL_HOME_CHANNEL",
	"SIGNAL_HOME_CHANNEL_NAME", "SIGNAL_IGNORE_STORIES", "HASS_TOKEN", "HASS_URL",
	"EMAIL_ADDRESS", "EMAIL_PASSWORD", "EMAIL_IMAP_HOST", "EMAIL_SMTP_HOST",
	"EMAIL_HOME_ADDRESS", "EMAIL_HOME_ADDRESS_NAME", "HERMES_DASHBOARD_SESSION_TOKEN",
	"GATEWAY_ALLOWED_USERS", "GH_TOKEN", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_PATH",
	"GITHUB_APP_INSTALLATION_ID", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET",
	"DAYTONA_API_KEY", "GATEWAY_RELAY_ID", "GATEWAY_RELAY_SECRET",
	"GATEWAY_RELAY_DELIVERY_KEY", "VERCEL_OIDC_TOKEN", "VERCEL_TOKEN",
	"VERCEL_PROJECT_ID", "VERCEL_TEAM_ID",

	// Hermes: the provider registry's API-key and base-URL variables (the ones not above),
	// and the Bedrock bearer token of its aws_sdk provider.
	"LM_API_KEY", "LM_BASE_URL",
	"COPILOT_GITHUB_TOKEN", "GITHUB_TOKEN", "COPILOT_API_BASE_URL", "COPILOT_ACP_BASE_URL",
	"GEMINI_API_KEY", "GEMINI_BASE_URL",
	"GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY", "GLM_BASE_URL",
	"KIMI_API_KEY", "KIMI_CODING_API_KEY", "KIMI_BASE_URL", "KIMI_CN_API_KEY",
	"STEPFUN_API_KEY", "STEPFUN_BASE_URL",
	"ARCEEAI_API_KEY", "ARCEE_BASE_URL",
	"GMI_API_KEY", "GMI_BASE_URL",
	"ACTUAL_API_KEY", "ACTUAL_BASE_URL",
	"MINIMAX_API_KEY", "MINIMAX_BASE_URL", "MINIMAX_CN_API_KEY", "MINIMAX_CN_BASE_URL",
	"DASHSCOPE_API_KEY", "DASHSCOPE_BASE_URL",
	"ALIBABA_CODING_PLAN_API_KEY", "ALIBABA_CODING_PLAN_BASE_URL",
	"DEEPSEEK_BASE_URL", "XAI_BASE_URL",
	"NVIDIA_API_KEY", "NVIDIA_BASE_URL",
	"AI_GATEWAY_API_KEY", "AI_GATEWAY_BASE_URL",
	"OPENCODE_ZEN_API_KEY", "OPENCODE_ZEN_BASE_URL", "OPENCODE_GO_API_KEY", "OPENCODE_GO_BASE_URL",
	"KILOCODE_API_KEY", "KILOCODE_BASE_URL",
	"HF_TOKEN", "HF_BASE_URL",
	"XIAOMI_API_KEY", "XIAOMI_BASE_URL",
	"TOKENHUB_API_KEY", "TOKENHUB_BASE_URL", "TOKENPLAN_API_KEY", "TOKENPLAN_BASE_URL",
	"OLLAMA_API_KEY", "OLLAMA_BASE_URL",
	"BEDROCK_BASE_URL", "AWS_BEARER_TOKEN_BEDROCK",
	"AZURE_FOUNDRY_API_KEY", "AZURE_FOUNDRY_BASE_URL",

	// Hermes: tool settings (OPTIONAL_ENV_VARS, category "tool").
	"EXA_API_KEY", "FIRECRAWL_GATEWAY_URL", "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME",
	"TOOL_GATEWAY_USER_TOKEN", "TAVILY_API_KEY", "BROWSERBASE_API_KEY",
	"BROWSERBASE_PROJECT_ID", "BROWSER_USE_API_KEY", "FIRECRAWL_BROWSER_TTL", "CAMOFOX_URL",
	"FAL_KEY", "TINKER_API_KEY", "WANDB_API_KEY", "VOICE_TOOLS_OPENAI_KEY",
	"ELEVENLABS_API_KEY", "HONCHO_API_KEY", "HONCHO_BASE_URL",

	// Hermes: messaging settings (OPTIONAL_ENV_VARS, category "messaging"), and the
	// gateway secrets stripped from every child.
	"TELEGRAM_BOT_TOKEN", "TELEGRAM_ALLOWED_USERS", "TELEGRAM_PROXY",
	"DISCORD_BOT_TOKEN", "DISCORD_ALLOWED_USERS", "DISCORD_REPLY_TO_MODE",
	"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET",
	"MATTERMOST_URL", "MATTERMOST_TOKEN", "MATTERMOST_ALLOWED_USERS",
	"MATTERMOST_REQUIRE_MENTION", "MATTERMOST_FREE_RESPONSE_CHANNELS",
	"MATRIX_HOMESERVER", "MATRIX_ACCESS_TOKEN", "MATRIX_USER_ID", "MATRIX_ALLOWED_USERS",
	"MATRIX_REQUIRE_MENTION", "MATRIX_FREE_RESPONSE_ROOMS", "MATRIX_AUTO_THREAD",
	"MATRIX_DEVICE_ID", "MATRIX_RECOVERY_KEY",
	"BLUEBUBBLES_SERVER_URL", "BLUEBUBBLES_PASSWORD", "BLUEBUBBLES_ALLOWED_USERS",
	"BLUEBUBBLES_ALLOW_ALL_USERS",
	"QQ_APP_ID", "QQ_CLIENT_SECRET", "QQ_ALLOWED_USERS", "QQ_GROUP_ALLOWED_USERS",
	"QQ_ALLOW_ALL_USERS", "QQBOT_HOME_CHANNEL", "QQBOT_HOME_CHANNEL_NAME", "QQ_SANDBOX",
	"GATEWAY_ALLOW_ALL_USERS", "GATEWAY_PROXY_URL", "GATEWAY_PROXY_KEY",
	"API_SERVER_ENABLED", "API_SERVER_KEY", "API_SERVER_PORT", "API_SERVER_HOST",
	"API_SERVER_MODEL_NAME", "WEBHOOK_ENABLED", "WEBHOOK_PORT", "WEBHOOK_SECRET",

	// Hermes: password settings.
	"SUDO_PASSWORD",

	// This executor: its own tool channel's token, its Brave search back-end's default key
	// variable, and provider keys it refused before following Hermes's list.
	"HERMES_RPC_TOKEN",
	"BRAVE_API_KEY", "SERPER_API_KEY", "SERPAPI_API_KEY", "JINA_API_KEY",
	"NOUS_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HUGGINGFACE_API_KEY", "AZURE_OPENAI_API_KEY",
}

// managedNames is ManagedCredentials, upper-case, for lookups.
var managedNames = func() map[string]bool {
	m := make(map[string]bool, len(ManagedCredentials))
	for _, n := range ManagedCredentials {
		m[strings.ToUpper(n)] = true
	}
	return m
}()

// isManagedCredential reports whether name (compared case-insensitively) is a credential the
// host manages: one of [ManagedCredentials], or one of the names Hermes gives its internal
// secrets dynamically (_is_hermes_internal_secret): AUXILIARY_<TASK>_API_KEY and
// AUXILIARY_<TASK>_BASE_URL (per-task side-model credentials), and GATEWAY_RELAY_*_SECRET,
// _KEY or _TOKEN (gateway relay authentication).
func isManagedCredential(name string) bool {
	upper := strings.ToUpper(name)
	if managedNames[upper] {
		return true
	}
	if strings.HasPrefix(upper, "AUXILIARY_") && hasAnySuffix(upper, "_API_KEY", "_BASE_URL") {
		return true
	}
	return strings.HasPrefix(upper, "GATEWAY_RELAY_") && hasAnySuffix(upper, "_SECRET", "_KEY", "_TOKEN")
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
// host-managed credential ([isManagedCredential], or named in opts.Managed) is dropped
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
		case managed[upper] || isManagedCredential(name): // Credentials the host holds never pass.
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

// RefusedPassthrough returns, in input order, the names among a passthrough list that are
// host-managed credentials ([isManagedCredential], or among the extra managed names) and are
// therefore never passed to a script, so that the caller can warn about them. Names are
// compared case-insensitively. It returns nil when none are refused.
func RefusedPassthrough(names []string, managed ...string) []string {
	var refused []string
	for _, n := range names {
		if isManagedCredential(n) || slices.ContainsFunc(managed, func(m string) bool { return strings.EqualFold(n, m) }) {
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

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}
