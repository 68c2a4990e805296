package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// compatChecks runs in every front end and mode: it reports the time zone, the passthrough
// variables and three terminal() calls, the third of which is past the tool budget.
const compatChecks = `import json, os, time
from hermes_tools import terminal
calls = [terminal("echo TZ=$TZ; date +%Z"), terminal("echo two"), terminal("echo three")]
print(json.dumps({
    "tz": os.environ.get("TZ"),
    "zone": time.strftime("%Z"),
    "base_url": os.environ.get("HERMES_BASE_URL"),
    "token": os.environ.get("COMPAT_SERVICE_TOKEN"),
    "unlisted": os.environ.get("COMPAT_UNLISTED_TOKEN"),
    "terminal": calls[0].get("output"),
    "second": calls[1].get("output"),
    "third": calls[2],
}))
`

// compatSleep outlives the configured timeout.
const compatSleep = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"

// compatTimeout is code_execution.timeout in testdata/hermes/config.yaml.
const compatTimeout = 3

// TestHermesCompat: a Hermes user's whole config.yaml
// (testdata/hermes/config.yaml: every Hermes section, values in Hermes's spelling) placed
// in $HERMES_HOME, with no --config, drives run, serve and mcp in both modes. Nothing exits
// 2, nothing warns, and the keys this executor uses take effect: the timeout, the tool
// budget, env_passthrough, the top-level timezone (in scripts and terminal commands) and
// approvals.cron_mode.
func TestHermesCompat(t *testing.T) {
	home, tmp := t.TempDir(), t.TempDir()
	fixture, err := os.ReadFile("../../testdata/hermes/config.yaml")
	require.NoError(t, err)
	conf := filepath.Join(home, "config.yaml")
	require.NoError(t, os.WriteFile(conf, fixture, 0o600))
	t.Setenv("HERMES_HOME", home)
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HERMES_TIMEZONE", "")
	// Both are dropped by the scrubber unless terminal.env_passthrough lists them: a
	// non-allowlisted HERMES_* variable and a secret-named one.
	t.Setenv("HERMES_BASE_URL", "https://hermes.example/v1")
	t.Setenv("COMPAT_SERVICE_TOKEN", "tok-listed")
	t.Setenv("COMPAT_UNLISTED_TOKEN", "tok-unlisted")
	t.Cleanup(func() {
		left, _ := os.ReadDir(tmp)
		var names []string
		for _, d := range left {
			names = append(names, d.Name())
		}
		require.Empty(t, names, "temp dirs left behind")
	})
	ignored := fmt.Sprintf("debug: config %s: ignoring 54 key(s) hermes-wasm-exec does not use: _config_version (line 6), model (line 8), providers (line 12),", conf)

	// The front ends run in parallel: each waits out the 3-second timeout once per mode.
	for _, mode := range []string{"strict", "project"} {
		t.Run("run/"+mode, func(t *testing.T) {
			t.Parallel()
			workdir := t.TempDir()
			run := func(script string, args ...string) (int, result, string) {
				t.Helper()
				full := append([]string{"run", "--mode", mode, "--workdir", workdir}, args...)
				var out, errb bytes.Buffer
				code := Run(append(full, "-"), strings.NewReader(script), &out, &errb)
				var res result
				require.NoError(t, json.Unmarshal(out.Bytes(), &res), "stdout: %s\nstderr: %s", out.String(), errb.String())
				return code, res, errb.String()
			}
			code, res, stderr := run(compatChecks, "--log-level", "debug")
			require.Equal(t, 0, code, "%s\n%s", res.Output, stderr)
			checkCompat(t, mode, res)
			noWarnings(t, stderr)
			require.Equal(t, 1, strings.Count(stderr, "debug: config "), stderr)
			require.Contains(t, stderr, ignored, "the ignored keys are listed once at debug level")

			// approvals.cron_mode: approve: an automation script runs without asking (the
			// default, ask, would block it: nobody is there to answer).
			code, res, stderr = run("print('automated')", "--kind", "automation")
			require.Equal(t, 0, code, "%s\n%s", res.Output, stderr)
			require.Equal(t, "automated\n", res.Output)
			noWarnings(t, stderr)

			code, res, stderr = run(compatSleep)
			require.Equal(t, 1, code, stderr)
			checkTimeout(t, res)
			noWarnings(t, stderr)
		})
	}

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		var stderr syncBuffer
		exit := make(chan int, 1)
		// The sessions' dirs are made before the cleanup that ends the server,
		// so removed after it (Windows removes no dir a process still has open).
		workdirs := []string{t.TempDir(), t.TempDir()}
		go func() {
			code := Run([]string{"serve", "--log-level", "debug"}, inR, outW, &stderr)
			outW.Close()
			exit <- code
		}()
		ended := false
		t.Cleanup(func() {
			if !ended { // a failed test: end the server before the temp dir check
				inW.Close()
				<-exit
			}
		})
		c := newServeClient(outR, inW)
		// Sessions of different names run at the same time: both modes' calls are in flight
		// together.
		modes := []string{"strict", "project"}
		var pending []<-chan testMsg
		for i, mode := range modes {
			pending = append(pending, c.start("execute", map[string]any{"code": compatChecks, "mode": mode, "workdir": workdirs[i], "session": "compat-" + mode}))
		}
		for i, mode := range modes {
			checkCompat(t, mode, execResult(t, wait(t, pending[i])))
		}
		pending = pending[:0]
		for _, mode := range modes {
			pending = append(pending, c.start("execute", map[string]any{"code": compatSleep, "mode": mode, "session": "compat-" + mode}))
		}
		for i := range modes {
			checkTimeout(t, execResult(t, wait(t, pending[i])))
		}
		inW.Close()
		select {
		case code := <-exit:
			ended = true
			require.Equal(t, 0, code, stderr.String())
		case <-time.After(time.Minute):
			t.Fatal("serve did not end at stdin EOF")
		}
		require.Empty(t, c.badLines())
		noWarnings(t, stderr.String())
		require.Contains(t, stderr.String(), ignored)
	})

	for _, mode := range []string{"strict", "project"} {
		t.Run("mcp/"+mode, func(t *testing.T) {
			t.Parallel()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			var stderr syncBuffer
			exit := make(chan int, 1)
			// Made before the cleanup that ends the server, so removed after it
			// (Windows removes no dir a process still has open).
			workdir := t.TempDir()
			go func() {
				code := Run([]string{"mcp", "--mode", mode, "--workdir", workdir}, inR, outW, &stderr)
				outW.Close()
				exit <- code
			}()
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			ended := false
			t.Cleanup(func() {
				if !ended { // a failed test: end the server before the temp dir check
					inW.Close()
					outR.Close()
					<-exit
				}
			})
			client := mcp.NewClient(&mcp.Implementation{Name: "hermes-compat", Version: "v0.0.1"}, nil)
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
			require.NoError(t, err)

			// The tool's description quotes the configured limits.
			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			require.Len(t, tools.Tools, 1)
			require.Regexp(t, fmt.Sprintf(`\b%d[- ]s(econd)?\b`, compatTimeout), tools.Tools[0].Description)
			require.Contains(t, tools.Tools[0].Description, " 2 tool calls")

			_, res, isError := callCode(t, cs, map[string]any{"code": compatChecks})
			require.False(t, isError, res.Output)
			checkCompat(t, mode, res)
			_, res, _ = callCode(t, cs, map[string]any{"code": compatSleep})
			checkTimeout(t, res)

			require.NoError(t, cs.Close())
			select {
			case code := <-exit:
				ended = true
				require.Equal(t, 0, code, stderr.String())
			case <-time.After(time.Minute):
				t.Fatal("mcp did not end when its client went away")
			}
			noWarnings(t, stderr.String())
		})
	}
}

