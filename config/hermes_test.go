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
	"time"

	"gopkg.in/yaml.v3"
)

// fixture is a whole Hermes config.yaml: every section Hermes has, values in its spelling.
const fixture = "../testdata/hermes/config.yaml"

func TestHermesFixtureLoads(t *testing.T) {
	t.Setenv("HERMES_TIMEZONE", "")
	cfg, err := Load(fixture)
	if err != nil {
		t.Fatalf("a Hermes config must load: %v", err)
	}
	if cfg.Warnings != nil {
		t.Fatalf("Hermes's own keys must not warn: %q", cfg.Warnings)
	}
	want := Default()
	want.Source = fixture
	want.CodeExecution.Timeout = 3
	want.CodeExecution.MaxToolCalls = 2
	want.CodeExecution.WarmPool = 0
	want.Terminal.EnvPassthrough = []string{"HERMES_BASE_URL", "COMPAT_SERVICE_TOKEN"}
	want.Terminal.Cwd = "."
	want.Terminal.DockerImage = "nikolaik/python-nodejs:python3.14-nodejs22"
	want.Approvals = Approvals{Mode: ApprovalsManual, CronMode: CronModeApprove, Timeout: 300}
	want.Timezone, want.TimezoneSource = "Asia/Tokyo", "timezone"
	if got := settings(cfg); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}

	var used []string
	for _, k := range cfg.Used {
		used = append(used, k.Path+"="+k.Value)
	}
	wantUsed := []string{"timezone=Asia/Tokyo", "terminal.backend=local", "terminal.cwd=.",
		"terminal.env_passthrough=[HERMES_BASE_URL, COMPAT_SERVICE_TOKEN]",
		"terminal.docker_image=nikolaik/python-nodejs:python3.14-nodejs22",
		"terminal.docker_forward_env=[]", "terminal.docker_env=[]", "terminal.docker_network=true",
		"terminal.docker_extra_args=[]", "terminal.container_cpu=1", "terminal.container_memory=5120",
		"terminal.container_persistent=true", `terminal.ssh_host=""`, `terminal.ssh_user=""`,
		"terminal.ssh_port=22", `terminal.ssh_key=""`,
		"approvals.mode=manual", "approvals.timeout=300", "approvals.cron_mode=approve",
		"code_execution.mode=project", "code_execution.timeout=3", "code_execution.max_tool_calls=2",
		"code_execution.kernel_idle_timeout=1800", "code_execution.max_session_kernels=4",
		"code_execution.warm_pool=0"}
	if !slices.Equal(used, wantUsed) {
		t.Fatalf("used:\n  %q\nwant\n  %q", used, wantUsed)
	}

	// Every key of the file is either used or ignored, with its line, and a section that is
	// ignored as a whole is listed once.
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	reported := map[string]int{}
	for _, k := range append(slices.Clone(cfg.Used), cfg.Ignored...) {
		if _, dup := reported[k.Path]; dup {
			t.Errorf("%s reported twice", k.Path)
		}
		reported[k.Path] = k.Line
	}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			full := joinKey(path, k.Value)
			if line, ok := reported[full]; ok {
				if line != k.Line {
					t.Errorf("%s: reported at line %d, is at line %d", full, line, k.Line)
				}
				continue
			}
			if v := n.Content[i+1]; v.Kind == yaml.MappingNode && slices.Contains([]string{"", "code_execution", "terminal", "web", "approvals"}, path) {
				walk(v, full)
				continue
			}
			t.Errorf("%s (line %d) is neither used nor ignored", full, k.Line)
		}
	}
	walk(doc.Content[0], "")
	for _, path := range []string{"model", "toolsets", "agent", "display", "compression", "memory",
		"mcp_servers", "skills", "platform_toolsets", "tool_output", "file_read_max_chars",
		"terminal.timeout", "terminal.container_disk", "terminal.modal_image",
		"terminal.persistent_shell", "terminal.lifetime_seconds", "code_execution.kernel_mode",
		"approvals.single_query_mode", "web.extract_char_limit", "_config_version"} {
		if _, ok := reported[path]; !ok || slices.ContainsFunc(cfg.Used, func(k Key) bool { return k.Path == path }) {
			t.Errorf("%s must be ignored", path)
		}
	}
	for _, k := range cfg.Ignored {
		if k.Path == "terminal.timeout" && !strings.Contains(k.Note, "180 s") {
			t.Errorf("terminal.timeout's note: %q", k.Note)
		}
	}
	for _, k := range cfg.Used {
		if k.Path == "terminal.cwd" && !strings.Contains(k.Note, "applies to remote backends only") {
			t.Errorf("terminal.cwd's note with a local backend: %q", k.Note)
		}
	}
}

