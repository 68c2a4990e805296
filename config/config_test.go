package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefault(t *testing.T) {
	d := Default()
	ce := d.CodeExecution
	if ce.Mode != "project" || ce.Timeout != 300 || ce.MaxToolCalls != 50 ||
		ce.KernelIdleTimeout != 1800 || ce.MaxSessionKernels != 4 || ce.MemoryLimitMB != 512 ||
		ce.DiskLimitMB != 1024 || ce.ProjectMemoryLimitMB != 4096 || ce.ProcessLimit != 256 ||
		ce.Timezone != "" {
		t.Fatalf("unexpected defaults: %+v", ce)
	}
	if ce.ConfineToolsToWorkdir {
		t.Fatal("confine_tools_to_workdir must default to false")
	}
	if ce.Landlock != LandlockAuto {
		t.Fatalf("landlock defaults to %q, want auto", ce.Landlock)
	}
	if len(d.Terminal.EnvPassthrough) != 0 || d.Terminal.Backend != "local" || d.Source != "" || d.Warnings != nil ||
		d.Used != nil || d.Ignored != nil || d.Notes != nil || d.Timezone != "" || d.TimezoneSource != "" {
		t.Fatalf("unexpected defaults: %+v", d)
	}
	if d.Approvals != (Approvals{Mode: "manual", CronMode: "ask", Timeout: 120}) {
		t.Fatalf("approvals defaults: %+v", d.Approvals)
	}
}

