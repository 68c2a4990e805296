package config

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// hermesKeys lists, per section ("" is the top level), the keys of Hermes Agent's own
// configuration (hermes_cli/config_defaults.py DEFAULT_CONFIG and cli-config.yaml.example)
// that this executor does not use, with a note for the ones a user might expect to matter
// here. They are ignored like any unknown key, but never taken for a misspelling of one of
// ours. A key Hermes adds later is simply an unknown key: ignored, and only a warning if it
// happens to look like a typo of a key used here.
var hermesKeys = map[string]map[string]string{
	"": keys(
		"model", "providers", "fallback_providers", "fallback_model", "credential_pool_strategies",
		"custom_providers", "toolsets", "database", "runtime", "max_concurrent_sessions",
		"max_live_sessions", "session", "sessions", "session_reset", "agent", "browser",
		"checkpoints", "context_file_max_chars", "context_file_read_timeout",
		"mcp_discovery_timeout", "mcp_single_query_discovery_timeout", "mcp",
		"tool_loop_guardrails", "tool_budget", "compression", "prompt_caching", "openrouter",
		"provider_routing", "bedrock", "auxiliary", "vision", "display", "dashboard", "privacy",
		"tts", "stt", "voice", "wake_word", "image_gen", "human_delay", "context", "memory",
		"delegation", "prefill_messages_file", "goals", "loops", "moa", "skills", "curator",
		"honcho", "slack", "discord", "whatsapp", "telegram", "mattermost", "matrix", "platforms",
		"platform_hints", "quick_commands", "plugins", "hooks", "hooks_auto_accept",
		"personalities", "cron", "kanban", "bot_mode", "tools", "logging", "model_catalog",
		"model_overrides", "models_dev", "model_aliases", "network", "monitoring", "gateway",
		"streaming", "onboarding", "telemetry", "doctor", "updates", "lsp", "x_search", "vault",
		"secrets", "paste_collapse_threshold", "paste_collapse_threshold_fallback",
		"paste_collapse_char_threshold", "computer_use", "proxy", "desktop", "nous", "vertex",
		"local_runtime", "attachments", "group_sessions_per_user", "worktree", "worktree_sync",
		"timeouts", "auth", "_config_version",
	).with(map[string]string{
		"mcp_servers":         "scripts never reach MCP tools",
		"platform_toolsets":   "scripts may import the seven script tools, narrowed per call where the front end allows it",
		"tool_output":         "terminal() output is capped at 50,000 characters here, as by Hermes's default",
		"file_read_max_chars": "read_file's limits are fixed here",
		"command_allowlist":   "Hermes's permanent approvals are not read; an \"always\" answer lasts as long as the process",
		"security":            "web_extract's private-network rule is web.allow_private_networks here",
	}),
	"code_execution": {
		"kernel_mode": "retired in Hermes: session kernels are always on",
	},
	"terminal": keys(
		"modal_mode", "degraded_mode", "temp_dir", "font_family", "daemon_term_grace_seconds",
		"oneshot_completion_wait_seconds", "home_mode", "shell_init_files", "auto_source_bashrc",
		"singularity_image", "modal_image", "daytona_image", "vercel_runtime",
		"docker_mount_cwd_to_workspace", "docker_shm_size", "docker_run_as_host_user",
		"docker_snap_compat", "docker_shared_container_key", "persistent_shell",
		"lifetime_seconds", "sudo_password", "ssh_persistent",
	).with(map[string]string{
		"timeout":        "terminal() waits 180 s here unless the script passes timeout= (at most 600 s)",
		"container_disk": "the docker backend sets no disk limit",
	}),
	"approvals": keys(
		"mcp_reload_confirm", "destructive_slash_confirm",
	).with(map[string]string{
		"single_query_mode":        "there are no single-query sessions here; automation sessions follow approvals.cron_mode",
		"unattended_mode":          "there are no unattended platforms here; automation sessions follow approvals.cron_mode",
		"smart_policy":             "smart approval needs a model; smart behaves as manual here",
		"denial_breaker_threshold": "smart approval needs a model; smart behaves as manual here",
		"deny":                     "not enforced here",
		"confirm":                  "not enforced here",
	}),
	"web": keys(
		"backend", "search_backend", "extract_backend", "keyless_fallback", "keyless_rescue",
		"provider_tier", "cache_enabled", "cache_ttl_minutes", "cache_exempt_hosts",
	).with(map[string]string{
		"extract_char_limit": "web_extract's default here is web.extract.char_limit",
	}),
}

// keySet is a set of key names with optional notes.
type keySet map[string]string

func keys(names ...string) keySet {
	s := make(keySet, len(names))
	for _, n := range names {
		s[n] = ""
	}
	return s
}

func (s keySet) with(notes map[string]string) keySet {
	for k, v := range notes {
		s[k] = v
	}
	return s
}

// hermesWarnings are ignored Hermes settings that a user relies on for safety: when set, they
// are warnings, so that nobody believes they are enforced here.
var hermesWarnings = map[string]func(v *yaml.Node) string{
	"approvals.deny": func(v *yaml.Node) string {
		if empty(v) {
			return ""
		}
		return "approvals.deny is not enforced by hermes-wasm-exec: commands it blocks in Hermes are judged here only by the dangerous-command check and approvals.mode (with mode off they run without asking)"
	},
	"approvals.confirm": func(v *yaml.Node) string {
		if empty(v) {
			return ""
		}
		return "approvals.confirm is not enforced by hermes-wasm-exec: commands it makes Hermes ask about are judged here only by the dangerous-command check and approvals.mode"
	},
}

// empty reports whether v is null, an empty string, list or mapping.
func empty(v *yaml.Node) bool {
	switch {
	case isNull(v):
		return true
	case v.Kind == yaml.ScalarNode:
		return v.Value == ""
	case v.Kind == yaml.SequenceNode, v.Kind == yaml.MappingNode:
		return len(v.Content) == 0
	}
	return false
}

// IgnoredSummary is the one line the front ends log at debug level about the ignored keys,
// or "" when there are none.
func (c *Config) IgnoredSummary() string {
	if len(c.Ignored) == 0 {
		return ""
	}
	s := fmt.Sprintf("config %s: ignoring %d key(s) hermes-wasm-exec does not use:", sourceName(c.Source), len(c.Ignored))
	for i, k := range c.Ignored {
		if i > 0 {
			s += ","
		}
		s += " " + k.String()
	}
	return s
}
