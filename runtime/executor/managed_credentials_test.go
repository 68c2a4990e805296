package executor

import (
	"context"
	"encoding/json"
	"log/slog"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// TestManagedCredentialsRefusedBySkills: every host-managed credential (Hermes's list and
// this executor's, see config.ManagedCredentials) is refused when a skill registers it,
// executor-wide or for a session, in any case.
func TestManagedCredentialsRefusedBySkills(t *testing.T) {
	rec := &logRecorder{}
	ex := newSkillExecutor(t, rec, nil)
	names := append([]string{}, config.ManagedCredentials...)
	for _, n := range config.ManagedCredentials {
		names = append(names, strings.ToLower(n))
	}
	names = append(names, "AUXILIARY_VISION_API_KEY", "GATEWAY_RELAY_EU_TOKEN")

	require.Equal(t, names, ex.RegisterSkillEnv(names...))
	refused, err := ex.RegisterSessionSkillEnv("s1", names...)
	require.NoError(t, err)
	require.Equal(t, names, refused)
	require.Empty(t, rec.find("skill environment variables registered"), "nothing was registered")
}

// envCommand lists the environment as NAME=value lines: env under sh, set
// under cmd (what terminal() runs on Windows).
var envCommand = map[bool]string{false: "env", true: "set"}[goruntime.GOOS == "windows"]

// TestManagedCredentialsNeverReachScripts: the credentials the issue names, set in the host
// environment and listed in terminal.env_passthrough and by a skill, reach neither a script
// nor its terminal commands, while a third-party key listed the same way does.
func TestManagedCredentialsNeverReachScripts(t *testing.T) {
	managed := []string{"GH_TOKEN", "ANTHROPIC_TOKEN", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET",
		"DAYTONA_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "VERCEL_PROJECT_ID", "AUXILIARY_VISION_API_KEY"}
	env := []string{"TENOR_API_KEY=tenor"}
	for _, n := range managed {
		env = append(env, n+"=host-"+strings.ToLower(n))
	}
	cfg := config.Default()
	cfg.Terminal.EnvPassthrough = append([]string{"TENOR_API_KEY"}, managed...)
	rec := &logRecorder{}
	ex := New(Options{Config: &cfg, HermesHome: t.TempDir(), Environ: testEnviron(env...), Logger: slog.New(rec)})
	t.Cleanup(func() { ex.Close(context.Background()) })
	require.Equal(t, managed, ex.RegisterSkillEnv(managed...))

	names, err := json.Marshal(append([]string{"TENOR_API_KEY"}, managed...))
	require.NoError(t, err)
	code := `import json, os
from hermes_tools import terminal
names = ` + string(names) + `
seen = [n for n in names if n in os.environ]
out = terminal("` + envCommand + `")["output"]
print(json.dumps({"script": seen, "terminal": [n for n in names if n + "=" in out]}))`
	res := run(t, ex, Request{Code: code, Mode: config.ModeStrict})
	require.JSONEq(t, `{"script": ["TENOR_API_KEY"], "terminal": ["TENOR_API_KEY"]}`, res.Output)
	warnings := rec.find("passthrough refused")
	require.NotEmpty(t, warnings)
	require.Equal(t, managed, warnings[0].attrs["names"])
}
