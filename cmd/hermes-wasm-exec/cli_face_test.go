package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// The CLI as a newcomer meets it: each test names the friction
// it pins, measured on the CLI before the issue.

// TestCommandHelp: every command has its own help, on stdout with exit 0,
// its flags spelled with --, and `help CMD` is the same text (before: the
// whole usage on stderr with exit 2, or Go's "Usage of doctor: -config").
func TestCommandHelp(t *testing.T) {
	for _, tc := range []struct {
		cmd   []string
		flags []string
	}{
		{[]string{"run"}, []string{"--mode strict|project", "--timeout DURATION", "--workdir DIR", "--max-tool-calls N"}},
		{[]string{"serve"}, []string{"--listen unix:PATH|tcp:127.0.0.1:PORT", "--auth-timeout DURATION"}},
		{[]string{"mcp"}, []string{"--http HOST:PORT|unix:PATH", "--drain-timeout DURATION", "--skill PATH"}},
		{[]string{"doctor"}, []string{"--config [FILE]"}},
		{[]string{"bench"}, []string{"--n N", "--remote", "--config FILE"}},
		{[]string{"packages", "install"}, []string{"--dir DIR"}},
	} {
		name := strings.Join(tc.cmd, " ")
		for _, form := range [][]string{append(tc.cmd[:len(tc.cmd):len(tc.cmd)], "--help"), append(tc.cmd[:len(tc.cmd):len(tc.cmd)], "-h")} {
			var out, errb bytes.Buffer
			require.Equal(t, 0, Run(form, strings.NewReader(""), &out, &errb), form)
			require.Empty(t, errb.String(), form)
			require.True(t, strings.HasPrefix(out.String(), "usage: hermes-wasm-exec "+name), out.String())
			for _, f := range tc.flags {
				require.Contains(t, out.String(), "  "+f, "%s: %s", name, out.String())
			}
			require.Contains(t, out.String(), "-h, --help")
			require.NotRegexp(t, `(?m)^\s+-[a-z]{2,}`, out.String(), "no flag with a single dash")
		}
		if len(tc.cmd) == 1 {
			var viaHelp, direct bytes.Buffer
			require.Equal(t, 0, Run([]string{"help", name}, nil, &viaHelp, io.Discard))
			require.Equal(t, 0, Run([]string{name, "--help"}, nil, &direct, io.Discard))
			require.Equal(t, direct.String(), viaHelp.String())
		}
	}
	var out, errb bytes.Buffer
	require.Equal(t, 2, Run([]string{"help", "nope"}, nil, &out, &errb))
	require.Contains(t, errb.String(), `unknown command "nope"; the commands: run, serve, mcp`)
	// The run help's examples run as written (from the repository root).
	out.Reset()
	require.Equal(t, 0, Run([]string{"run", "--help"}, nil, &out, io.Discard))
	require.Contains(t, out.String(), "examples:\n  hermes-wasm-exec run --mode strict --workdir testdata/project testdata/examples/data_pipeline.py\n")
}