// TestHermesKeysAreNotTypos: no key of Hermes's own configuration is ever taken for a
// misspelling of one of ours, whatever its value.
func TestHermesKeysAreNotTypos(t *testing.T) {
	for section, names := range hermesKeys {
		for name := range names {
			in := name + ": null\n"
			if section != "" {
				in = section + ":\n  " + in
			}
			cfg, err := Parse([]byte(in), "config.yaml")
			if err != nil {
				t.Fatalf("%q: %v", in, err)
			}
			if cfg.Warnings != nil || len(cfg.Ignored) != 1 || cfg.Ignored[0].Path != joinKey(section, name) {
				t.Errorf("%q: warnings %q, ignored %v", in, cfg.Warnings, cfg.Ignored)
			}
		}
	}
}

func TestUnknownKeys(t *testing.T) {
	for _, tt := range []struct {
		in      string
		warning string // "" for none
		ignored []string
	}{
		{"code_execution:\n  mode: strict\n  timeot: 30\n",
			`config.yaml: line 3: unknown key "code_execution.timeot" is ignored; did you mean "code_execution.timeout"?`,
			[]string{"code_execution.timeot (line 3)"}},
		{"terminal:\n  env_pasthrough: [A]\n",
			`config.yaml: line 2: unknown key "terminal.env_pasthrough" is ignored; did you mean "terminal.env_passthrough"?`,
			[]string{"terminal.env_pasthrough (line 2)"}},
		{"web:\n  serch: {}\n",
			`config.yaml: line 2: unknown key "web.serch" is ignored; did you mean "web.search"?`,
			[]string{"web.serch (line 2)"}},
		{"timzone: UTC\n",
			`config.yaml: line 1: unknown key "timzone" is ignored; did you mean "timezone"?`,
			[]string{"timzone (line 1)"}},
		{"approvals:\n  cron_mdoe: deny\n",
			`config.yaml: line 2: unknown key "approvals.cron_mdoe" is ignored; did you mean "approvals.cron_mode"?`,
			[]string{"approvals.cron_mdoe (line 2)"}},
		{"wbe:\n  a: 1\n",
			`config.yaml: line 1: unknown key "wbe" is ignored; did you mean "web"?`,
			[]string{"wbe (line 1)"}},
		// A unit or a word left off or added is a likely misspelling too.
		{"code_execution:\n  memory_limit: 256\n",
			`config.yaml: line 2: unknown key "code_execution.memory_limit" is ignored; did you mean "code_execution.memory_limit_mb"?`,
			[]string{"code_execution.memory_limit (line 2)"}},
		{"approvals:\n  approval_mode: deny\n",
			`config.yaml: line 2: unknown key "approvals.approval_mode" is ignored; did you mean "approvals.mode"?`,
			[]string{"approvals.approval_mode (line 2)"}},
		{"code_execution:\n  timeout_seconds: 30\n",
			`config.yaml: line 2: unknown key "code_execution.timeout_seconds" is ignored; did you mean "code_execution.timeout"?`,
			[]string{"code_execution.timeout_seconds (line 2)"}},
		// Not near a key used here: ignored silently (Hermes may add keys).
		{"code_execution:\n  frobnication: true\n", "", []string{"code_execution.frobnication (line 2)"}},
		{"frobnicate:\n  a: 1\n  b: [2]\nweb: {}\n", "", []string{"frobnicate (line 1)"}},
		{"wxyz: 1\nweb:\n  search:\n    colour: red\n", "", []string{"wxyz (line 1)", "web.search.colour (line 4)"}},
		// Duplicates of an ignored key are no error: the key is not read.
		{"model: a\nmodel: b\n", "", []string{"model (line 1)", "model (line 2)"}},
	} {
		cfg, err := Parse([]byte(tt.in), "config.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		var want []string
		if tt.warning != "" {
			want = []string{tt.warning}
		}
		if !slices.Equal(cfg.Warnings, want) {
			t.Errorf("%q: warnings\n  %q\nwant\n  %q", tt.in, cfg.Warnings, want)
		}
		var ignored []string
		for _, k := range cfg.Ignored {
			ignored = append(ignored, k.String())
		}
		if !slices.Equal(ignored, tt.ignored) {
			t.Errorf("%q: ignored %q, want %q", tt.in, ignored, tt.ignored)
		}
	}
	// A misspelt key is not applied.
	cfg, _ := Parse([]byte("code_execution:\n  timeot: 1\n"), "config.yaml")
	if cfg.CodeExecution.Timeout != Default().CodeExecution.Timeout {
		t.Fatalf("timeout %v", cfg.CodeExecution.Timeout)
	}
}

// TestOwnedKeyErrorsInHermesConfig: in a whole Hermes file, a key this executor uses with a
// wrong type or value is still an error naming the key and its line.
func TestOwnedKeyErrorsInHermesConfig(t *testing.T) {
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	lineOf := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i + 1
			}
		}
		t.Fatalf("no line starts with %q", prefix)
		return 0
	}
	for _, tt := range []struct{ old, new, key, msg string }{
		{"  timeout: 3 ", "  timeout: soon", "code_execution.timeout", `code_execution.timeout must be an integer (seconds), got string "soon"`},
		{"  max_tool_calls: 2 ", "  max_tool_calls: -2", "code_execution.max_tool_calls", "code_execution.max_tool_calls is -2, which is out of range (must be 0 or more)"},
		{"timezone: ", "timezone: Mars/Olympus_Mons", "timezone", `timezone: unknown time zone "Mars/Olympus_Mons"`},
		{"  backend: ", "  backend: [docker]", "terminal.backend", "terminal.backend must be a string naming a terminal backend (local, docker, ssh or exec), got a list"},
		{"  backend: ", "  backend: modal", "terminal.backend", `terminal.backend "modal" is not available in hermes-wasm-exec: its API cannot be reached from here`},
		{"  ssh_port: ", "  ssh_port: 0", "terminal.ssh_port", "terminal.ssh_port is 0, which is out of range (must be between 1 and 65535)"},
		{"  container_cpu: ", "  container_cpu: many", "terminal.container_cpu", `terminal.container_cpu must be a number of CPUs (such as 1 or 0.5; 0 for no limit), got string "many"`},
		{"  docker_env: ", "  docker_env: [NOEQUALS]", "terminal.docker_env[0]", `terminal.docker_env[0] is "NOEQUALS", which has no "="`},
		{"  cron_mode: ", "  cron_mode: {a: 1}", "approvals.cron_mode", `approvals.cron_mode must be "deny" or "approve", got a mapping`},
		{"  mode: manual ", "  mode: 3", "approvals.mode", "approvals.mode must be one of manual, smart, off (ask and deny are also accepted), got integer \"3\""},
	} {
		line := lineOf(tt.old)
		edited := slices.Clone(lines)
		edited[line-1] = tt.new
		_, err := Parse([]byte(strings.Join(edited, "\n")), "config.yaml")
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%s: got %v, want a *config.Error", tt.new, err)
		}
		want := fmt.Sprintf("config.yaml: line %d: %s", line, tt.msg)
		if ce.Key != tt.key || ce.Line != line || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got key %q line %d %q\nwant key %q line %d %q", tt.new, ce.Key, ce.Line, err, tt.key, line, want)
		}
	}
}

