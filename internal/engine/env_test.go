package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

func TestScrubEnvRules(t *testing.T) {
	tests := []struct {
		name        string
		entry       string
		passthrough []string
		windows     bool
		kept        bool
		hermes      bool // reported in droppedHermes
	}{
		// Rule 1: passthrough, even when secret-named.
		{name: "passthrough secret-named", entry: "MY_API_KEY=x", passthrough: []string{"MY_API_KEY"}, kept: true},
		{name: "passthrough HERMES", entry: "HERMES_BASE_URL=http://h", passthrough: []string{"HERMES_BASE_URL"}, kept: true},
		{name: "passthrough plain", entry: "FOO=1", passthrough: []string{"FOO"}, kept: true},
		{name: "passthrough is exact", entry: "MY_API_KEY_2=x", passthrough: []string{"MY_API_KEY"}},
		{name: "passthrough case-sensitive off Windows", entry: "foo=1", passthrough: []string{"FOO"}},
		{name: "passthrough case-insensitive on Windows", entry: "foo=1", passthrough: []string{"FOO"}, windows: true, kept: true},
		{name: "managed credential refused", entry: "OPENAI_API_KEY=sk", passthrough: []string{"OPENAI_API_KEY"}},
		{name: "managed credential refused any case", entry: "anthropic_api_key=sk", passthrough: []string{"anthropic_api_key"}},
		{name: "RPC token refused", entry: "HERMES_RPC_TOKEN=t", passthrough: []string{"HERMES_RPC_TOKEN"}},
		{name: "provider base URL refused", entry: "OPENAI_BASE_URL=http://h", passthrough: []string{"OPENAI_BASE_URL"}},
		{name: "managed non-secret name dropped without passthrough", entry: "VERCEL_PROJECT_ID=p"},
		{name: "dynamic auxiliary key refused", entry: "AUXILIARY_VISION_API_KEY=k", passthrough: []string{"AUXILIARY_VISION_API_KEY"}},
		{name: "Claude Code's own token passes through, as in Hermes", entry: "CLAUDE_CODE_OAUTH_TOKEN=t", passthrough: []string{"CLAUDE_CODE_OAUTH_TOKEN"}, kept: true},

		// Rule 2: secret-named, before the safe prefixes.
		{name: "KEY", entry: "SOME_KEY=1"},
		{name: "lower-case token", entry: "github_token=1"},
		{name: "SECRET after PATH prefix", entry: "PATH_SECRET=1"},
		{name: "HOME with PASSWORD", entry: "HOME_PASSWORD=1"},
		{name: "CREDENTIAL", entry: "GOOGLE_APPLICATION_CREDENTIALS=/f"},
		{name: "PASSWD", entry: "DB_PASSWD=1"},
		{name: "AUTH", entry: "AUTHOR=me"},
		{name: "DSN", entry: "SENTRY_DSN=1"},
		{name: "WEBHOOK", entry: "SLACK_WEBHOOK=1"},
		{name: "CREDS", entry: "AWS_CREDS=1"},
		{name: "BEARER", entry: "BEARER=1"},
		{name: "APIKEY", entry: "SERVICEAPIKEY=1"},
		{name: "secret HERMES not reported", entry: "HERMES_API_KEY=1"},
		{name: "TERM with TOKEN", entry: "TERM_TOKEN=1"},

		// Rule 3: safe prefixes.
		{name: "PATH", entry: "PATH=/usr/bin", kept: true},
		{name: "HOMEBREW by HOME prefix", entry: "HOMEBREW_X=1", kept: true},
		{name: "USER", entry: "USER=me", kept: true},
		{name: "LANG", entry: "LANG=C.UTF-8", kept: true},
		{name: "LC_", entry: "LC_ALL=C", kept: true},
		{name: "TERM", entry: "TERM=xterm", kept: true},
		{name: "TMPDIR", entry: "TMPDIR=/tmp", kept: true},
		{name: "TEMP", entry: "TEMP=/tmp", kept: true},
		{name: "SHELL", entry: "SHELL=/bin/sh", kept: true},
		{name: "LOGNAME", entry: "LOGNAME=me", kept: true},
		{name: "XDG_", entry: "XDG_RUNTIME_DIR=/run", kept: true},
		{name: "PYTHONPATH", entry: "PYTHONPATH=/x", kept: true},
		{name: "VIRTUAL_ENV", entry: "VIRTUAL_ENV=/v", kept: true},
		{name: "CONDA", entry: "CONDA_PREFIX=/c", kept: true},
		{name: "empty value", entry: "LANG=", kept: true},
		{name: "value with =", entry: "LANG=a=b", kept: true},
		{name: "prefix case-sensitive off Windows", entry: "Path=/x"},
		{name: "prefix case-insensitive on Windows", entry: "Path=C:\\x", windows: true, kept: true},

		// Rule 4: exact HERMES_* names.
		{name: "HERMES_HOME", entry: "HERMES_HOME=/h", kept: true},
		{name: "HERMES_PROFILE", entry: "HERMES_PROFILE=p", kept: true},
		{name: "HERMES_CONFIG", entry: "HERMES_CONFIG=c", kept: true},
		{name: "HERMES_ENV", entry: "HERMES_ENV=e", kept: true},
		{name: "HERMES_DELEGATED_CHILD_CONTEXT", entry: "HERMES_DELEGATED_CHILD_CONTEXT=", kept: true},
		{name: "HERMES_HOME_X not exact", entry: "HERMES_HOME_X=1", hermes: true},

		// Rule 5: Windows system variables, only on Windows.
		{name: "SYSTEMROOT off Windows", entry: "SYSTEMROOT=C:\\Windows"},
		{name: "SystemRoot on Windows", entry: "SystemRoot=C:\\Windows", windows: true, kept: true},
		{name: "PROGRAMFILES(X86) on Windows", entry: "ProgramFiles(x86)=C:\\P", windows: true, kept: true},
		{name: "COMSPEC on Windows", entry: "COMSPEC=cmd.exe", windows: true, kept: true},
		{name: "OS on Windows", entry: "OS=Windows_NT", windows: true, kept: true},
		{name: "OS off Windows", entry: "OS=Windows_NT"},
		{name: "USERPROFILE off Windows by USER prefix", entry: "USERPROFILE=/u", kept: true},
		{name: "Windows hidden drive variable", entry: "=C:=C:\\x", windows: true},

		// Rule 6: everything else.
		{name: "HERMES_BASE_URL dropped and reported", entry: "HERMES_BASE_URL=http://h", hermes: true},
		{name: "other dropped", entry: "EDITOR=vim"},
		{name: "no equals", entry: "PATH"},
		{name: "empty name", entry: "=x"},
		{name: "hermes lower-case off Windows not reported", entry: "hermes_x=1"},
		{name: "hermes lower-case on Windows reported", entry: "hermes_x=1", windows: true, hermes: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, dropped := ScrubEnv([]string{tt.entry}, EnvOptions{Passthrough: tt.passthrough, Windows: tt.windows})
			if got := len(kept) == 1; got != tt.kept {
				t.Errorf("kept = %q, want kept=%v", kept, tt.kept)
			}
			if len(kept) == 1 && kept[0] != tt.entry {
				t.Errorf("kept entry changed: %q", kept[0])
			}
			if got := len(dropped) == 1; got != tt.hermes {
				t.Errorf("droppedHermes = %q, want reported=%v", dropped, tt.hermes)
			}
		})
	}
}