// TestFlagErrors: a bad flag value is refused in at most three lines that
// name the flag as typed, the value and the accepted form, then where the
// help is (before: Go's `invalid value "abc" for flag -timeout: parse
// error` and 63 lines of usage).
func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--timeout", "abc", "x.py"}, `hermes-wasm-exec run: --timeout "abc": give seconds (30, 2.5) or a duration (90s, 2m, 1h30m)`},
		{[]string{"run", "--timeout", "-5", "x.py"}, `--timeout "-5": must not be negative`},
		{[]string{"run", "--max-tool-calls", "many", "x.py"}, `--max-tool-calls "many": give a whole number of 0 or more`},
		{[]string{"run", "--kind", "robot", "x.py"}, `--kind "robot": give cli, gateway or automation`},
		{[]string{"run", "--yes=maybe", "x.py"}, `--yes "maybe": give true or false`},
		{[]string{"run", "--workdir"}, `--workdir needs a value`},
		{[]string{"run", "--bogus", "x.py"}, `unknown flag --bogus`},
		{[]string{"run"}, `give exactly one script (a .py file, or - for stdin)`},
		{[]string{"mcp", "--drain-timeout", "soon"}, `--drain-timeout "soon": give seconds`},
		{[]string{"serve", "--auth-timeout", "x"}, `--auth-timeout "x": give seconds`},
		{[]string{"bench", "-n", "0"}, `--n "0": give a whole number of 1 or more`},
		{[]string{"bench", "extra"}, `unexpected argument "extra" (bench takes only flags)`},
		{[]string{"doctor", "extra"}, `unexpected argument "extra" (doctor takes only flags)`},
		{[]string{"packages", "list", "--dir", dir, "--bogus"}, `unknown flag --bogus`},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, Run(tc.args, strings.NewReader(""), &out, &errb), tc.args)
		require.Empty(t, out.String(), tc.args)
		msg := errb.String()
		require.Contains(t, msg, tc.want, tc.args)
		require.LessOrEqual(t, strings.Count(msg, "\n"), 3, "%v: %s", tc.args, msg)
		cmd := tc.args[0]
		if cmd == "packages" {
			cmd = "packages list"
		}
		require.True(t, strings.HasSuffix(msg, "see: hermes-wasm-exec "+cmd+" --help\n"), "%v: %s", tc.args, msg)
	}
	// version takes no argument (before: ignored).
	var out, errb bytes.Buffer
	require.Equal(t, 2, Run([]string{"version", "extra"}, nil, &out, &errb))
	require.Contains(t, errb.String(), `unexpected argument "extra"`)
}

// TestLimitsMeanWhatTheySay: --timeout 0 and --max-tool-calls -1 are
// refused with the range, as serve refuses timeout 0 (before: both
// silently became the config's values).
func TestLimitsMeanWhatTheySay(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--timeout", "0", "x.py"}, "--timeout 0s: give more than 0 and at most 24h (leave it out for code_execution.timeout)"},
		{[]string{"run", "--timeout", "25h", "x.py"}, "--timeout 25h0m0s: give more than 0 and at most 24h"},
		{[]string{"run", "--max-tool-calls", "-1", "x.py"}, `--max-tool-calls "-1": give a whole number of 0 or more`},
	} {
		var errb bytes.Buffer
		require.Equal(t, 2, Run(tc.args, strings.NewReader(""), io.Discard, &errb), tc.args)
		require.Contains(t, errb.String(), tc.want)
	}
}

// TestDurationsAndChoicesOneRule: every duration flag takes seconds or a
// Go duration, and every choice flag any case (before: --drain-timeout 5
// was refused while --timeout took seconds; --mode Strict was accepted and
// --kind Gateway refused).
func TestDurationsAndChoicesOneRule(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.py")
	require.NoError(t, os.WriteFile(script, []byte("print('ok')\n"), 0o600))
	for _, args := range [][]string{
		{"run", "--mode", "STRICT", "--kind", "CLI", "--log-level", "Info", "--timeout", "30", script},
		{"run", "--mode", "Strict", "--timeout", "1m30s", "--max-tool-calls", "0", script},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, Run(args, strings.NewReader(""), &out, &errb), "%v: %s", args, errb.String())
		var res struct{ Status, Output string }
		require.NoError(t, json.Unmarshal(out.Bytes(), &res))
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		require.Equal(t, "ok\n", res.Output)
	}
	// mcp takes a drain timeout in seconds; with its input closed it ends.
	code, stdout, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir()}, "", "mcp", "--mode", "Strict", "--drain-timeout", "5", "--log-format", "JSON")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stdout)
}

