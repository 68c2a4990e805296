package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
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
// variable and of a managed credential.
const envProbe = `import os, json
from hermes_tools import terminal
print(json.dumps({
    "script": [os.environ.get("SKILL_TOKEN"), os.environ.get("OPENAI_API_KEY"), os.environ.get("MY_SEARCH_KEY")],
    "terminal": terminal("echo \"$SKILL_TOKEN|$OPENAI_API_KEY|$MY_SEARCH_KEY\"")["output"].strip(),
}))`

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

func run(t *testing.T, ex *Executor, req Request) shared.Result {
	t.Helper()
	if req.Workdir == "" {
		req.Workdir = t.TempDir()
	}
	res, err := ex.Execute(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, shared.StatusSuccess, res.Status, res.Output)
	return res
}

func TestRegisterSkillEnv(t *testing.T) {
	for _, mode := range []string{shared.ModeStrict, shared.ModeProject} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rec := &logRecorder{}
			ex := newSkillExecutor(t, rec, nil)
			req := Request{Code: envProbe, Mode: mode}
			require.JSONEq(t, notPassed, run(t, ex, req).Output, "secret-named: dropped until registered")

			refused := ex.RegisterSkillEnv("SKILL_TOKEN", "OPENAI_API_KEY", "my_search_key", "", "A=B")
			require.Equal(t, []string{"OPENAI_API_KEY", "my_search_key", "", "A=B"}, refused)
			warnings := rec.find("skill environment variable refused")
			require.Len(t, warnings, 2)
			require.Equal(t, slog.LevelWarn, warnings[0].level)
			require.Equal(t, []string{"OPENAI_API_KEY", "my_search_key"}, warnings[0].attrs["names"])
			require.Equal(t, "host-managed credential", warnings[0].attrs["reason"])
			require.Equal(t, []string{"", "A=B"}, warnings[1].attrs["names"])
			require.Equal(t, []string{"SKILL_TOKEN"}, rec.find("skill environment variables registered")[0].attrs["names"])

			require.JSONEq(t, passed, run(t, ex, req).Output)
			require.Empty(t, ex.RegisterSkillEnv("SKILL_TOKEN"), "registering twice is fine")
			require.Equal(t, []string{"SKILL_TOKEN"}, ex.skillEnv)
		})
	}
}

func TestSkillEnvFrozenKernel(t *testing.T) {
	for _, mode := range []string{shared.ModeStrict, shared.ModeProject} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ex := newSkillExecutor(t, &logRecorder{}, nil)
			wd := t.TempDir()
			script := `import os; print(os.environ.get("SKILL_TOKEN"))`
			call := func(session string, reset bool) shared.Result {
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
		ex.kernels.mu.Lock()
		defer ex.kernels.mu.Unlock()
		return ex.kernels.pool != nil && ex.kernels.pool.Idle() == 1
	}, 60*time.Second, 20*time.Millisecond)
	ex.kernels.mu.Lock()
	old := ex.kernels.pool
	ex.kernels.mu.Unlock()

	ex.RegisterSkillEnv("SKILL_TOKEN")
	ex.kernels.mu.Lock()
	require.NotSame(t, old, ex.kernels.pool)
	require.Equal(t, ex.skillGen, ex.kernels.poolGen)
	ex.kernels.mu.Unlock()
	res := run(t, ex, Request{Code: `import os; print(os.environ.get("SKILL_TOKEN"))`, Mode: shared.ModeStrict, Session: "s"})
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
	env, _ := shared.ScrubEnv([]string{"SKILL_TOKEN=tok-1", "ANTHROPIC_API_KEY=x"}, opts)
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
