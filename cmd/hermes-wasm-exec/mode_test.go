package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// typoWarning is the warning of a config file whose code_execution.mode is "stict".
const typoWarning = `.yaml: line 3: unknown code_execution.mode "stict"; falling back to "strict", the sandbox, so that a typo never runs scripts without it (valid modes: project, strict); did you mean "strict"?`

// typoConfig is a config file with a misspelt mode (and no warm pool, to keep serve and mcp
// light).
const typoConfig = "code_execution:\n  warm_pool: 0\n  mode: stict\n"

// platformScript prints where it runs: "wasi" in the sandbox.
const platformScript = "import sys\nprint(sys.platform)\n"

// A misspelt code_execution.mode runs scripts in the sandbox in every front end, with a
// did-you-mean warning; it used to run them in project mode, without one.
func TestModeTypoRunsStrict(t *testing.T) {
	t.Run("run", func(t *testing.T) {
		home, workdir := t.TempDir(), t.TempDir()
		t.Setenv("HERMES_HOME", home)
		t.Setenv("TMPDIR", t.TempDir())
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.yaml"), []byte(typoConfig), 0o600))
		var out, errb bytes.Buffer
		code := Run([]string{"run", "--workdir", workdir, "-"}, strings.NewReader(platformScript), &out, &errb)
		require.Equal(t, 0, code, errb.String())
		var res result
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
		require.Equal(t, "strict", res.Mode)
		require.Equal(t, "wasi\n", res.Output)
		require.Contains(t, errb.String(), typoWarning)
	})
	t.Run("serve", func(t *testing.T) {
		e := newServeEnv(t, typoConfig)
		p := e.start()
		res := p.exec(t, map[string]any{"code": platformScript, "workdir": e.workdir})
		require.Equal(t, "strict", res.Mode)
		require.Equal(t, "wasi\n", res.Output)
		require.Contains(t, p.stderr.String(), typoWarning)
	})
	t.Run("mcp", func(t *testing.T) {
		home, workdir := t.TempDir(), t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.yaml"), []byte(typoConfig), 0o600))
		code, stdout, stderr := child(t, []string{"HERMES_HOME=" + home}, "", "mcp", "--workdir", workdir)
		require.Equal(t, 0, code, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, typoWarning)
		require.Contains(t, stderr, "(tool execute_code, strict mode, working dir ")
	})
}

// A misspelt --mode is refused, with the mode it was likely meant to be.
func TestModeFlagTypo(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, Run([]string{"run", "--mode", "stict", "x.py"}, strings.NewReader(""), &out, &errb))
	require.Contains(t, errb.String(), `--mode "stict": give strict or project; did you mean "strict"?`)
	require.Empty(t, out.String())

	code, stdout, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir()}, "", "mcp", "--mode", "Projet")
	require.Equal(t, 2, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, `--mode "Projet": give strict or project; did you mean "project"?`)
}
