package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// record is one captured log event.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

// logRecorder is a slog.Handler that keeps every event, for tests.
type logRecorder struct {
	mu      sync.Mutex
	records []record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]any{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	r.mu.Lock()
	r.records = append(r.records, record{rec.Level, rec.Message, attrs})
	r.mu.Unlock()
	return nil
}

// find returns the events with message msg.
func (r *logRecorder) find(msg string) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, rec := range r.records {
		if rec.msg == msg {
			out = append(out, rec)
		}
	}
	return out
}

// testEnviron is the host environment plus vars, with any earlier value of
// those names removed.
func testEnviron(vars ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, v := range vars {
			name, _, _ := strings.Cut(v, "=")
			if strings.HasPrefix(kv, name+"=") {
				return true
			}
		}
		return false
	})
	return append(env, vars...)
}

// envProbe prints what the script and a terminal command see of the skill
// variable and of a managed credential. terminal() runs sh on Unix and
// cmd on Windows, where a variable is %NAME% (an unset one is printed as
// is, which the probe removes) and | must be escaped as ^|.
var envProbe = `import os, json
from hermes_tools import terminal
names = ("SKILL_TOKEN", "OPENAI_API_KEY", "MY_SEARCH_KEY")
if ` + pyBool(goruntime.GOOS == "windows") + `:
    out = terminal("echo %SKILL_TOKEN%^|%OPENAI_API_KEY%^|%MY_SEARCH_KEY%")["output"].strip()
    for n in names:
        out = out.replace("%" + n + "%", "")
else:
    out = terminal("echo \"$SKILL_TOKEN|$OPENAI_API_KEY|$MY_SEARCH_KEY\"")["output"].strip()
print(json.dumps({"script": [os.environ.get(n) for n in names], "terminal": out}))`

// pyBool is b as a Python literal.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

const (
	notPassed = `{"script": [null, null, null], "terminal": "||"}`
	passed    = `{"script": ["tok-1", null, null], "terminal": "tok-1||"}`
)

func newSkillExecutor(t *testing.T, rec *logRecorder, mutate func(*config.Config)) *Executor {
	t.Helper()
	cfg := config.Default()
	cfg.Web.Search.Provider = config.ProviderBrave
	cfg.Web.Search.APIKeyEnv = "MY_SEARCH_KEY"
	if mutate != nil {
		mutate(&cfg)
	}
	ex := New(Options{
		Config:     &cfg,
		HermesHome: t.TempDir(),
		Environ:    testEnviron("SKILL_TOKEN=tok-1", "OPENAI_API_KEY=sk-host", "MY_SEARCH_KEY=search-host"),
		Logger:     slog.New(rec),
	})
	t.Cleanup(func() { ex.Close(context.Background()) })
	return ex
}

func run(t *testing.T, ex *Executor, req Request) Result {
	t.Helper()
	if req.Workdir == "" {
		req.Workdir = t.TempDir()
	}
	res, err := ex.Execute(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	return res
}

func TestRegisterSkillEnv(t *testing.T) {
	for _, mode := range []string{config.ModeStrict, config.ModeProject} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rec := &logRecorder{}
			ex := newSkillExecutor(t, rec, nil)
			req := Request{Code: envProbe, Mode: mode}
			require.JSONEq(t, notPassed, run(t, ex, req).Output, "secret-named: dropped until registered")

			refused := ex.RegisterSkillEnv("SKILL_TOKEN", "OPENAI_API_KEY", "my_search_key", "", "A=B", "X\nY")
			require.Equal(t, []string{"OPENAI_API_KEY", "my_search_key", "", "A=B", "X\nY"}, refused)
			warnings := rec.find("skill environment variable refused")
			require.Len(t, warnings, 2)
			require.Equal(t, slog.LevelWarn, warnings[0].level)
			require.Equal(t, []string{"OPENAI_API_KEY", "my_search_key"}, warnings[0].attrs["names"])
			require.Equal(t, "host-managed credential", warnings[0].attrs["reason"])
			require.Equal(t, []string{"", "A=B", "X\nY"}, warnings[1].attrs["names"])
			require.Equal(t, []string{"SKILL_TOKEN"}, rec.find("skill environment variables registered")[0].attrs["names"])

			require.JSONEq(t, passed, run(t, ex, req).Output)
			require.Empty(t, ex.RegisterSkillEnv("SKILL_TOKEN"), "registering twice is fine")
			require.Equal(t, []string{"SKILL_TOKEN"}, ex.skillEnv)
		})
	}
}

