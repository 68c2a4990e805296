package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestExecutorEnvironHidesSecrets is the regression test for reading the
// executor's own environment: a terminal command
// reading /proc/$PPID/environ, and in project mode the script reading
// /proc/<getppid()>/environ, used to print every secret of the host. The CLI
// runs as a real child process (the hardening re-executes it), as root in CI.
// A variable named in env_passthrough still reaches the script: the values
// were handed over, not lost.
func TestExecutorEnvironHidesSecrets(t *testing.T) {
	environHidesSecrets(t)
}

// TestExecutorEnvironHidesSecretsUnprivileged: the same as an ordinary
// user, whom the executor's non-dumpable state keeps from reading its
// environ at all. As root (CI) it runs as nobody in a child process; as an
// ordinary user TestExecutorEnvironHidesSecrets is this test already.
func TestExecutorEnvironHidesSecretsUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 && !testenv.UnprivilegedRerun() {
		t.Skip("not root: TestExecutorEnvironHidesSecrets runs as this ordinary user already")
	}
	if !testenv.Unprivileged(t) {
		return
	}
	environHidesSecrets(t)
}

// environHidesSecrets is the check, for the user the test runs as.
func environHidesSecrets(t *testing.T) {
	forModes(t, allModes, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		cfg := filepath.Join(e.home, "config.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte("terminal:\n  env_passthrough: [MY_TOKEN]\n"), 0o600))
		script := `import os, json
from hermes_tools import terminal
out = {"terminal": terminal("tr '\\0' '\\n' < /proc/$PPID/environ")["output"],
       "passed": os.environ.get("MY_TOKEN")}
try:
    out["direct"] = open(f"/proc/{os.getppid()}/environ").read().replace("\0", "\n")
except (OSError, AttributeError) as e:
    out["direct"] = "unreadable: " + str(e)
print(json.dumps(out))
`
		secrets := []string{"GITHUB_TOKEN=ghp_leak1", "BRAVE_API_KEY=brave_leak2", "MY_TOKEN=tok_leak3", "DB_PASSWORD=hunter2_leak4", "RANDOM_THING=plain_leak5"}
		args := append(append([]string{"run"}, m.args...), "--workdir", e.workdir, "-")
		code, stdout, stderr := child(t, secrets, script, args...)
		require.Equal(t, 0, code, stdout+stderr)
		var res result
		require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
		var out struct{ Terminal, Passed, Direct string }
		require.NoError(t, json.Unmarshal([]byte(res.Output), &out), res.Output)
		require.Equal(t, "tok_leak3", out.Passed, "passthrough still reaches the script")
		if os.Getuid() == 0 {
			// Root reads any environ: the read works, and shows no secret.
			require.Contains(t, out.Terminal, "HERMES_HOME=", "the read itself worked")
		} else {
			// Anyone else: the executor is non-dumpable, so the read fails.
			require.Contains(t, out.Terminal, "Permission denied")
		}
		for _, s := range []string{out.Terminal, out.Direct} {
			for _, leak := range []string{"ghp_leak1", "brave_leak2", "tok_leak3", "hunter2_leak4", "plain_leak5"} {
				require.NotContains(t, s, leak)
			}
		}
	})
}