// checkCompat checks the result of compatChecks.
func checkCompat(t *testing.T, mode string, res result) {
	t.Helper()
	require.Equal(t, "success", res.Status, "%s: %s %s", mode, res.Output, res.Error)
	require.Equal(t, mode, res.Mode)
	var got struct {
		TZ       *string        `json:"tz"`
		Zone     string         `json:"zone"`
		BaseURL  *string        `json:"base_url"`
		Token    *string        `json:"token"`
		Unlisted *string        `json:"unlisted"`
		Terminal string         `json:"terminal"`
		Second   string         `json:"second"`
		Third    map[string]any `json:"third"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)

	// code_execution.max_tool_calls: 2.
	require.Equal(t, 2, res.ToolCallsMade, mode)
	// terminal()'s output ends lines with LF on every platform, as Hermes's does: it
	// reads its shell's output in text mode (subprocess.Popen(text=True)), which turns the
	// CRLF of Windows programs (cmd's echo) into LF.
	require.Equal(t, "two\n", got.Second)
	require.Equal(t, map[string]any{"error": "Tool call limit reached (2). No more tool calls allowed in this execution."}, got.Third)

	// terminal.env_passthrough: both listed variables pass, in spite of the scrubber; an
	// unlisted secret does not.
	require.NotNil(t, got.BaseURL, "HERMES_BASE_URL is listed in env_passthrough")
	require.Equal(t, "https://hermes.example/v1", *got.BaseURL)
	require.NotNil(t, got.Token, "COMPAT_SERVICE_TOKEN is listed in env_passthrough")
	require.Equal(t, "tok-listed", *got.Token)
	require.Nil(t, got.Unlisted)

	// The top-level timezone: TZ for the script and for its terminal commands. As in Hermes,
	// not on Windows, whose programs do not read IANA names in TZ, except for a strict-mode
	// guest, which reads them itself.
	if goruntime.GOOS == "windows" {
		if mode == "strict" {
			require.NotNil(t, got.TZ, "a strict guest sees TZ on every system")
			require.Equal(t, "Asia/Tokyo", *got.TZ)
			return
		}
		require.Nil(t, got.TZ)
		return
	}
	require.NotNil(t, got.TZ, "the script sees TZ")
	require.Equal(t, "Asia/Tokyo", *got.TZ)
	require.True(t, strings.HasPrefix(got.Terminal, "TZ=Asia/Tokyo\n"), "terminal commands see TZ: %q", got.Terminal)
	if _, err := os.Stat("/usr/share/zoneinfo/Asia/Tokyo"); err == nil {
		require.Equal(t, "TZ=Asia/Tokyo\nJST\n", got.Terminal, "date follows TZ")
		if _, err := exec.LookPath("python3"); err == nil && mode == "project" {
			require.Equal(t, "JST", got.Zone, "the host's python follows TZ")
		}
	}
}

// checkTimeout checks the result of compatSleep: killed at code_execution.timeout (a
// one-shot script's error is "Script timed out after 3s and was killed.", a session
// kernel's cell's "Cell timed out after 3s; ...").
func checkTimeout(t *testing.T, res result) {
	t.Helper()
	require.Equal(t, "timeout", res.Status, "%s %s", res.Output, res.Error)
	require.Contains(t, res.Error, fmt.Sprintf(" timed out after %ds", compatTimeout))
	// Wide margins: a busy machine may be slow to start or to kill, never early.
	require.GreaterOrEqual(t, res.DurationSeconds, float64(compatTimeout)-0.1)
	require.Less(t, res.DurationSeconds, float64(compatTimeout)+30)
}

// noWarnings fails when a front end printed a warning: a Hermes config has none.
// Under wine project mode falls back to the embedded interpreter (wine has no
// Windows CPython), and says so: that warning is about the host, not the config.
func noWarnings(t *testing.T, stderr string) {
	t.Helper()
	if testenv.UnderWine() {
		var kept []string
		for _, line := range strings.Split(stderr, "\n") {
			if !strings.Contains(line, "warning: execute_code: no usable python on this host") {
				kept = append(kept, line)
			}
		}
		stderr = strings.Join(kept, "\n")
	}
	require.NotContains(t, stderr, "warning", stderr)
}

// TestDoctorConfigReport: `doctor --config [FILE]` lists the keys of the file that were used,
// with their effective values, and those that were ignored; plain `doctor` does not.
func TestDoctorConfigReport(t *testing.T) {
	e := newEnv(t)
	fixture, err := os.ReadFile("../../testdata/hermes/config.yaml")
	require.NoError(t, err)
	conf := filepath.Join(e.home, "config.yaml")
	require.NoError(t, os.WriteFile(conf, fixture, 0o600))
	t.Setenv("HERMES_TIMEZONE", "")
	doctor := func(args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := Run(append([]string{"doctor"}, args...), nil, &out, &errb)
		require.Empty(t, errb.String())
		return code, out.String()
	}

	for _, args := range [][]string{{"--config"}, {"--config", conf}, {"-config=" + conf}} {
		code, out := doctor(args...)
		require.Equal(t, 0, code, out)
		for _, want := range []string{
			"  source    " + conf + "\n",
			"  timezone: Asia/Tokyo\n",
			"      cron_mode: approve\n",
			"  TZ for scripts and terminal commands: Asia/Tokyo (from timezone)\n",
			"  keys used (effective values):\n    line 18    timezone = Asia/Tokyo\n    line 32    terminal.backend = local\n    line 34    terminal.cwd = . (applies to remote backends only; local commands run in the session's working dir)\n    line 37    terminal.env_passthrough = [HERMES_BASE_URL, COMPAT_SERVICE_TOKEN]\n    line 42    terminal.docker_image = nikolaik/python-nodejs:python3.14-nodejs22\n",
			"    line 190   code_execution.timeout = 3\n    line 191   code_execution.max_tool_calls = 2\n",
			"  keys ignored (Hermes settings and unknown keys, not used by hermes-wasm-exec):\n    line 6     _config_version\n    line 8     model\n",
			"    line 35    terminal.timeout: terminal() waits 180 s here unless the script passes timeout= (at most 600 s)\n",
			"    line 189   code_execution.kernel_mode: retired in Hermes: session kernels are always on\n",
			"    line 153   mcp_servers: scripts never reach MCP tools\n",
			"project-mode interpreter:",
		} {
			require.Contains(t, out, want, "%v", args)
		}
		require.NotContains(t, out, "warning", "%v", args)
	}

	// Without --config, the report is left out.
	code, out := doctor()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "config in effect:")
	require.NotContains(t, out, "keys used")

	// $HERMES_TIMEZONE wins, and the report says so; clamps are noted; a typo is a warning.
	t.Setenv("HERMES_TIMEZONE", "Europe/Paris")
	typo := strings.Replace(string(fixture), "  max_session_kernels: 4\n", "  max_session_kernels: 0\n  timeot: 9\n", 1)
	require.NoError(t, os.WriteFile(conf, []byte(typo), 0o600))
	code, out = doctor("--config")
	require.Equal(t, 0, code, out)
	for _, want := range []string{
		"  TZ for scripts and terminal commands: Europe/Paris (from HERMES_TIMEZONE)\n",
		"    line 18    timezone = Asia/Tokyo (overridden by HERMES_TIMEZONE=Europe/Paris)\n",
		"    line 193   code_execution.max_session_kernels = 1\n",
		"  note      " + conf + ": line 193: code_execution.max_session_kernels is 0; using 1 (values below 1 clamp to 1, as in Hermes)\n",
		"  warning   " + conf + `: line 194: unknown key "code_execution.timeot" is ignored; did you mean "code_execution.timeout"?` + "\n",
		`    line 194   code_execution.timeot: unknown; did you mean "code_execution.timeout"?` + "\n",
	} {
		require.Contains(t, out, want)
	}

	// A key this executor uses with a wrong value is still an error.
	require.NoError(t, os.WriteFile(conf, []byte(strings.Replace(string(fixture), "  timeout: 3 ", "  timeout: three ", 1)), 0o600))
	code, out = doctor("--config")
	require.Equal(t, 2, code)
	require.Contains(t, out, "  ERROR: "+conf+`: line 190: code_execution.timeout must be an integer (seconds), got string "three"`)
	t.Setenv("HERMES_TIMEZONE", "Mars/Base")
	require.NoError(t, os.WriteFile(conf, fixture, 0o600))
	code, out = doctor("--config")
	require.Equal(t, 2, code)
	require.Contains(t, out, `  ERROR: environment variable HERMES_TIMEZONE is "Mars/Base", which is not an IANA time zone`)
}