func TestSkillEnvFrozenKernel(t *testing.T) {
	for _, mode := range []string{config.ModeStrict, config.ModeProject} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ex := newSkillExecutor(t, &logRecorder{}, nil)
			wd := t.TempDir()
			script := `import os; print(os.environ.get("SKILL_TOKEN"))`
			call := func(session string, reset bool) Result {
				return run(t, ex, Request{Code: script, Mode: mode, Workdir: wd, Session: session, Reset: reset})
			}
			require.Equal(t, "None\n", call("before", false).Output)

			ex.RegisterSkillEnv("SKILL_TOKEN")
			res := call("before", false)
			require.True(t, res.Kernel.Reused)
			require.Equal(t, "None\n", res.Output, "a running kernel's environment stays frozen")
			require.Equal(t, "tok-1\n", call("after", false).Output, "a kernel started after registration sees it")
			res = call("before", true)
			require.True(t, res.Kernel.StateReset)
			require.Equal(t, "tok-1\n", res.Output, "so does a reset kernel")
		})
	}
}

// The warm pool's kernels are started ahead of need with a frozen
// environment: a registration replaces them.
func TestSkillEnvWarmPool(t *testing.T) {
	t.Parallel()
	ex := newSkillExecutor(t, &logRecorder{}, func(c *config.Config) { c.CodeExecution.WarmPool = 1 })
	ex.StartWarmPool(context.Background())
	require.Eventually(t, func() bool {
		ex.sessions.mu.Lock()
		defer ex.sessions.mu.Unlock()
		return ex.sessions.pool != nil && ex.sessions.pool.Idle() == 1
	}, 60*time.Second, 20*time.Millisecond)
	ex.sessions.mu.Lock()
	old := ex.sessions.pool
	ex.sessions.mu.Unlock()

	ex.RegisterSkillEnv("SKILL_TOKEN")
	ex.sessions.mu.Lock()
	require.NotSame(t, old, ex.sessions.pool)
	require.Equal(t, ex.skillGen, ex.sessions.poolGen)
	ex.sessions.mu.Unlock()
	res := run(t, ex, Request{Code: `import os; print(os.environ.get("SKILL_TOKEN"))`, Mode: config.ModeStrict, Session: "s"})
	require.Equal(t, "tok-1\n", res.Output)
}

func TestSkillEnvOption(t *testing.T) {
	rec := &logRecorder{}
	ex := New(Options{
		HermesHome: t.TempDir(),
		Environ:    []string{"SKILL_TOKEN=tok-1", "ANTHROPIC_API_KEY=x"},
		Logger:     slog.New(rec),
		SkillEnv:   []string{"SKILL_TOKEN", "ANTHROPIC_API_KEY"},
	})
	defer ex.Close(context.Background())
	require.Equal(t, []string{"SKILL_TOKEN"}, ex.skillEnv)
	require.Equal(t, []string{"ANTHROPIC_API_KEY"}, rec.find("skill environment variable refused")[0].attrs["names"])
	opts, _ := ex.envOptions()
	env, _ := engine.ScrubEnv([]string{"SKILL_TOKEN=tok-1", "ANTHROPIC_API_KEY=x"}, opts)
	require.Equal(t, []string{"SKILL_TOKEN=tok-1"}, env)
}