func TestApprovalsModeValues(t *testing.T) {
	for in, want := range map[string]string{
		"manual": "manual", "smart": "smart", "Smart": "smart", "off": "off", `"off"`: "off",
		"OFF": "off", "no": "off", "false": "off", "yes": "manual", "true": "manual",
		"ask": "manual", " ASK ": "manual", "deny": "deny", "null": "manual", "''": "manual", "": "manual",
	} {
		cfg, err := Parse([]byte("approvals:\n  mode: "+in+"\n"), "config.yaml")
		if err != nil || cfg.Approvals.Mode != want || cfg.Warnings != nil {
			t.Errorf("mode %s: got %q, %v, warnings %q; want %q", in, cfg.Approvals.Mode, err, cfg.Warnings, want)
		}
	}
	for in, warning := range map[string]string{
		"auto":  `config.yaml: line 2: unknown approvals.mode "auto"; using "manual", as Hermes does (valid modes: manual, smart, off (ask and deny are also accepted))`,
		"manul": `config.yaml: line 2: unknown approvals.mode "manul"; using "manual", as Hermes does (valid modes: manual, smart, off (ask and deny are also accepted)); did you mean "manual"?`,
		// A typo of off fails closed: commands are still asked about.
		"offf": `config.yaml: line 2: unknown approvals.mode "offf"; using "manual", as Hermes does (valid modes: manual, smart, off (ask and deny are also accepted)); did you mean "off"?`,
	} {
		cfg, err := Parse([]byte("approvals:\n  mode: "+in+"\n"), "config.yaml")
		if err != nil || cfg.Approvals.Mode != ApprovalsManual || !slices.Equal(cfg.Warnings, []string{warning}) {
			t.Errorf("mode %s: got %q, %v, warnings %q", in, cfg.Approvals.Mode, err, cfg.Warnings)
		}
	}
	if ApprovalsAsk != ApprovalsManual {
		t.Fatal("ApprovalsAsk is manual's former name")
	}
}