func TestScrubEnvOrderAndReport(t *testing.T) {
	environ := []string{
		"PATH=/bin",
		"HERMES_ZED=1",
		"OPENAI_API_KEY=sk",
		"HERMES_BASE_URL=u",
		"HOME=/home/me",
		"HERMES_ALPHA=1",
		"HERMES_ALPHA=2",
		"HERMES_TOKEN=t",
		"MY_API_KEY=k",
		"LANG=C",
	}
	kept, dropped := ScrubEnv(environ, EnvOptions{Passthrough: []string{"MY_API_KEY", "OPENAI_API_KEY"}})
	wantKept := []string{"PATH=/bin", "HOME=/home/me", "MY_API_KEY=k", "LANG=C"}
	if !reflect.DeepEqual(kept, wantKept) {
		t.Errorf("kept = %q, want %q", kept, wantKept)
	}
	wantDropped := []string{"HERMES_ALPHA", "HERMES_BASE_URL", "HERMES_ZED"}
	if !reflect.DeepEqual(dropped, wantDropped) {
		t.Errorf("droppedHermes = %q, want %q", dropped, wantDropped)
	}
	want := "execute_code: dropped 3 non-allowlisted HERMES_* var(s) from the sandbox child env (HERMES_ALPHA, HERMES_BASE_URL, HERMES_ZED). This is intentional hardening (#27303); if a sandbox script legitimately needs one, declare it via env_passthrough in the skill/config so it passes by explicit opt-in."
	if got := DroppedHermesLine(dropped); got != want {
		t.Errorf("DroppedHermesLine =\n  %s\nwant\n  %s", got, want)
	}
}