// settings is c without the parse report (Used, Ignored, Notes), for comparisons of
// settings.
func settings(c Config) Config {
	c.Used, c.Ignored, c.Notes = nil, nil, nil
	return c
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(*Config)
	}{
		{name: "empty", in: ""},
		{name: "only comments", in: "# nothing here\n   # still nothing\n"},
		{name: "document marker only", in: "---\n"},
		{name: "null sections", in: "code_execution:\nterminal:\n"},
		{name: "spec example", in: `
code_execution:
  mode: project              # project | strict
  timeout: 300               # seconds
  max_tool_calls: 50         # per execution
  kernel_idle_timeout: 1800  # seconds
  max_session_kernels: 4
terminal:
  env_passthrough: [HERMES_BASE_URL]   # exact names only
`, want: func(c *Config) { c.Terminal.EnvPassthrough = []string{"HERMES_BASE_URL"} }},
		{name: "all keys", in: `
code_execution:
  mode: "  STRICT "
  sandbox: " Wasm"
  timeout: 86400
  max_tool_calls: 0
  kernel_idle_timeout: 1
  max_session_kernels: 1
  memory_limit_mb: 4096
  project_memory_limit_mb: 16777216
  process_limit: 16
  disk_limit_mb: 65536
  timezone: Europe/Paris
  session_store: s3://bucket/kernels/
  session_store_max_mb: 8
  session_ttl: 0
  session_checkpoint: Every_Call
  session_store_compression: small
  session_lease: 2
terminal:
  env_passthrough:
    - HERMES_BASE_URL
    - MY_API_KEY
    - HERMES_BASE_URL
`, want: func(c *Config) {
			c.CodeExecution = CodeExecution{Mode: "strict", Sandbox: "wasm", Timeout: 86400, MaxToolCalls: 0,
				KernelIdleTimeout: 1, MaxSessionKernels: 1, MemoryLimitMB: 4096, ProjectMemoryLimitMB: 16777216, ProcessLimit: 16,
				DiskLimitMB: 65536, WarmPool: 2, Timezone: "Europe/Paris", Landlock: LandlockAuto,
				SessionStore: "s3://bucket/kernels", SessionStoreMaxMB: 8, SessionTTL: 0, SessionCheckpoint: CheckpointEveryCall, SessionLease: 2, SessionStoreCompression: CompressionSmall}
			c.Timezone, c.TimezoneSource = "Europe/Paris", "code_execution.timezone"
			c.Terminal.EnvPassthrough = []string{"HERMES_BASE_URL", "MY_API_KEY"}
		}},
		{name: "minimum memory and timeout", in: "code_execution: {timeout: 1, memory_limit_mb: 16}",
			want: func(c *Config) { c.CodeExecution.Timeout = 1; c.CodeExecution.MemoryLimitMB = 16 }},
		{name: "minimum disk limit", in: "code_execution: {disk_limit_mb: 1}",
			want: func(c *Config) { c.CodeExecution.DiskLimitMB = 1 }},
		{name: "mode Project mixed case", in: "code_execution:\n  mode: Project\n"},
		{name: "empty mode means default", in: "code_execution:\n  mode: ''\n"},
		{name: "hex integer", in: "code_execution:\n  timeout: 0x10\n",
			want: func(c *Config) { c.CodeExecution.Timeout = 16 }},
		{name: "anchors and aliases", in: "code_execution:\n  timeout: &t 120\n  kernel_idle_timeout: *t\n",
			want: func(c *Config) { c.CodeExecution.Timeout = 120; c.CodeExecution.KernelIdleTimeout = 120 }},
		{name: "empty passthrough list", in: "terminal:\n  env_passthrough: []\n"},
		{name: "null passthrough", in: "terminal:\n  env_passthrough:\n"},
		{name: "UTC timezone", in: "code_execution:\n  timezone: UTC\n",
			want: func(c *Config) {
				c.CodeExecution.Timezone, c.Timezone, c.TimezoneSource = "UTC", "UTC", "code_execution.timezone"
			}},
		{name: "empty timezone", in: "code_execution:\n  timezone: ''\n"},
		{name: "null timezones", in: "timezone:\ncode_execution:\n  timezone: null\n"},
		{name: "top-level timezone", in: "timezone: Asia/Kolkata\n",
			want: func(c *Config) { c.Timezone, c.TimezoneSource = "Asia/Kolkata", "timezone" }},
		{name: "code_execution.timezone wins over the top level", in: "timezone: Asia/Kolkata\ncode_execution:\n  timezone: Europe/Paris\n",
			want: func(c *Config) {
				c.CodeExecution.Timezone, c.Timezone, c.TimezoneSource = "Europe/Paris", "Europe/Paris", "code_execution.timezone"
			}},
		{name: "null mode means the default", in: "code_execution:\n  mode: null\napprovals:\n  mode:\n  cron_mode: ~\n"},
		{name: "empty approvals mode means manual", in: "approvals:\n  mode: ''\n  cron_mode: ''\n"},
		{name: "terminal backend local", in: "terminal:\n  backend: Local\n"},
		{name: "terminal backend null", in: "terminal:\n  backend:\n"},
		{name: "confine tools to workdir", in: "code_execution:\n  confine_tools_to_workdir: true\n",
			want: func(c *Config) { c.CodeExecution.ConfineToolsToWorkdir = true }},
		{name: "landlock off", in: "code_execution:\n  landlock: \"Off\"\n",
			want: func(c *Config) { c.CodeExecution.Landlock = LandlockOff }},
		{name: "landlock a bare off is YAML's false: off", in: "code_execution:\n  landlock: off\n",
			want: func(c *Config) { c.CodeExecution.Landlock = LandlockOff }},
		{name: "landlock false", in: "code_execution:\n  landlock: false\n",
			want: func(c *Config) { c.CodeExecution.Landlock = LandlockOff }},
		{name: "landlock true means auto", in: "code_execution:\n  landlock: true\n"},
		{name: "landlock auto", in: "code_execution:\n  landlock: auto\n"},
		{name: "landlock null means auto", in: "code_execution:\n  landlock:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in), "config.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Default()
			want.Source = "config.yaml"
			if tt.want != nil {
				tt.want(&want)
			}
			if !reflect.DeepEqual(settings(got), want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if got.Warnings != nil || got.Ignored != nil {
				t.Fatalf("warnings %q, ignored %v", got.Warnings, got.Ignored)
			}
		})
	}
}