// RegisterSkillEnv races calls that build their environment.
func TestSkillEnvConcurrent(t *testing.T) {
	ex := New(Options{HermesHome: t.TempDir(), Environ: []string{}})
	defer ex.Close(context.Background())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				ex.RegisterSkillEnv(fmt.Sprintf("SKILL_%d_%d", i, j))
				ex.envOptions()
			}
		})
	}
	wg.Wait()
	opts, gen := ex.envOptions()
	require.Len(t, opts.Passthrough, 400)
	require.Equal(t, 400, gen)
}

func TestSkillEnvFromMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []string
	}{
		{"list of names", "---\nname: s\nrequired_environment_variables:\n  - SKILL_TOKEN\n  - OTHER_VAR\n---\n# Body\n", []string{"SKILL_TOKEN", "OTHER_VAR"}},
		{"flow list", "---\nrequired_environment_variables: [A_KEY, B_KEY]\n---\n", []string{"A_KEY", "B_KEY"}},
		{"list of mappings", "---\nrequired_environment_variables:\n  - name: HOMELAB_GH_TOKEN\n    prompt: \"GitHub token\"\n    help: https://github.com/settings/tokens\n    required_for: fetching\n  - env_var: ALT_NAME\n  - name: OPT_VAR\n    optional: true\n---\n", []string{"HOMELAB_GH_TOKEN", "ALT_NAME", "OPT_VAR"}},
		{"one mapping", "---\nrequired_environment_variables:\n  name: ONLY_ONE\n---\n", []string{"ONLY_ONE"}},
		{"JSON-style mappings", "---\nrequired_environment_variables: [{\"name\": \"TAMARIND_API_KEY\", \"prompt\": \"key\"}]\n---\n", []string{"TAMARIND_API_KEY"}},
		{"mixed, stripped, deduplicated, invalid skipped", "---\nrequired_environment_variables:\n  - \"  SPACED  \"\n  - SPACED\n  - 9STARTS_WITH_DIGIT\n  - HAS-DASH\n  - 42\n  - name: \"\"\n    env_var: FALLBACK\n---\n", []string{"SPACED", "FALLBACK"}},
		{"setup and legacy prerequisites, in Hermes's order", "---\nprerequisites:\n  env_vars: [LEGACY_A, FIRST]\nsetup:\n  help: see docs\n  collect_secrets:\n    - env_var: SECRET_FROM_SETUP\n      prompt: p\n    - prompt: no name\nrequired_environment_variables: [FIRST]\n---\n", []string{"FIRST", "SECRET_FROM_SETUP", "LEGACY_A"}},
		{"legacy single name", "---\nprerequisites:\n  env_vars: LEGACY_ONE\n  commands: [gh]\n---\n", []string{"LEGACY_ONE"}},
		{"a bare string is not a list (Hermes reads nothing)", "---\nrequired_environment_variables: NOT_A_LIST\n---\n", nil},
		{"byte order mark", "\ufeff---\nrequired_environment_variables: [BOM_VAR]\n---\n", []string{"BOM_VAR"}},
		{"closing line with trailing spaces", "---\nrequired_environment_variables: [TRAIL]\n---   \nbody", []string{"TRAIL"}},
		{"no frontmatter", "# A skill\nrequired_environment_variables: [NOPE]\n", nil},
		{"unterminated frontmatter", "---\nrequired_environment_variables: [NOPE]\n", nil},
		{"frontmatter not a mapping", "---\n- a\n- b\n---\n", nil},
		{"nothing declared", "---\nname: plain\ndescription: no variables\n---\nbody\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SkillEnvFromMarkdown(tc.md)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := SkillEnvFromMarkdown("---\nrequired_environment_variables: [A\nname: : :\n---\n")
	require.ErrorContains(t, err, "frontmatter is not valid YAML")
	require.ErrorContains(t, err, "fix the block between the --- lines")
}

func TestParseSkillFile(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "my-skill")
	require.NoError(t, os.Mkdir(skill, 0o755))
	md := filepath.Join(skill, SkillFileName)
	require.NoError(t, os.WriteFile(md, []byte("---\nname: my-skill\nrequired_environment_variables:\n  - name: SKILL_TOKEN\n---\nUse it.\n"), 0o600))
	for _, p := range []string{skill, md} {
		names, err := ParseSkillFile(p)
		require.NoError(t, err, p)
		require.Equal(t, []string{"SKILL_TOKEN"}, names, p)
	}
	_, err := ParseSkillFile(filepath.Join(dir, "missing.md"))
	require.ErrorContains(t, err, "missing.md")
	_, err = ParseSkillFile(dir)
	require.ErrorContains(t, err, "a skill's directory holds its SKILL.md")
	bad := filepath.Join(dir, "bad.md")
	require.NoError(t, os.WriteFile(bad, []byte("---\n[unclosed\n---\n"), 0o600))
	_, err = ParseSkillFile(bad)
	require.ErrorContains(t, err, "skill "+bad+": its frontmatter is not valid YAML")
	if goruntime.GOOS != "windows" {
		_, err = ParseSkillFile("/dev/null")
		require.ErrorContains(t, err, "not a regular file")
	}
}

// A session's skill variables reach that session's calls (and its
// subagents') only; a one-shot call's Request.SkillEnv only that call;
// CloseSession forgets them.
func TestRegisterSessionSkillEnv(t *testing.T) {
	for _, mode := range []string{config.ModeStrict, config.ModeProject} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rec := &logRecorder{}
			ex := newSkillExecutor(t, rec, nil)
			wd := t.TempDir()
			probe := func(req Request) string {
				req.Code, req.Mode, req.Workdir = envProbe, mode, wd
				return run(t, ex, req).Output
			}
			require.JSONEq(t, notPassed, probe(Request{Session: "a"}))

			refused, err := ex.RegisterSessionSkillEnv("a", "SKILL_TOKEN", "OPENAI_API_KEY", "A=B")
			require.NoError(t, err)
			require.Equal(t, []string{"OPENAI_API_KEY", "A=B"}, refused)
			warnings := rec.find("skill environment variable refused")
			require.Len(t, warnings, 2)
			require.Equal(t, "a", warnings[0].attrs["session"])
			require.Equal(t, "host-managed credential", warnings[0].attrs["reason"])
			registered := rec.find("skill environment variables registered")
			require.Len(t, registered, 1)
			require.Equal(t, []string{"SKILL_TOKEN"}, registered[0].attrs["names"])
			require.Equal(t, "a", registered[0].attrs["session"])
			require.Equal(t, []string{"SKILL_TOKEN"}, ex.SessionSkillEnv("a"))
			require.Empty(t, ex.skillEnv, "not executor-wide")

			// a's kernel was started before: its scripts keep their
			// environment until a reset, terminal() sees the variable now.
			require.JSONEq(t, `{"script": [null, null, null], "terminal": "tok-1||"}`, probe(Request{Session: "a"}))
			require.JSONEq(t, passed, probe(Request{Session: "a", Reset: true}))
			require.JSONEq(t, passed, probe(Request{Session: "a-sub", ParentSession: "a"}), "a subagent acts for its parent")
			require.JSONEq(t, notPassed, probe(Request{Session: "b"}), "another session does not see it")
			require.JSONEq(t, notPassed, probe(Request{}), "nor does a one-shot call")

			// Request.SkillEnv: a one-shot call's own, this call only.
			require.JSONEq(t, passed, probe(Request{SkillEnv: []string{"SKILL_TOKEN", "ANTHROPIC_API_KEY"}}))
			require.JSONEq(t, notPassed, probe(Request{}))
			// With a session: registered for it, so later calls keep it.
			require.JSONEq(t, passed, probe(Request{Session: "c", SkillEnv: []string{"SKILL_TOKEN"}}))
			require.JSONEq(t, passed, probe(Request{Session: "c"}))
			require.Equal(t, []string{"SKILL_TOKEN"}, ex.SessionSkillEnv("c"))

			// A subagent whose kernel is gone (idle timeout, eviction) is
			// still forgotten with its parent.
			recordArrival(t, ex, Request{Session: "a-idle", ParentSession: "a", SkillEnv: []string{"SKILL_TOKEN"}})
			require.Equal(t, []string{"SKILL_TOKEN"}, ex.SessionSkillEnv("a-idle"))
			ex.CloseSession(context.Background(), "a")
			require.Empty(t, ex.SessionSkillEnv("a"))
			require.Empty(t, ex.SessionSkillEnv("a-sub"))
			require.Empty(t, ex.SessionSkillEnv("a-idle"), "a subagent without a kernel is forgotten too")
			require.JSONEq(t, notPassed, probe(Request{Session: "a"}), "a closed session's variables are forgotten")

			_, err = ex.RegisterSessionSkillEnv("", "SKILL_TOKEN")
			require.ErrorIs(t, err, ErrNoSession)
		})
	}
}