func TestScrubEnvEmpty(t *testing.T) {
	kept, dropped := ScrubEnv(nil, EnvOptions{})
	if len(kept) != 0 || dropped != nil {
		t.Fatalf("got %q %q", kept, dropped)
	}
}

func TestDroppedHermesLine(t *testing.T) {
	if got := DroppedHermesLine(nil); got != "" {
		t.Errorf("DroppedHermesLine(nil) = %q", got)
	}
	// Hermes's logger.debug in tools/code_execution_tool.py, word for word.
	want := "execute_code: dropped 1 non-allowlisted HERMES_* var(s) from the sandbox child env (HERMES_BASE_URL). This is intentional hardening (#27303); if a sandbox script legitimately needs one, declare it via env_passthrough in the skill/config so it passes by explicit opt-in."
	if got := DroppedHermesLine([]string{"HERMES_BASE_URL"}); got != want {
		t.Errorf("got %q", got)
	}
}

func TestRefusedPassthrough(t *testing.T) {
	got := RefusedPassthrough([]string{"MY_API_KEY", "OPENAI_API_KEY", "HERMES_BASE_URL", "anthropic_api_key", "HERMES_RPC_TOKEN", "gh_token", "GATEWAY_RELAY_EU_TOKEN", "TENOR_API_KEY"})
	want := []string{"OPENAI_API_KEY", "anthropic_api_key", "HERMES_RPC_TOKEN", "gh_token", "GATEWAY_RELAY_EU_TOKEN"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := RefusedPassthrough([]string{"FOO"}); got != nil {
		t.Fatalf("got %q, want nil", got)
	}
}

// The bearer token of serve and mcp --http is never passed through: a
// script that had it could connect to the server and run code in any of
// its sessions (before, env_passthrough could name it).
func TestServeTokenNeverPassedThrough(t *testing.T) {
	kept, _ := ScrubEnv([]string{"HERMES_SERVE_TOKEN=secret", "PATH=/bin"}, EnvOptions{Passthrough: []string{"HERMES_SERVE_TOKEN"}})
	if !reflect.DeepEqual(kept, []string{"PATH=/bin"}) {
		t.Fatalf("kept = %q", kept)
	}
	if got := RefusedPassthrough([]string{"hermes_serve_token"}); !reflect.DeepEqual(got, []string{"hermes_serve_token"}) {
		t.Fatalf("RefusedPassthrough = %q", got)
	}
}

// hermesBlocklist is what Hermes's _HERMES_PROVIDER_ENV_BLOCKLIST holds for its providers,
// tools and gateway (tools/environments/local_env_policy.py _STATIC_PROVIDER_ENV_BLOCKLIST,
// then the provider registry's key and base-URL variables, the tool and messaging settings,
// and _ALWAYS_STRIP_KEYS), as the names the issue asks for first.
var hermesBlocklist = []string{
	// Named by the issue.
	"GH_TOKEN", "ANTHROPIC_TOKEN", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "DAYTONA_API_KEY",
	"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_API_BASE",
	// _STATIC_PROVIDER_ENV_BLOCKLIST, verbatim.
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
	// From the provider registry, a few of each kind.
	"GEMINI_API_KEY", "GEMINI_BASE_URL", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN", "HF_TOKEN",
	"KIMI_API_KEY", "DASHSCOPE_BASE_URL", "NVIDIA_API_KEY", "AZURE_FOUNDRY_API_KEY",
	"AWS_BEARER_TOKEN_BEDROCK", "OLLAMA_BASE_URL", "XAI_BASE_URL",
	// Tool and messaging settings, and _ALWAYS_STRIP_KEYS.
	"TAVILY_API_KEY", "EXA_API_KEY", "FAL_KEY", "BROWSERBASE_PROJECT_ID", "HONCHO_BASE_URL",
	"TELEGRAM_BOT_TOKEN", "SLACK_SIGNING_SECRET", "MATRIX_USER_ID", "WEBHOOK_SECRET",
	"API_SERVER_KEY", "GATEWAY_ALLOW_ALL_USERS", "SUDO_PASSWORD",
	// Hermes's dynamic internal secrets.
	"AUXILIARY_VISION_API_KEY", "AUXILIARY_COMPRESSION_BASE_URL", "GATEWAY_RELAY_EU_SECRET",
}

func TestManagedCredentialsMatchHermes(t *testing.T) {
	for _, name := range hermesBlocklist {
		if !config.IsManagedCredential(name) {
			t.Errorf("%s is host-managed in Hermes, not here", name)
		}
		if !config.IsManagedCredential(strings.ToLower(name)) {
			t.Errorf("%s: names compare case-insensitively", strings.ToLower(name))
		}
	}
	// Hermes's carve-outs and non-secrets stay the script's.
	for _, name := range []string{"CLAUDE_CODE_OAUTH_TOKEN", "TENOR_API_KEY", "AWS_ACCESS_KEY_ID", "AUXILIARY_VISION_MODEL", "GATEWAY_RELAY_REGION", "NOUS_BASE_URL"} {
		if config.IsManagedCredential(name) {
			t.Errorf("%s is not host-managed in Hermes", name)
		}
	}
	seen := map[string]bool{}
	for _, name := range config.ManagedCredentials {
		if seen[name] {
			t.Errorf("%s listed twice", name)
		}
		seen[name] = true
		if name != strings.ToUpper(name) {
			t.Errorf("%s: list names upper-case", name)
		}
	}
}

// TestManagedCredentialsNeverPass: every host-managed credential is dropped from a script's
// environment, and refused when named for passthrough (terminal.env_passthrough or a skill's
// required_environment_variables), whatever its name looks like and in any case.
func TestManagedCredentialsNeverPass(t *testing.T) {
	names := append(slices.Clone(config.ManagedCredentials), "AUXILIARY_X_API_KEY", "AUXILIARY_X_BASE_URL", "GATEWAY_RELAY_X_KEY", "GATEWAY_RELAY_X_TOKEN")
	for _, name := range names {
		for _, spelling := range []string{name, strings.ToLower(name)} {
			for _, windows := range []bool{false, true} {
				kept, dropped := ScrubEnv([]string{spelling + "=v"}, EnvOptions{Passthrough: []string{spelling}, Windows: windows})
				if len(kept) != 0 || len(dropped) != 0 {
					t.Errorf("%s (windows=%v): kept %q, reported %q", spelling, windows, kept, dropped)
				}
			}
			if got := RefusedPassthrough([]string{"FOO", spelling}); !slices.Equal(got, []string{spelling}) {
				t.Errorf("%s: RefusedPassthrough = %q", spelling, got)
			}
		}
	}
}

func TestScrubEnvDelegated(t *testing.T) {
	environ := []string{
		"PATH=/bin",
		"HERMES_KANBAN_TASK=t_1",
		"HERMES_KANBAN_RUN_ID=7",
		"HERMES_KANBAN_DB=/k.db",
		"HERMES_HOME=/h",
	}
	opts := EnvOptions{Passthrough: []string{"HERMES_KANBAN_TASK", "HERMES_KANBAN_RUN_ID", "HERMES_KANBAN_DB"}}

	// Not delegated: passthrough carries the worker identity, and there is no marker.
	kept, _ := ScrubEnv(environ, opts)
	if want := []string{"PATH=/bin", "HERMES_KANBAN_TASK=t_1", "HERMES_KANBAN_RUN_ID=7", "HERMES_KANBAN_DB=/k.db", "HERMES_HOME=/h"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}

	// A subagent's script: the identity goes even though passed through (the board location
	// stays), and the marker fences it from every board.
	opts.Delegated = true
	kept, _ = ScrubEnv(environ, opts)
	if want := []string{"PATH=/bin", "HERMES_KANBAN_DB=/k.db", "HERMES_HOME=/h", "HERMES_DELEGATED_CHILD_CONTEXT=1"}; !slices.Equal(kept, want) {
		t.Errorf("delegated: kept %q, want %q", kept, want)
	}

	// The host itself runs for a delegated child: its marker (a fenced board root) passes on,
	// and so does the fence.
	opts.Delegated = false
	kept, _ = ScrubEnv(append(environ, "HERMES_DELEGATED_CHILD_CONTEXT=/h/kanban"), opts)
	if want := []string{"PATH=/bin", "HERMES_KANBAN_DB=/k.db", "HERMES_HOME=/h", "HERMES_DELEGATED_CHILD_CONTEXT=/h/kanban"}; !slices.Equal(kept, want) {
		t.Errorf("inherited marker: kept %q, want %q", kept, want)
	}

	// An empty marker is no marker, as in Hermes: it passes by rule 4 and fences nothing.
	kept, _ = ScrubEnv([]string{"HERMES_DELEGATED_CHILD_CONTEXT=", "HERMES_KANBAN_TASK=t"}, EnvOptions{Passthrough: []string{"HERMES_KANBAN_TASK"}})
	if want := []string{"HERMES_DELEGATED_CHILD_CONTEXT=", "HERMES_KANBAN_TASK=t"}; !slices.Equal(kept, want) {
		t.Errorf("empty marker: kept %q, want %q", kept, want)
	}
}

func ExampleScrubEnv() {
	environ := []string{
		"PATH=/usr/bin",
		"HOME=/home/me",
		"OPENAI_API_KEY=sk-123",
		"GITHUB_TOKEN=ghp_abc",
		"HERMES_HOME=/home/me/.hermes",
		"HERMES_BASE_URL=http://localhost:8080",
		"HERMES_KANBAN_DB=/tmp/k.db",
		"EDITOR=vim",
	}
	kept, dropped := ScrubEnv(environ, EnvOptions{Passthrough: []string{"HERMES_KANBAN_DB"}})
	for _, e := range kept {
		fmt.Println(e)
	}
	fmt.Println(DroppedHermesLine(dropped))
	// Output:
	// PATH=/usr/bin
	// HOME=/home/me
	// HERMES_HOME=/home/me/.hermes
	// HERMES_KANBAN_DB=/tmp/k.db
	// execute_code: dropped 1 non-allowlisted HERMES_* var(s) from the sandbox child env (HERMES_BASE_URL). This is intentional hardening (#27303); if a sandbox script legitimately needs one, declare it via env_passthrough in the skill/config so it passes by explicit opt-in.
}

func TestScrubEnvManaged(t *testing.T) {
	// The variable holding the web search key is dropped even when its name
	// looks harmless and even when someone lists it for passthrough.
	environ := []string{"PATH=/bin", "SEARCHCFG=k-123", "PATHSEARCH=k-456", "OTHER_KEY=x"}
	kept, _ := ScrubEnv(environ, EnvOptions{Passthrough: []string{"SEARCHCFG", "OTHER_KEY"}, Managed: []string{"searchcfg", "PATHSEARCH"}})
	if want := []string{"PATH=/bin", "OTHER_KEY=x"}; !slices.Equal(kept, want) {
		t.Fatalf("kept %q, want %q", kept, want)
	}
	if got := RefusedPassthrough([]string{"SEARCHCFG", "OTHER_KEY", "tavily_api_key"}, "searchcfg"); !slices.Equal(got, []string{"SEARCHCFG", "tavily_api_key"}) {
		t.Fatalf("refused %q", got)
	}
}

// TestClientEnv: a remote backend's client gets the variables a client needs, in their
// order, and no other: no secret, no host-managed credential even when listed, no
// secret-looking locale name.
func TestClientEnv(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "OPENAI_API_KEY=sk", "GH_TOKEN=ghp", "MY_SECRET_TOKEN=s",
		"DOCKER_HOST=unix:///d.sock", "DOCKER_PASSWORD=pw", "DOCKER_AUTH_CONFIG={}", "LC_ALL=C.UTF-8",
		"LC_TOKEN=x", "KUBECONFIG=/k", "SSH_AUTH_SOCK=/a.sock", "XDG_RUNTIME_DIR=/run/user/1",
		"CONTAINER_HOST=unix:///p.sock", "HTTPS_PROXY=http://u:p@proxy", "AWS_PROFILE=dev",
		"TERM=xterm", "SHELL=/bin/bash", "BRAVE_API_KEY=b", "noequals", "=empty", "Path=/win",
	}
	got := ClientEnv(environ, ClientEnvOptions{})
	want := []string{
		"PATH=/usr/bin", "HOME=/home/u", "DOCKER_HOST=unix:///d.sock", "LC_ALL=C.UTF-8", "KUBECONFIG=/k",
		"SSH_AUTH_SOCK=/a.sock", "XDG_RUNTIME_DIR=/run/user/1", "CONTAINER_HOST=unix:///p.sock",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ClientEnv =\n%q\nwant\n%q", got, want)
	}

	// Extra names pass; host-managed credentials never do, nor the web search key's
	// variable.
	got = ClientEnv(environ, ClientEnvOptions{Extra: []string{"AWS_PROFILE", "HTTPS_PROXY", "OPENAI_API_KEY", "gh_token", "BRAVE_API_KEY"}, Managed: []string{"brave_api_key"}})
	want = []string{
		"PATH=/usr/bin", "HOME=/home/u", "DOCKER_HOST=unix:///d.sock", "LC_ALL=C.UTF-8", "KUBECONFIG=/k",
		"SSH_AUTH_SOCK=/a.sock", "XDG_RUNTIME_DIR=/run/user/1", "CONTAINER_HOST=unix:///p.sock",
		"HTTPS_PROXY=http://u:p@proxy", "AWS_PROFILE=dev",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ClientEnv with extras =\n%q\nwant\n%q", got, want)
	}
	for _, name := range config.ManagedCredentials {
		if got := ClientEnv([]string{name + "=v"}, ClientEnvOptions{Extra: []string{name}}); len(got) != 0 {
			t.Errorf("%s reached a client: %q", name, got)
		}
	}

	// Windows: names ignore case, and the system variables pass.
	got = ClientEnv([]string{"Path=C:\\bin", "SystemRoot=C:\\Windows", "USERPROFILE=C:\\u", "TEMP=C:\\t", "docker_host=npipe://x", "GH_TOKEN=g"}, ClientEnvOptions{Windows: true})
	want = []string{"Path=C:\\bin", "SystemRoot=C:\\Windows", "USERPROFILE=C:\\u", "TEMP=C:\\t", "docker_host=npipe://x"}
	if !slices.Equal(got, want) {
		t.Errorf("ClientEnv on Windows =\n%q\nwant\n%q", got, want)
	}
}
