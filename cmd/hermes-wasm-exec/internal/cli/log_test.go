package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// TestExecutorLoggerLines: an executor logging through ExecutorLogger
// prints the CLI's lines: warnings at every level, the other events at
// debug only, with the historical sentences of the events that have one
// and "execute_code: msg key=value ..." for the others (a layer below the
// executor included).
func TestExecutorLoggerLines(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"debug", "info"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			stderr := &LockedWriter{W: &out}
			cfg := config.Default()
			cfg.Terminal.EnvPassthrough = []string{"OPENAI_API_KEY"}
			home := t.TempDir()
			// The spill dir is a file: a truncated stdout cannot be saved in full.
			require.NoError(t, os.MkdirAll(filepath.Join(home, "cache"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(home, "cache", "exec"), nil, 0o600))
			environ := slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, "HERMES_A=") || strings.HasPrefix(kv, "HERMES_B=") || strings.HasPrefix(kv, "OPENAI_API_KEY=")
			})
			ex := executor.New(executor.Options{
				Config:     &cfg,
				HermesHome: home,
				Environ:    append(environ, "HERMES_B=1", "HERMES_A=1", "OPENAI_API_KEY=sk-x"),
				Logger:     ExecutorLogger(level, stderr),
			})
			ctx := context.Background()
			wd := t.TempDir()
			for _, req := range []executor.Request{
				{Code: "from hermes_tools import read_file\nread_file('x')", Mode: "strict", Session: "my session"},
				{Code: "print('x' * 60000)", Mode: "strict"},
				{Code: "pass", Mode: "stict"},
				{Code: "pass", Mode: "project", Sandbox: "wsm"},
			} {
				req.Workdir = wd
				res, err := ex.Execute(ctx, req)
				require.NoError(t, err)
				require.Equal(t, config.StatusSuccess, res.Status, res.Output)
			}
			ex.RegisterSkillEnv("GROQ_API_KEY", "MY_SKILL_URL")
			require.NoError(t, ex.Close(ctx))

			all := out.String()
			for _, line := range []string{
				"hermes-wasm-exec: warning: execute_code: refusing to pass through host-managed credentials [OPENAI_API_KEY]\n",
				"hermes-wasm-exec: warning: execute_code: refusing to pass through host-managed credentials [GROQ_API_KEY] registered by a skill\n",
				"hermes-wasm-exec: warning: execute_code: stdout spill failed dir=" + filepath.Join(home, "cache", "exec") + " error=",
				`hermes-wasm-exec: warning: execute_code: unknown mode "stict"; falling back to "strict", the sandbox, so that a typo never runs scripts without it (valid modes: project, strict); did you mean "strict"?` + "\n",
				`hermes-wasm-exec: warning: execute_code: unknown sandbox "wsm"; using "wasm", the sandbox, so that a typo never runs scripts outside it (valid values: none, wasm); did you mean "wasm"?` + "\n",
			} {
				require.Contains(t, all, line)
			}
			if level == "info" {
				require.NotContains(t, all, "debug: ")
				return
			}
			require.Regexp(t, `\ndebug: execute_code: dropped \d+ non-allowlisted HERMES_\* var\(s\) from the sandbox child env \((.*, )?HERMES_A, HERMES_B(, .*)?\)\. This is intentional hardening \(#27303\); if a sandbox script legitimately needs one, declare it via env_passthrough in the skill/config so it passes by explicit opt-in\.\n`, all)
			require.Regexp(t, `\ndebug: execute_code: tool call session="my session" tool=read_file duration_ms=[0-9.e-]+ ok=false\n`, all)
			require.Regexp(t, `\ndebug: execute_code: execute done session="my session" mode=strict status=success duration=\S+ tool_calls=1\n`, all)
			require.Contains(t, all, "\ndebug: execute_code: skill environment variables registered names=[MY_SKILL_URL]\n")
		})
	}
}

// TestEventLines: the sentences of the events the executor logs only in
// situations a unit test does not make (a busy or remote kernel, an
// eviction, a failed warm pool, a host without python), from their
// attributes.
func TestEventLines(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		args  []any
		level slog.Level
		want  string
	}{
		{"passthrough refused", []any{"names", []string{"OPENAI_API_KEY"}, "source", "terminal.client_env"}, slog.LevelWarn,
			"hermes-wasm-exec: warning: execute_code: refusing to pass host-managed credentials [OPENAI_API_KEY] to a backend's client"},
		{"skill environment variable refused", []any{"names", []string{"1X", "A-B"}, "reason", "invalid name", "session", "s"}, slog.LevelWarn,
			`hermes-wasm-exec: warning: execute_code: refusing invalid environment variable names ["1X" "A-B"] registered by a skill`},
		{"python skipped", []any{"candidate", "/v/bin/python (from VIRTUAL_ENV): too old"}, slog.LevelInfo,
			"debug: execute_code: skipped python /v/bin/python (from VIRTUAL_ENV): too old"},
		{"embedded interpreter fallback", []any{"skipped", 0}, slog.LevelWarn,
			"hermes-wasm-exec: warning: execute_code: no usable python on this host: project mode runs the embedded WASI CPython over the session dir (standard library only)"},
		{"remote kernel unavailable", []any{"session", "s", "backend", "docker", "error", "no python3"}, slog.LevelWarn,
			`hermes-wasm-exec: warning: execute_code: the session kernel of "s" could not start on the docker backend (no python3); running the call as a standalone script`},
		{"no kernel slot", []any{"session", "s", "max_session_kernels", 2, "timeout", 300 * time.Second, "waited", time.Second}, slog.LevelWarn,
			`hermes-wasm-exec: warning: execute_code: every session kernel stayed busy for 5m0s (max_session_kernels is 2); running the call of "s" as a standalone script`},
		{"warm pool failed", []any{"error", "no interpreter"}, slog.LevelError,
			"hermes-wasm-exec: warning: warm pool: no interpreter"},
		{"kernel evicted", []any{"session", "s1", "mode", "strict", "reason", "lru", "max_session_kernels", 1}, slog.LevelInfo,
			`debug: execute_code: evicting the kernel of session "s1" (least recently used; max_session_kernels is 1)`},
		{"idle kernel closed", []any{"session", "s", "mode", "strict", "kernel_idle_timeout", 90 * time.Second}, slog.LevelInfo,
			`debug: execute_code: closing the kernel of session "s" (idle for 1m30s)`},
		{"some new event", []any{"a", 1, "b", "", "c", "x y", "d", "k=v", "e", []string{"A", "B"}, "f", true, "g", 1500 * time.Millisecond}, slog.LevelDebug,
			`debug: execute_code: some new event a=1 b="" c="x y" d="k=v" e="[A B]" f=true g=1.5s`},
	} {
		var out strings.Builder
		ExecutorLogger("debug", &out).Log(context.Background(), tc.level, tc.msg, tc.args...)
		require.Equal(t, tc.want+"\n", out.String(), tc.msg)
	}
	// Attributes given to With are part of the line.
	var out strings.Builder
	ExecutorLogger("debug", &out).With("session", "s").Warn("stdout spill failed", "dir", "/d")
	require.Equal(t, "hermes-wasm-exec: warning: execute_code: stdout spill failed session=s dir=/d\n", out.String())
	// At info, only warnings and errors.
	require.False(t, ExecutorLogger("info", &out).Enabled(context.Background(), slog.LevelInfo))
	require.True(t, ExecutorLogger("info", &out).Enabled(context.Background(), slog.LevelWarn))
}