// The warm pool's kernels have the executor-wide environment: a session
// with skill variables of its own never takes one.
func TestSessionSkillEnvSkipsWarmPool(t *testing.T) {
	t.Parallel()
	ex := newSkillExecutor(t, &logRecorder{}, func(c *config.Config) { c.CodeExecution.WarmPool = 1 })
	ex.StartWarmPool(context.Background())
	require.Eventually(t, func() bool {
		ex.sessions.mu.Lock()
		defer ex.sessions.mu.Unlock()
		return ex.sessions.pool != nil && ex.sessions.pool.Idle() == 1
	}, 60*time.Second, 20*time.Millisecond)
	_, err := ex.RegisterSessionSkillEnv("s", "SKILL_TOKEN")
	require.NoError(t, err)
	res := run(t, ex, Request{Code: `import os; print(os.environ.get("SKILL_TOKEN"))`, Mode: config.ModeStrict, Session: "s"})
	require.Equal(t, "tok-1\n", res.Output)
	ex.sessions.mu.Lock()
	idle := ex.sessions.pool.Idle()
	ex.sessions.mu.Unlock()
	require.Equal(t, 1, idle, "the pooled kernel was not taken")
}

func ExampleSkillEnvFromMarkdown() {
	names, err := SkillEnvFromMarkdown(`---
name: release-notes
description: Drafts release notes from merged pull requests.
required_environment_variables:
  - name: RELEASE_GH_TOKEN
    prompt: GitHub token with repo:read
  - SLACK_WEBHOOK_URL
---
# Release notes
`)
	fmt.Println(names, err)
	// Output: [RELEASE_GH_TOKEN SLACK_WEBHOOK_URL] <nil>
}