func TestCronMode(t *testing.T) {
	for in, want := range map[string]string{
		"approve": "approve", "Approve": "approve", "deny": "deny", `"off"`: "approve", "allow": "approve",
		`"yes"`: "approve", "ask": "ask", "manual": "ask", "null": "ask", "''": "ask",
	} {
		cfg, err := Parse([]byte("approvals:\n  cron_mode: "+in+"\n"), "config.yaml")
		if err != nil || cfg.Approvals.CronMode != want || cfg.Warnings != nil {
			t.Errorf("cron_mode %s: got %q, %v, warnings %q; want %q", in, cfg.Approvals.CronMode, err, cfg.Warnings, want)
		}
	}
	// Hermes reads a YAML boolean, and any other word, as deny: so does this executor, and
	// says so.
	for in, warning := range map[string]string{
		"off":    `config.yaml: line 2: approvals.cron_mode is off, which YAML reads as a boolean and Hermes then takes as "deny": scripts of automation sessions are blocked. Write approvals.cron_mode: approve (quoted "off" works too) to run them without asking, or approvals.cron_mode: deny to keep blocking them without this warning`,
		"yes":    `config.yaml: line 2: approvals.cron_mode is yes, which YAML reads as a boolean and Hermes then takes as "deny"`,
		"true":   `config.yaml: line 2: approvals.cron_mode is true, which YAML reads as a boolean`,
		"nope":   `config.yaml: line 2: unknown approvals.cron_mode "nope"; using "deny", as Hermes does (valid: deny, approve; or ask to ask the client)`,
		"aprove": `config.yaml: line 2: unknown approvals.cron_mode "aprove"; using "deny", as Hermes does (valid: deny, approve; or ask to ask the client); did you mean "approve"?`,
	} {
		cfg, err := Parse([]byte("approvals:\n  cron_mode: "+in+"\n"), "config.yaml")
		if err != nil || cfg.Approvals.CronMode != CronModeDeny || len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0], warning) {
			t.Errorf("cron_mode %s: got %q, %v, warnings %q", in, cfg.Approvals.CronMode, err, cfg.Warnings)
		}
	}
}