func TestParseWeb(t *testing.T) {
	cfg, err := Parse([]byte(`
web:
  search:
    provider: " SearXNG "
    url: http://127.0.0.1:8888
  extract:
    char_limit: 20000
    cache_max_mb: 0
    cache_entry_max_mb: 2
    cache_ttl_minutes: 90
  allow_private_networks: true
`), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Web{Search: WebSearch{Provider: "searxng", URL: "http://127.0.0.1:8888"},
		Extract: WebExtract{CharLimit: 20000, CacheMaxMB: 0, CacheEntryMaxMB: 2, CacheTTLMinutes: 90}, AllowPrivateNetworks: true}
	if !reflect.DeepEqual(cfg.Web, want) {
		t.Fatalf("got %+v, want %+v", cfg.Web, want)
	}
	var used []string
	for _, k := range cfg.Used {
		if strings.HasPrefix(k.Path, "web.extract.cache") {
			used = append(used, k.Path+"="+k.Value)
		}
	}
	if want := []string{"web.extract.cache_max_mb=0", "web.extract.cache_entry_max_mb=2", "web.extract.cache_ttl_minutes=90"}; !reflect.DeepEqual(used, want) {
		t.Errorf("Used: %q, want %q", used, want)
	}
	for provider, env := range map[string]string{"brave": "BRAVE_API_KEY", "tavily": "TAVILY_API_KEY"} {
		cfg, err := Parse([]byte("web:\n  search:\n    provider: "+provider+"\n"), "config.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Web.Search.APIKeyEnv != env {
			t.Errorf("%s: api_key_env defaults to %q, want %q", provider, cfg.Web.Search.APIKeyEnv, env)
		}
	}
	cfg, err = Parse([]byte("web:\n  search:\n    provider: brave\n    api_key_env: MY_BRAVE\n"), "config.yaml")
	if err != nil || cfg.Web.Search.APIKeyEnv != "MY_BRAVE" {
		t.Fatalf("%v %+v", err, cfg.Web)
	}
	if d := Default().Web; d.Extract != (WebExtract{CharLimit: 15000, CacheMaxMB: 256, CacheEntryMaxMB: 8, CacheTTLMinutes: 1440}) ||
		d.Search.Provider != "" || d.AllowPrivateNetworks {
		t.Fatalf("web defaults: %+v", d)
	}
}

// An unknown code_execution.mode runs in strict mode, the sandbox, never in project mode
// (Hermes's fallback): a typo must not drop the sandbox. The warning names the
// value, the nearest mode and the fallback.
func TestParseUnknownModeFallsBack(t *testing.T) {
	for in, suggestion := range map[string]string{"stict": "strict", " Sttrict ": "strict", "projct": "project", "docker": ""} {
		got, err := Parse([]byte("code_execution:\n  mode: \""+in+"\"\n"), "config.yaml")
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if got.CodeExecution.Mode != "strict" {
			t.Errorf("%q: mode = %q, want strict", in, got.CodeExecution.Mode)
		}
		if len(got.Warnings) != 1 {
			t.Fatalf("%q: warnings = %q, want one", in, got.Warnings)
		}
		want := fmt.Sprintf(`config.yaml: line 2: unknown code_execution.mode %q; falling back to "strict", the sandbox, so that a typo never runs scripts without it (valid modes: project, strict)`, in)
		if suggestion != "" {
			want += fmt.Sprintf("; did you mean %q?", suggestion)
		}
		if got.Warnings[0] != want {
			t.Errorf("%q: warning\n%s\nwant\n%s", in, got.Warnings[0], want)
		}
	}
	for in, want := range map[string]string{"strict": "strict", " STRICT ": "strict", "Project": "project", "": "project", "  ": "project"} {
		got, err := Parse([]byte("code_execution:\n  mode: \""+in+"\"\n"), "config.yaml")
		if err != nil || got.CodeExecution.Mode != want || got.Warnings != nil {
			t.Errorf("%q: %v %q %q", in, err, got.CodeExecution.Mode, got.Warnings)
		}
	}
}

// TestParseLandlockTypo: an unknown code_execution.landlock value keeps
// Landlock on (auto, the safer value) and says so, with a did-you-mean.
func TestParseLandlockTypo(t *testing.T) {
	got, err := Parse([]byte("code_execution:\n  landlock: of\n"), "config.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got.CodeExecution.Landlock != LandlockAuto {
		t.Fatalf("landlock = %q, want auto", got.CodeExecution.Landlock)
	}
	if len(got.Warnings) != 1 {
		t.Fatalf("warnings = %q, want one", got.Warnings)
	}
	for _, want := range []string{"config.yaml: line 2", "code_execution.landlock", `"of"`, `using "auto", the safer value`, `did you mean "off"?`} {
		if !strings.Contains(got.Warnings[0], want) {
			t.Errorf("warning %q does not contain %q", got.Warnings[0], want)
		}
	}
	if _, err := Parse([]byte("code_execution:\n  landlock: [off]\n"), "config.yaml"); err == nil ||
		!strings.Contains(err.Error(), `code_execution.landlock must be "auto" or "off", got a list`) {
		t.Fatalf("a list: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		line    int
		key     string
		message string // the exact Error() text when it starts with "config.yaml", else substrings separated by "|"
	}{
		{
			name: "unknown provider",
			in:   "web:\n  search:\n    provider: searx\n",
			line: 3, key: "web.search.provider",
			message: `config.yaml: line 3: web.search.provider is "searx"; valid providers: searxng, brave, tavily; did you mean "searxng"?`,
		},
		{
			name: "session store URL without a bucket",
			in:   "code_execution:\n  session_store: s3://\n",
			line: 2, key: "code_execution.session_store",
			message: "names no bucket|s3://bucket/prefix",
		},
		{
			name: "session store URL of an unknown kind",
			in:   "code_execution:\n  session_store: gs://bucket\n",
			line: 2, key: "code_execution.session_store",
			message: "a store this executor does not know|s3://bucket/prefix",
		},
		{
			name: "session checkpoint unknown",
			in:   "code_execution:\n  session_checkpoint: always\n",
			line: 2, key: "code_execution.session_checkpoint",
			message: "must be `off` or `every_call`",
		},
		{
			name: "session lease too short",
			in:   "code_execution:\n  session_lease: 1\n",
			line: 2, key: "code_execution.session_lease",
			message: "session_lease",
		},
		{
			name: "searxng needs a url",
			in:   "web:\n  search:\n    provider: searxng\n",
			line: 3, key: "web.search.url",
			message: "web.search.url is required for the searxng provider|http://127.0.0.1:8888",
		},
		{
			name: "url not http",
			in:   "web:\n  search:\n    url: ftp://x\n",
			line: 3, key: "web.search.url",
			message: "not an http(s) URL",
		},
		{
			name: "url with credentials",
			in:   "web:\n  search:\n    url: https://user:pw@search.example\n",
			line: 3, key: "web.search.url",
			message: "must not carry credentials",
		},
		{
			name: "api key in place of its variable",
			in:   "web:\n  search:\n    provider: brave\n    api_key_env: BSA-abc.def\n",
			line: 4, key: "web.search.api_key_env",
			message: "must name an environment variable|never in config.yaml",
		},
		{
			name: "confine_tools_to_workdir not a bool",
			in:   "code_execution:\n  confine_tools_to_workdir: yes please\n",
			line: 2, key: "code_execution.confine_tools_to_workdir",
			message: "must be true or false",
		},
		{
			name: "allow_private_networks not a bool",
			in:   "web:\n  allow_private_networks: sometimes\n",
			line: 2, key: "web.allow_private_networks",
			message: "must be true or false",
		},
		{
			name: "char_limit out of range",
			in:   "web:\n  extract:\n    char_limit: 10\n",
			line: 3, key: "web.extract.char_limit",
			message: "out of range (must be between 100 and 1000000)",
		},
		{
			name: "cache_max_mb out of range",
			in:   "web:\n  extract:\n    cache_max_mb: -1\n",
			line: 3, key: "web.extract.cache_max_mb",
			message: "out of range (must be between 0 and 65536)",
		},
		{
			name: "cache_entry_max_mb out of range",
			in:   "web:\n  extract:\n    cache_entry_max_mb: 0\n",
			line: 3, key: "web.extract.cache_entry_max_mb",
			message: "out of range (must be between 1 and 1024)",
		},
		{
			name: "cache_ttl_minutes not an integer",
			in:   "web:\n  extract:\n    cache_ttl_minutes: 1d\n",
			line: 3, key: "web.extract.cache_ttl_minutes",
			message: "must be an integer (minutes)",
		},
		{
			name: "duplicate key",
			in:   "code_execution:\n  timeout: 3\n  timeout: 4\n",
			line: 3, key: "code_execution.timeout",
			message: `duplicate key "code_execution.timeout" (first defined at line 2)`,
		},
		{
			name: "string for timeout",
			in:   "code_execution:\n  timeout: soon\n",
			line: 2, key: "code_execution.timeout",
			message: `config.yaml: line 2: code_execution.timeout must be an integer (seconds), got string "soon"`,
		},
		{
			name: "cache_max_mb out of range",
			in:   "web:\n  extract:\n    cache_max_mb: -1\n",
			line: 3, key: "web.extract.cache_max_mb",
			message: "out of range (must be between 0 and 65536)",
		},
		{
			name: "cache_entry_max_mb out of range",
			in:   "web:\n  extract:\n    cache_entry_max_mb: 0\n",
			line: 3, key: "web.extract.cache_entry_max_mb",
			message: "out of range (must be between 1 and 1024)",
		},
		{
			name: "cache_ttl_minutes not an integer",
			in:   "web:\n  extract:\n    cache_ttl_minutes: 1d\n",
			line: 3, key: "web.extract.cache_ttl_minutes",
			message: "must be an integer (minutes)",
		},
		{
			name: "quoted number for timeout",
			in:   "code_execution:\n  timeout: \"300\"\n",
			line: 2, key: "code_execution.timeout",
			message: `code_execution.timeout must be an integer (seconds), got string "300"`,
		},
		{
			name: "float for max_tool_calls",
			in:   "code_execution:\n  max_tool_calls: 2.5\n",
			line: 2, key: "code_execution.max_tool_calls",
			message: `code_execution.max_tool_calls must be an integer, got float "2.5"`,
		},
		{
			name: "bool for kernel_idle_timeout",
			in:   "code_execution:\n  kernel_idle_timeout: yes\n",
			line: 2, key: "code_execution.kernel_idle_timeout",
			message: `must be an integer (seconds), got string "yes"`,
		},
		{
			name: "null timeout",
			in:   "code_execution:\n  timeout:\n  mode: strict\n",
			line: 2, key: "code_execution.timeout",
			message: `code_execution.timeout must be an integer (seconds), got null`,
		},
		{
			name: "map for env_passthrough",
			in:   "terminal:\n  env_passthrough:\n    HERMES_BASE_URL: yes\n",
			line: 3, key: "terminal.env_passthrough",
			message: `config.yaml: line 3: terminal.env_passthrough must be a list of environment variable names, got a mapping`,
		},
		{
			name: "string for env_passthrough",
			in:   "terminal:\n  env_passthrough: HERMES_BASE_URL\n",
			line: 2, key: "terminal.env_passthrough",
			message: `terminal.env_passthrough must be a list of environment variable names, got string "HERMES_BASE_URL"`,
		},
		{
			name: "number in env_passthrough",
			in:   "terminal:\n  env_passthrough: [A, 12]\n",
			line: 2, key: "terminal.env_passthrough[1]",
			message: `terminal.env_passthrough[1] must be a string naming an environment variable, got integer "12"`,
		},
		{
			name: "empty env_passthrough entry",
			in:   "terminal:\n  env_passthrough:\n    - A\n    - ''\n",
			line: 4, key: "terminal.env_passthrough[1]",
			message: `terminal.env_passthrough[1] is empty`,
		},
		{
			name: "env_passthrough entry with =",
			in:   "terminal:\n  env_passthrough: [\"A=1\"]\n",
			line: 2, key: "terminal.env_passthrough[0]",
			message: `terminal.env_passthrough[0] is "A=1", which contains "="`,
		},
		{
			name: "section is a list",
			in:   "code_execution: [1, 2]\n",
			line: 1, key: "code_execution",
			message: `"code_execution" must be a mapping of keys to values, got a list`,
		},
		{
			name: "section is a string",
			in:   "terminal: bash\n",
			line: 1, key: "terminal",
			message: `"terminal" must be a mapping of keys to values, got string "bash"`,
		},
		{
			name: "top level is a list",
			in:   "- a\n- b\n",
			line: 1, key: "",
			message: `the top level must be a mapping of keys to values, got a list`,
		},
		{
			name: "mode is not a string",
			in:   "code_execution:\n  mode: 3\n",
			line: 2, key: "code_execution.mode",
			message: `code_execution.mode must be a string ("project" or "strict"), got integer "3"`,
		},
		{
			name: "timeout too small",
			in:   "code_execution:\n  timeout: 0\n",
			line: 2, key: "code_execution.timeout",
			message: `config.yaml: line 2: code_execution.timeout is 0, which is out of range (must be between 1 and 86400)`,
		},
		{
			name: "timeout too large",
			in:   "code_execution:\n  timeout: 86401\n",
			line: 2, key: "code_execution.timeout",
			message: `code_execution.timeout is 86401, which is out of range (must be between 1 and 86400)`,
		},
		{
			name: "timeout overflows int64",
			in:   "code_execution:\n  timeout: 99999999999999999999999\n",
			line: 2, key: "code_execution.timeout",
			message: `out of range (must be between 1 and 86400)`,
		},
		{
			name: "negative max_tool_calls",
			in:   "code_execution:\n  max_tool_calls: -1\n",
			line: 2, key: "code_execution.max_tool_calls",
			message: `code_execution.max_tool_calls is -1, which is out of range (must be 0 or more)`,
		},
		{
			name: "memory too small",
			in:   "code_execution:\n  memory_limit_mb: 8\n",
			line: 2, key: "code_execution.memory_limit_mb",
			message: `code_execution.memory_limit_mb is 8, which is out of range (must be between 16 and 4096)`,
		},
		{
			name: "memory too large",
			in:   "code_execution:\n  memory_limit_mb: 8192\n",
			line: 2, key: "code_execution.memory_limit_mb",
			message: `(must be between 16 and 4096)`,
		},
		{
			name: "project memory too small",
			in:   "code_execution:\n  project_memory_limit_mb: 8\n",
			line: 2, key: "code_execution.project_memory_limit_mb",
			message: `code_execution.project_memory_limit_mb is 8, which is out of range (must be between 16 and 16777216)`,
		},
		{
			name: "process limit too small",
			in:   "code_execution:\n  process_limit: 4\n",
			line: 2, key: "code_execution.process_limit",
			message: `code_execution.process_limit is 4, which is out of range (must be between 16 and 4194304)`,
		},
		{
			name: "process limit too large",
			in:   "code_execution:\n  process_limit: 4194305\n",
			line: 2, key: "code_execution.process_limit",
			message: `(must be between 16 and 4194304)`,
		},
		{
			name: "disk limit zero",
			in:   "code_execution:\n  timeout: 5\n  disk_limit_mb: 0\n",
			line: 3, key: "code_execution.disk_limit_mb",
			message: `code_execution.disk_limit_mb is 0, which is out of range (must be between 1 and 65536)`,
		},
		{
			name: "disk limit too large",
			in:   "code_execution:\n  disk_limit_mb: 65537\n",
			line: 2, key: "code_execution.disk_limit_mb",
			message: `(must be between 1 and 65536)`,
		},
		{
			name: "disk limit not a number",
			in:   "code_execution:\n  disk_limit_mb: 1GB\n",
			line: 2, key: "code_execution.disk_limit_mb",
			message: `code_execution.disk_limit_mb`,
		},
		{
			name: "unknown timezone",
			in:   "code_execution:\n  timezone: Mars/Olympus_Mons\n",
			line: 2, key: "code_execution.timezone",
			message: `code_execution.timezone: unknown time zone "Mars/Olympus_Mons"`,
		},
		{
			name: "Local timezone",
			in:   "code_execution:\n  timezone: Local\n",
			line: 2, key: "code_execution.timezone",
			message: `not "Local"`,
		},
		{
			name: "timezone not a string",
			in:   "code_execution:\n  timezone: 5\n",
			line: 2, key: "code_execution.timezone",
			message: `code_execution.timezone must be a string naming an IANA time zone`,
		},
		{
			name: "invalid yaml",
			in:   "code_execution:\n  timeout: 3\n mode: [\n",
			line: 0, key: "",
			message: `config.yaml: |invalid YAML: `,
		},
		{
			name: "two documents",
			in:   "code_execution: {}\n---\nterminal: {}\n",
			line: 2, key: "",
			message: `more than one YAML document`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.in), "config.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want an error", cfg)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *config.Error", err, err)
			}
			if ce.Path != "config.yaml" {
				t.Errorf("Path = %q", ce.Path)
			}
			if tt.line != 0 && ce.Line != tt.line {
				t.Errorf("Line = %d, want %d (%v)", ce.Line, tt.line, err)
			}
			if ce.Key != tt.key {
				t.Errorf("Key = %q, want %q", ce.Key, tt.key)
			}
			if strings.HasPrefix(tt.message, "config.yaml: line") {
				if err.Error() != tt.message {
					t.Errorf("Error() =\n  %s\nwant\n  %s", err, tt.message)
				}
				return
			}
			for _, part := range strings.Split(tt.message, "|") {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Error() = %q, want it to contain %q", err, part)
				}
			}
		})
	}
}