// RegisterSessionSkillEnv and CloseSession race calls that build their
// environment.
func TestSessionSkillEnvConcurrent(t *testing.T) {
	ex := New(Options{HermesHome: t.TempDir(), Environ: []string{}})
	defer ex.Close(context.Background())
	var wg sync.WaitGroup
	for i := range 8 {
		session := fmt.Sprintf("s%d", i%2)
		wg.Go(func() {
			for j := range 50 {
				_, _ = ex.RegisterSessionSkillEnv(session, fmt.Sprintf("SKILL_%d_%d", i, j))
				opts, gen := ex.envOptionsFor(ex.SessionSkillEnv(session), false)
				if len(opts.Passthrough) > 0 && gen != -1 {
					panic("a call with session variables took the executor-wide generation")
				}
				if j%10 == 0 {
					ex.CloseSession(context.Background(), session)
				}
			}
		})
	}
	wg.Wait()
}

// recordArrival records what req's call records of its session (its parent
// on arrival, its skill variables as its turn starts) without running it.
func recordArrival(t *testing.T, e *Executor, req Request) {
	t.Helper()
	a, err := e.sessions.arrive(req)
	require.NoError(t, err)
	_, end, _, err := e.sessions.takeTurn(context.Background(), req.Session, a)
	require.NoError(t, err)
	e.callSkillEnv(req, a.session)
	end()
}