func TestKernelLimitsClamp(t *testing.T) {
	cfg, err := Parse([]byte("code_execution:\n  kernel_idle_timeout: 0\n  max_session_kernels: -3\n"), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CodeExecution.KernelIdleTimeout != 1 || cfg.CodeExecution.MaxSessionKernels != 1 || cfg.Warnings != nil {
		t.Fatalf("got %+v, warnings %q", cfg.CodeExecution, cfg.Warnings)
	}
	wantNotes := []string{
		"config.yaml: line 2: code_execution.kernel_idle_timeout is 0; using 1 (values below 1 clamp to 1, as in Hermes)",
		"config.yaml: line 3: code_execution.max_session_kernels is -3; using 1 (values below 1 clamp to 1, as in Hermes)",
	}
	if !slices.Equal(cfg.Notes, wantNotes) {
		t.Fatalf("notes %q", cfg.Notes)
	}
	if v := cfg.Used[1]; v.Path != "code_execution.max_session_kernels" || v.Value != "1" || v.Line != 3 {
		t.Fatalf("used %+v", v)
	}
	// A wrong type is still an error.
	if _, err := Parse([]byte("code_execution:\n  max_session_kernels: many\n"), "config.yaml"); err == nil ||
		err.Error() != `config.yaml: line 2: code_execution.max_session_kernels must be an integer, got string "many"` {
		t.Fatalf("got %v", err)
	}
}

// TestParseModeKeyTypoFailsClosed: a misspelt mode key (or code_execution
// section) leaves the mode unset, whose default is project, no sandbox; as
// for a misspelt mode value, the run falls back to strict instead (before,
// `mdoe: strict` ran in project mode).
func TestParseModeKeyTypoFailsClosed(t *testing.T) {
	for _, tt := range []struct{ in, key string }{
		{"code_execution:\n  mdoe: project\n", "code_execution.mdoe"},
		{"code_execution:\n  mod: strict\n  timeout: 30\n", "code_execution.mod"},
		{"code_executon:\n  mode: strict\n", "code_executon"},
	} {
		cfg, err := Parse([]byte(tt.in), "config.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if cfg.CodeExecution.Mode != ModeStrict {
			t.Errorf("%q: mode %q, want strict", tt.in, cfg.CodeExecution.Mode)
		}
		want := fmt.Sprintf("code_execution.mode is not set, and %q may have been meant to set it: running in \"strict\", the sandbox, so that a typo never runs scripts without it; fix the key's name", tt.key)
		if !slices.ContainsFunc(cfg.Warnings, func(w string) bool { return strings.HasSuffix(w, want) }) {
			t.Errorf("%q: warnings %q lack %q", tt.in, cfg.Warnings, want)
		}
	}
	// With the mode key itself present, a look-alike key changes nothing.
	cfg, err := Parse([]byte("code_execution:\n  mode: project\n  mdoe: strict\n"), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CodeExecution.Mode != ModeProject {
		t.Errorf("mode %q, want project", cfg.CodeExecution.Mode)
	}
}

func TestModeNullOrEmpty(t *testing.T) {
	for _, in := range []string{"mode:", "mode: null", "mode: ''", "mode: ~"} {
		cfg, err := Parse([]byte("code_execution:\n  "+in+"\napprovals:\n  "+in+"\n"), "config.yaml")
		if err != nil || cfg.CodeExecution.Mode != ModeProject || cfg.Approvals.Mode != ApprovalsManual || cfg.Warnings != nil {
			t.Errorf("%q: %v %+v %+v %q", in, err, cfg.CodeExecution, cfg.Approvals, cfg.Warnings)
		}
	}
	// An unknown code_execution.mode stays a warning (and runs strict: a Hermes config with
	// one still loads).
	cfg, err := Parse([]byte("code_execution:\n  mode: docker\n"), "config.yaml")
	if err != nil || cfg.CodeExecution.Mode != ModeStrict || len(cfg.Warnings) != 1 {
		t.Fatalf("%v %q", err, cfg.Warnings)
	}
}

func TestTimezonePrecedence(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HERMES_HOME", dir)
	path := filepath.Join(dir, "config.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func() Config {
		t.Helper()
		cfg, err := Load("")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	t.Setenv("HERMES_TIMEZONE", "")
	write("timezone: Asia/Tokyo\n")
	if cfg := load(); cfg.Timezone != "Asia/Tokyo" || cfg.TimezoneSource != "timezone" {
		t.Fatalf("top-level timezone: %q from %q", cfg.Timezone, cfg.TimezoneSource)
	}
	write("timezone: Asia/Tokyo\ncode_execution:\n  timezone: Europe/Paris\n")
	if cfg := load(); cfg.Timezone != "Europe/Paris" || cfg.TimezoneSource != "code_execution.timezone" ||
		cfg.Used[0].Note != "overridden by code_execution.timezone" || len(cfg.Notes) != 1 {
		t.Fatalf("code_execution.timezone wins: %+v", cfg)
	}

	// HERMES_TIMEZONE wins over the file, as in Hermes; blank means unset.
	t.Setenv("HERMES_TIMEZONE", " America/New_York ")
	cfg := load()
	if cfg.Timezone != "America/New_York" || cfg.TimezoneSource != "HERMES_TIMEZONE" ||
		!strings.Contains(cfg.Used[1].Note, "overridden by HERMES_TIMEZONE=America/New_York") {
		t.Fatalf("HERMES_TIMEZONE: %+v", cfg)
	}
	os.Remove(path)
	if cfg := load(); cfg.Timezone != "America/New_York" || cfg.Source != "" {
		t.Fatalf("HERMES_TIMEZONE without a file: %+v", cfg)
	}
	t.Setenv("HERMES_TIMEZONE", "   ")
	if cfg := load(); cfg.Timezone != "" {
		t.Fatalf("blank HERMES_TIMEZONE: %+v", cfg)
	}

	// An invalid HERMES_TIMEZONE is an error naming the variable.
	for _, bad := range []string{"Mars/Olympus_Mons", "Local"} {
		t.Setenv("HERMES_TIMEZONE", bad)
		_, err := Load("")
		var ce *Error
		want := `environment variable HERMES_TIMEZONE is "` + bad + `", which is not an IANA time zone; set it to a name such as "Europe/Paris" or "UTC", or unset it to use the timezone of the config file`
		if !errors.As(err, &ce) || ce.Key != "HERMES_TIMEZONE" || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	}

	// An invalid top-level timezone is an error naming the key and line.
	t.Setenv("HERMES_TIMEZONE", "")
	write("model: x\ntimezone: Asia/Tokio\n")
	_, err := Load("")
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "timezone" || ce.Line != 2 ||
		err.Error() != path+`: line 2: timezone: unknown time zone "Asia/Tokio"; use an IANA name such as "Europe/Paris" or "UTC"` {
		t.Fatalf("got %v", err)
	}
	for _, in := range []string{"timezone: 9\n", "timezone: [UTC]\n"} {
		if _, err := Parse([]byte(in), "c.yaml"); err == nil || !strings.Contains(err.Error(), "timezone must be a string naming an IANA time zone") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestHermesSafetySettingsWarn(t *testing.T) {
	cfg, err := Parse([]byte("approvals:\n  deny:\n    - \"git push --force*\"\n  confirm: []\n"), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0], "config.yaml: line 2: approvals.deny is not enforced by hermes-wasm-exec") {
		t.Fatalf("warnings %q", cfg.Warnings)
	}
}

func TestYAML11Booleans(t *testing.T) {
	for in, want := range map[string]bool{"yes": true, "On": true, "TRUE": true, "no": false, "off": false, "False": false} {
		cfg, err := Parse([]byte("code_execution:\n  confine_tools_to_workdir: "+in+"\n"), "c.yaml")
		if err != nil || cfg.CodeExecution.ConfineToolsToWorkdir != want {
			t.Errorf("%s: %v %v", in, err, cfg.CodeExecution.ConfineToolsToWorkdir)
		}
	}
	for _, in := range []string{`"yes"`, "yEs", "y", "1"} {
		if _, err := Parse([]byte("code_execution:\n  confine_tools_to_workdir: "+in+"\n"), "c.yaml"); err == nil {
			t.Errorf("%s accepted as a boolean", in)
		}
	}
}

func TestIgnoredSummary(t *testing.T) {
	cfg, err := Parse([]byte("model: x\ncode_execution:\n  kernel_mode: session\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.IgnoredSummary(), "config c.yaml: ignoring 2 key(s) hermes-wasm-exec does not use: model (line 1), code_execution.kernel_mode (line 3)"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if d := Default(); d.IgnoredSummary() != "" {
		t.Fatal("nothing ignored, nothing to say")
	}
}

func TestSuggestKey(t *testing.T) {
	if s := suggestKey("mdoe", []string{"mode", "timeout"}); s != "mode" {
		t.Errorf("suggestKey: %q", s)
	}
	if s := suggestKey("wed", []string{"web"}); s != "web" {
		t.Errorf("suggestKey: %q", s)
	}
	if s := suggestKey("lsp", []string{"web"}); s != "" {
		t.Errorf("a short word two edits away is no typo: %q", s)
	}
}

// TestMergeKeys: YAML merge keys work as in Hermes's loader: explicit keys win, and the merged
// values are validated like any other.
func TestMergeKeys(t *testing.T) {
	cfg, err := Parse([]byte("defaults: &d\n  timeout: 30\n  max_tool_calls: 7\ncode_execution:\n  <<: *d\n  timeout: 10\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CodeExecution.Timeout != 10 || cfg.CodeExecution.MaxToolCalls != 7 || cfg.Warnings != nil {
		t.Fatalf("got %+v %q", cfg.CodeExecution, cfg.Warnings)
	}
	cfg, err = Parse([]byte("a: &a {timeout: 5}\nb: &b {timeout: 6, max_tool_calls: 1}\ncode_execution:\n  <<: [*a, *b]\n"), "c.yaml")
	if err != nil || cfg.CodeExecution.Timeout != 5 || cfg.CodeExecution.MaxToolCalls != 1 {
		t.Fatalf("got %v %+v", err, cfg.CodeExecution)
	}
	_, err = Parse([]byte("d: &d {timeout: soon}\ncode_execution:\n  <<: *d\n"), "c.yaml")
	if err == nil || err.Error() != `c.yaml: line 1: code_execution.timeout must be an integer (seconds), got string "soon"` {
		t.Fatalf("got %v", err)
	}
	if _, err := Parse([]byte("code_execution:\n  <<: 3\n"), "c.yaml"); err == nil || !strings.Contains(err.Error(), "merge key") {
		t.Fatalf("got %v", err)
	}
	if _, err := Parse([]byte("a: &a\n  <<: *a\ncode_execution:\n  <<: *a\n"), "c.yaml"); err == nil {
		t.Log("a self-referencing merge is an error or ignored; it must not hang")
	}
}

func TestMergeKeysBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 {timeout: 5}\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "l%d: &l%d\n  <<: [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("code_execution:\n  <<: *l8\n")
	_, err := Parse([]byte(b.String()), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), "merge keys (<<) expand to more than 10000 keys") {
		t.Fatalf("got %v", err)
	}
}

// TestMergeKeysBoundedEmpty: merging empty mappings counts too. They add no key, so a file
// of 1 KiB merging {} twenty times over eight levels (20^8 merges) kept run, serve, mcp and
// doctor busy for hours before its first line.
func TestMergeKeysBoundedEmpty(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 {}\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "l%d: &l%d\n  <<: [", i, i)
		for j := 0; j < 20; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("approvals:\n  <<: *l8\n  mode: deny\n")
	done := make(chan error, 1)
	go func() {
		_, err := Parse([]byte(b.String()), "c.yaml")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "merge keys (<<) expand to more than 10000 keys") {
			t.Fatalf("got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Parse of a 1 KiB file merging empty mappings did not return within 30 s")
	}
}

// TestMergeKeysTooDeep: a chain of merges deeper than maxMergeDepth is refused with a
// text that says so (it once shared the "not a mapping" message).
func TestMergeKeysTooDeep(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 {timeout: 5}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "l%d: &l%d\n  <<: *l%d\n", i, i, i-1)
	}
	b.WriteString("code_execution:\n  <<: *l12\n")
	_, err := Parse([]byte(b.String()), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), "merge keys (<<) nest more than 8 deep") || strings.Contains(err.Error(), "merge a mapping") {
		t.Fatalf("got %v", err)
	}
}