// TestMissingWorkdirOneRule: a working dir that does not exist is a usage
// error in every front end, saying to create it or pass another (before:
// run exited 1 with a result and mcp 2, both with only `stat DIR: no such
// file or directory`).
func TestMissingWorkdirOneRule(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	want := "the working dir " + missing + " does not exist: create it (mkdir -p " + missing + ") or pass another with --workdir"
	var out, errb bytes.Buffer
	require.Equal(t, 2, Run([]string{"run", "--mode", "strict", "--workdir", missing, "-"}, strings.NewReader("print(1)\n"), &out, &errb))
	require.Empty(t, out.String())
	require.Contains(t, errb.String(), want)
	code, stdout, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir()}, "", "mcp", "--workdir", missing)
	require.Equal(t, 2, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, want)
	// serve (and the Go API beneath it) say the same in the call's result.
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "execute", "params": map[string]any{"code": "print(1)", "mode": "strict", "workdir": missing}})
	require.NoError(t, err)
	code, stdout, stderr = child(t, []string{"HERMES_HOME=" + t.TempDir()}, string(req)+"\n", "serve")
	require.Equal(t, 0, code, stderr)
	var resp struct {
		Result struct{ Status, Error string } `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &resp), stdout)
	require.Equal(t, config.StatusError, resp.Result.Status)
	require.Equal(t, "the working dir "+missing+" does not exist: create it (mkdir -p "+missing+") or pass another", resp.Result.Error)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	errb.Reset()
	require.Equal(t, 2, Run([]string{"run", "--workdir", file, "-"}, strings.NewReader("print(1)\n"), io.Discard, &errb))
	require.Contains(t, errb.String(), "is a file, not a directory")
}

// TestQuietShutdown: a short serve or mcp session that ends with its input
// says nothing but its banner (before: "warning: warm pool: strict engine
// is closed" ended stderr of nearly every such session).
func TestQuietShutdown(t *testing.T) {
	for range 3 {
		for _, args := range [][]string{{"mcp", "--mode", "strict"}, {"serve"}} {
			code, _, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir()}, "", args...)
			require.Equal(t, 0, code, stderr)
			require.NotContains(t, stderr, "warning", args)
			require.NotContains(t, stderr, "warm pool", args)
		}
	}
}

// TestMCPAnswersBeforeEOF: requests piped to mcp before its input closes
// are all answered, as serve answers them (before: `printf '<initialize>\n'
// | hermes-wasm-exec mcp` printed nothing).
func TestMCPAnswersBeforeEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	code, stdout, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir()}, in, "mcp", "--mode", "strict")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, `{"jsonrpc":"2.0","id":1,"result":{`)

	in += `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"print(6 * 7)"}}}` + "\n"
	code, stdout, stderr = child(t, []string{"HERMES_HOME=" + t.TempDir()}, in, "mcp", "--mode", "strict")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2, stdout)
	var res struct {
		ID     string `json:"id"`
		Result struct {
			StructuredContent struct{ Status, Output string } `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &res))
	require.Equal(t, "call", res.ID)
	require.Equal(t, "42\n", res.Result.StructuredContent.Output)
}

// TestDoctorSearchKey: doctor warns of a missing key only for a provider
// that takes one (before: "$BRAVE_API_KEY is NOT set: web_search will
// fail" with the searxng provider).
func TestDoctorSearchKey(t *testing.T) {
	for _, tc := range []struct{ conf, want, not string }{
		{"web:\n  search:\n    provider: searxng\n    url: http://127.0.0.1:8888\n    api_key_env: BRAVE_API_KEY\n", "web search key: none needed (searxng takes no key; $BRAVE_API_KEY is not read)", "NOT set"},
		{"web:\n  search:\n    provider: brave\n", "web search key: $BRAVE_API_KEY is NOT set: web_search (brave) will fail until it is", ""},
	} {
		home := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.yaml"), []byte(tc.conf), 0o600))
		code, stdout, stderr := child(t, []string{"HERMES_HOME=" + home, "BRAVE_API_KEY="}, "", "doctor")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, tc.want)
		if tc.not != "" {
			require.NotContains(t, stdout, tc.not)
		}
	}
}

// TestMakeInstall: `make install` puts the binary where `go install` puts
// programs and says whether that dir is on PATH (before: the binary was
// never on PATH, and the documented `go install ...@latest` answered 403).
func TestMakeInstall(t *testing.T) {
	testenv.SkipUnderWine(t, "make install is a Unix make target; the Windows stage tests the binary itself")
	t.Parallel()
	gobin := t.TempDir()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "make install runs go")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	for _, onPath := range []bool{false, true} {
		path := "/usr/local/bin:/usr/bin:/bin:" + filepath.Dir(goTool)
		if onPath {
			path = gobin + ":" + path
		}
		cmd := exec.Command("make", "-s", "install")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "PATH="+path, "GO="+goTool)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "installed "+filepath.Join(gobin, "hermes-wasm-exec")+"\n")
		if onPath {
			require.Contains(t, string(out), gobin+" is on PATH: run hermes-wasm-exec --help\n")
		} else {
			require.Contains(t, string(out), gobin+" is NOT on PATH: add it, e.g. echo 'export PATH=\""+gobin+":$PATH\"' >> ~/.profile")
		}
	}
	ver, err := exec.Command(filepath.Join(gobin, "hermes-wasm-exec"), "version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(ver), "hermes-wasm-exec "), string(ver))
}

// TestTracebackNamesTheScript: a run's traceback names the file given to
// run, with its lines, in both modes (before: /script.py or
// /tmp/hermes-project-…/script.py), and a script from stdin is <stdin>;
// the variable that carries the name never reaches the script.
func TestTracebackNamesTheScript(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "myscript.py")
	require.NoError(t, os.WriteFile(script, []byte("import os\nprint(os.environ.get('HERMES_SCRIPT_NAME'))\ndef f():\n    return 1 / 0\nf()\n"), 0o600))
	for _, mode := range []string{config.ModeStrict, config.ModeProject} {
		var out, errb bytes.Buffer
		require.Equal(t, 1, Run([]string{"run", "--mode", mode, "--workdir", dir, script}, strings.NewReader(""), &out, &errb), errb.String())
		var res struct{ Status, Output, Error string }
		require.NoError(t, json.Unmarshal(out.Bytes(), &res))
		require.True(t, strings.HasPrefix(res.Output, "None\n"), res.Output)
		require.Contains(t, res.Output, "  File \""+script+"\", line 5, in <module>\n    f()\n", mode)
		require.Contains(t, res.Output, "  File \""+script+"\", line 4, in f\n    return 1 / 0\n", mode)
		require.NotContains(t, res.Output, "/script.py\"", mode)
		require.NotContains(t, res.Output, "hermes-project-", mode)
	}
	var out bytes.Buffer
	require.Equal(t, 1, Run([]string{"run", "--mode", "strict", "-"}, strings.NewReader("def f(:\n"), &out, io.Discard))
	var res struct{ Output string }
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Contains(t, res.Output, "  File \"<stdin>\", line 1\n    def f(:\n")
}

// TestBenchProgress: bench says what it measures as it goes, each row as
// it is done (before: two minutes of silence, then the whole table).
func TestBenchProgress(t *testing.T) {
	var b bytes.Buffer
	p := &benchProgress{w: &b, start: time.Now()}
	rows := []row{{"cold compile (empty cache)", "2200 ms", ""}}
	p.update(rows, "starts with a warm cache")
	rows = append(rows, row{"start with a warm cache", "120 ms", ""}, row{"print(1) in a warm process", "8 ms", ""})
	p.update(rows, "")
	got := regexp.MustCompile(`\(\d+s in\)`).ReplaceAllString(b.String(), "(Ns in)")
	require.Equal(t, "bench: cold compile (empty cache): 2200 ms (Ns in)\n"+
		"bench: measuring starts with a warm cache...\n"+
		"bench: start with a warm cache: 120 ms (Ns in)\n"+
		"bench: print(1) in a warm process: 8 ms (Ns in)\n", got)
	require.Equal(t, 2*time.Minute+30*time.Second, benchEstimate(5), "the measured figure the help and docs give")
}

// TestApprovalPromptOnlyOnATerminal: /dev/null is a character device but
// not a terminal: nobody answers there, so run asks no question on it
// (before: the approval prompt was printed with stdin /dev/null), and
// `run -` says how to end the script only when stdin is a terminal.
func TestApprovalPromptOnlyOnATerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	require.False(t, isTerminal(null), os.DevNull)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.False(t, isTerminal(r), "a pipe")
	require.False(t, isTerminal(strings.NewReader("")), "not a file")

	// A script that needs approval, with stdin /dev/null: blocked without
	// a question.
	script := filepath.Join(t.TempDir(), "s.py")
	require.NoError(t, os.WriteFile(script, []byte("from hermes_tools import terminal\nprint(terminal('rm -rf /tmp/hermes-nothing-here-xyz')['output'])\n"), 0o600))
	var out, errb bytes.Buffer
	Run([]string{"run", "--mode", "strict", "--workdir", t.TempDir(), script}, null, &out, &errb)
	require.NotContains(t, errb.String(), "Approve this command?")
	require.NotContains(t, errb.String(), "reading the script from the terminal")
}
