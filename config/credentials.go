package config

import "strings"

// This file holds the names of the credentials the host manages: what never reaches a script,
// a terminal command or a remote backend's client (internal/engine's env layer applies it;
// the configuration refuses these names where a key would let them through).

// ManagedCredentials lists the credentials and provider settings the host manages. They never
// reach a script, not even when named in terminal.env_passthrough or by a skill: a script gets
// the results of tools that use them, never the credentials themselves; nor a remote backend's
// client, whatever terminal.client_env says. Names are compared case-insensitively;
// [IsManagedCredential] also covers Hermes's dynamic names.
//
// It is Hermes's _HERMES_PROVIDER_ENV_BLOCKLIST (tools/environments/local_env_policy.py, as
// derived there), which env_passthrough and skill registration refuse (GHSA-rhgp-j443-p4rf):
// its static list; every provider's API-key variables and base-URL variable from the provider
// registry (hermes_cli/auth.py PROVIDER_REGISTRY; Hermes leaves out CLAUDE_CODE_OAUTH_TOKEN,
// which belongs to the user's Claude Code install, and so does this list); the tool and
// messaging settings and password settings of hermes_cli/config.py OPTIONAL_ENV_VARS; and the
// secrets Hermes strips from every child (_ALWAYS_STRIP_KEYS). To those it adds what this
// executor manages itself: the token of its own tool channel, which it injects per run, the
// key of its session store's images (HERMES_SESSION_STORE_KEY), the
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

	// This executor: its own tool channel's token, the bearer token of `serve` and `mcp --http`
	// (a script that had it could run code in any session of the server), its Brave search
	// back-end's default key variable, and provider keys it refused before following Hermes's
	// list.
	"HERMES_RPC_TOKEN", "HERMES_SERVE_TOKEN", "HERMES_SESSION_STORE_KEY",
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

// IsManagedCredential reports whether name (compared case-insensitively) is a credential the
// host manages: one of [ManagedCredentials], or one of the names Hermes gives its internal
// secrets dynamically (_is_hermes_internal_secret): AUXILIARY_<TASK>_API_KEY and
// AUXILIARY_<TASK>_BASE_URL (per-task side-model credentials), and GATEWAY_RELAY_*_SECRET,
// _KEY or _TOKEN (gateway relay authentication).
func IsManagedCredential(name string) bool {
	upper := strings.ToUpper(name)
	if managedNames[upper] {
		return true
	}
	if strings.HasPrefix(upper, "AUXILIARY_") && hasSuffix(upper, "_API_KEY", "_BASE_URL") {
		return true
	}
	return strings.HasPrefix(upper, "GATEWAY_RELAY_") && hasSuffix(upper, "_SECRET", "_KEY", "_TOKEN")
}

// hasSuffix reports whether s ends with one of suffixes.
func hasSuffix(s string, suffixes ...string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}