func TestParseYAMLSyntaxErrorHasLine(t *testing.T) {
	_, err := Parse([]byte("code_execution:\n  timeout: 3\n  mode: \"unterminated\n"), "c.yaml")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want *Error", err)
	}
	if ce.Line == 0 || !strings.Contains(ce.Msg, "invalid YAML") || ce.Unwrap() == nil {
		t.Fatalf("got %+v", ce)
	}
}

func TestParseSourceInErrors(t *testing.T) {
	_, err := Parse([]byte("bogus: 1\ncode_execution:\n  timeout: x\n"), "")
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: code_execution.timeout must be an integer") {
		t.Fatalf("got %v", err)
	}
}

func TestHermesHome(t *testing.T) {
	t.Setenv("HERMES_HOME", "/opt/hermes-home")
	if got := HermesHome(); got != "/opt/hermes-home" {
		t.Fatalf("HermesHome() = %q", got)
	}
	t.Setenv("HERMES_HOME", "")
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	if got, want := HermesHome(), filepath.Join(home, ".hermes"); got != want {
		t.Fatalf("HermesHome() = %q, want %q", got, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HERMES_HOME", dir)

	t.Run("no file gives defaults", func(t *testing.T) {
		t.Setenv("HERMES_TIMEZONE", "")
		got, err := Load("")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, Default()) {
			t.Fatalf("got %+v", got)
		}
	})

	t.Run("missing explicit path", func(t *testing.T) {
		missing := filepath.Join(dir, "nope.yaml")
		_, err := Load(missing)
		var ce *Error
		if !errors.As(err, &ce) || ce.Path != missing || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("got %v", err)
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("error does not wrap os.ErrNotExist: %v", err)
		}
	})

	t.Run("default file", func(t *testing.T) {
		p := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(p, []byte("code_execution:\n  mode: strict\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		got, err := Load("")
		if err != nil {
			t.Fatal(err)
		}
		if got.Source != p || got.CodeExecution.Mode != "strict" {
			t.Fatalf("got %+v", got)
		}
	})

	t.Run("explicit file with error", func(t *testing.T) {
		p := filepath.Join(dir, "other.yaml")
		if err := os.WriteFile(p, []byte("\n\ncode_execution:\n  timeout: -5\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		want := p + ": line 4: code_execution.timeout is -5, which is out of range (must be between 1 and 86400)"
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
}

func TestSuggest(t *testing.T) {
	names := []string{"mode", "timeout", "max_tool_calls"}
	for in, want := range map[string]string{
		"timout":         "timeout",
		"TIMEOUT":        "timeout",
		"mod":            "mode",
		"max_tool_call":  "max_tool_calls",
		"max_tools_call": "max_tool_calls",
		"banana":         "",
		"":               "",
	} {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"# comment only\n",
		"code_execution:\n  mode: strict\n  timeout: 30\n",
		"code_execution:\n  mode: WEIRD\n",
		"code_execution: {timeout: 0x7fffffffffffffff}\n",
		"code_execution:\n  timeout: &a 5\n  max_tool_calls: *a\n",
		"terminal:\n  env_passthrough: [HERMES_BASE_URL, A=B]\n",
		"terminal:\n  env_passthrough: {a: b}\n",
		"- 1\n- 2\n",
		"a: &a [*a]\n",
		"code_execution: !!binary aGVsbG8=\n",
		"? [a, b]\n: c\n",
		"code_execution:\n  timezone: America/New_York\n",
		"---\na: 1\n---\nb: 2\n",
		"\xff\xfe bad utf8",
		"<<: {code_execution: {}}\n",
		"timezone: Asia/Tokyo\napprovals: {mode: off, cron_mode: approve}\nmodel: {default: x}\n",
		"code_execution: {kernel_idle_timeout: -1, max_session_kernels: 0, kernel_mode: session}\n",
		"terminal: {backend: docker, timeout: 180}\napprovals: {cron_mode: yes, deny: [rm*]}\n",
		"terminal: {backend: ssh, ssh_host: h, ssh_user: u, ssh_port: 2222, ssh_key: ~/k}\n",
		"terminal: {backend: exec, exec_command: [kubectl, exec, -i, p, --]}\n",
		"terminal: {backend: docker, docker_env: [A=1], docker_volumes: [\"/a:/b:ro\"], container_cpu: 0.5}\n",
		"terminal: {backend: modal}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		ce := cfg.CodeExecution
		if ce.Mode != ModeProject && ce.Mode != ModeStrict {
			t.Fatalf("mode %q", ce.Mode)
		}
		if ce.Timeout < MinTimeout || ce.Timeout > MaxTimeout || ce.MaxToolCalls < 0 ||
			ce.KernelIdleTimeout < 1 || ce.MaxSessionKernels < 1 ||
			ce.MemoryLimitMB < MinMemoryLimitMB || ce.MemoryLimitMB > MaxMemoryLimitMB ||
			ce.DiskLimitMB < MinDiskLimitMB || ce.DiskLimitMB > MaxDiskLimitMB ||
			ce.ProjectMemoryLimitMB < MinProjectMemoryLimitMB || ce.ProjectMemoryLimitMB > MaxProjectMemoryLimitMB ||
			ce.ProcessLimit < MinProcessLimit || ce.ProcessLimit > MaxProcessLimit {
			t.Fatalf("out-of-range config accepted: %+v", ce)
		}
		if !slices.Contains(ApprovalModes, cfg.Approvals.Mode) ||
			!slices.Contains([]string{CronModeAsk, CronModeDeny, CronModeApprove}, cfg.Approvals.CronMode) ||
			cfg.Approvals.Timeout < 1 || cfg.Approvals.Timeout > MaxApprovalTimeout || !slices.Contains(Backends, cfg.Terminal.Backend) {
			t.Fatalf("invalid approvals or terminal accepted: %+v %+v", cfg.Approvals, cfg.Terminal)
		}
		if cfg.Timezone != "" && checkZone(cfg.Timezone) != nil {
			t.Fatalf("invalid timezone %q accepted", cfg.Timezone)
		}
		for _, k := range cfg.Used {
			if k.Line < 1 || k.Value == "" {
				t.Fatalf("used key without a line or value: %+v", k)
			}
		}
		switch tm := cfg.Terminal; {
		case tm.SSHPort < 1 || tm.SSHPort > 65535 || tm.ContainerCPU < 0 || tm.ContainerMemoryMB < 0 || tm.DockerImage == "":
			t.Fatalf("invalid terminal settings accepted: %+v", tm)
		case tm.Backend == BackendSSH && (tm.SSHHost == "" || tm.SSHUser == ""):
			t.Fatalf("ssh backend without host or user: %+v", tm)
		case tm.Backend == BackendExec && len(tm.ExecCommand) == 0:
			t.Fatalf("exec backend without a command: %+v", tm)
		}
		for _, name := range cfg.Terminal.EnvPassthrough {
			if name == "" || strings.Contains(name, "=") {
				t.Fatalf("bad passthrough name %q accepted", name)
			}
		}
	})
}

func TestParseApprovalsAndPool(t *testing.T) {
	cfg, err := Parse([]byte("approvals:\n  mode: DENY\n  timeout: 5\ncode_execution:\n  warm_pool: 0\n"), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Approvals != (Approvals{Mode: "deny", CronMode: "ask", Timeout: 5}) || cfg.CodeExecution.WarmPool != 0 {
		t.Fatalf("got %+v %+v", cfg.Approvals, cfg.CodeExecution)
	}
	cfg, err = Parse([]byte("approvals:\n  mode: off\n"), "config.yaml")
	if err != nil || cfg.Approvals.Mode != "off" {
		t.Fatalf("a bare off (a YAML boolean) means off: %v %+v", err, cfg.Approvals)
	}
	for in, want := range map[string]string{
		"approvals:\n  mode: [manual]\n":     `approvals.mode must be one of manual, smart, off (ask and deny are also accepted), got a list`,
		"approvals:\n  timeout: 0\n":         "out of range (must be between 1 and 31536000)",
		"code_execution:\n  warm_pool: 17\n": "out of range (must be between 0 and 16)",
	} {
		if _, err := Parse([]byte(in), "config.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

// code_execution.sandbox: none and wasm (any case), YAML booleans as off
// and on, and a typo runs in the sandbox with a warning naming the nearest
// value: a typo never drops the sandbox that was asked for.
func TestParseSandbox(t *testing.T) {
	for in, want := range map[string]string{
		"":               SandboxNone,
		"sandbox: ":      SandboxNone,
		"sandbox: none":  SandboxNone,
		"sandbox: WASM":  SandboxWasm,
		"sandbox: yes":   SandboxWasm,
		"sandbox: false": SandboxNone,
	} {
		cfg, err := Parse([]byte("code_execution:\n  mode: project\n  "+in+"\n"), "config.yaml")
		require.NoError(t, err, in)
		require.Equal(t, want, cfg.CodeExecution.Sandbox, in)
		require.Empty(t, cfg.Warnings, in)
	}
	cfg, err := Parse([]byte("code_execution:\n  sandbox: wsam\n"), "config.yaml")
	require.NoError(t, err)
	require.Equal(t, SandboxWasm, cfg.CodeExecution.Sandbox)
	require.Equal(t, []string{`config.yaml: line 2: unknown code_execution.sandbox "wsam"; using "wasm", the sandbox, so that a typo never runs scripts outside it (valid values: none, wasm); did you mean "wasm"?`}, cfg.Warnings)
	_, err = Parse([]byte("code_execution:\n  sandbox: [wasm]\n"), "config.yaml")
	require.ErrorContains(t, err, `code_execution.sandbox must be "none" or "wasm", got a list`)
}
