package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/mcpserver"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// mcpEnv is an in-process MCP server on a working dir with a small
// project, and the executor behind it.
type mcpEnv struct {
	t       *testing.T
	workdir string
	m       *mcpserver.Server
	ctx     context.Context
}

// newMCPEnv starts no connection yet: see connect. The environment
// (HERMES_HOME, TMPDIR) is the test's own, so the test cannot be parallel.
func newMCPEnv(t *testing.T, mode string, edit func(*config.Config)) *mcpEnv {
	t.Helper()
	e := newEnvIn(t, strictMode) // HERMES_HOME, TMPDIR (checked empty), workdir
	for name, content := range map[string]string{
		"app/main.py":  "from app.util import helper\n\n\ndef main():\n    return helper()\n",
		"app/util.py":  "def helper():\n    return 42\n\n\ndef unused():\n    pass\n",
		"app/data.txt": "def is not code here\n",
		"notes.txt":    "hello\nsecond line\nthird line\n",
	} {
		p := filepath.Join(e.workdir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	cfg := config.Default()
	cfg.CodeExecution.WarmPool = 0
	if edit != nil {
		edit(&cfg)
	}
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: e.home})
	m := mcpserver.New(ex, mcpserver.Options{Config: cfg, Mode: mode, Workdir: e.workdir})
	ctx, cancel := context.WithCancel(context.Background())
	// Cleanups run last-in first-out: the connections end, then the
	// server stops and the executor closes, then the temp dir check.
	t.Cleanup(func() {
		cancel()
		m.Stop()
		require.NoError(t, ex.Close(context.Background()))
	})
	return &mcpEnv{t: t, workdir: e.workdir, m: m, ctx: ctx}
}

// connect opens a connection with a client; served is closed when the
// server side of it has ended (and its kernel is closed).
func (e *mcpEnv) connect(opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions) (cs *mcp.ClientSession, served chan struct{}) {
	t := e.t
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	served = make(chan struct{})
	go func() {
		defer close(served)
		_ = e.m.Serve(e.ctx, st)
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "hermes-test", Version: "v0.0.1"}, opts)
	cs, err := client.Connect(e.ctx, ct, sessOpts)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		select {
		case <-served:
		case <-time.After(time.Minute):
			t.Error("the server did not end the connection")
		}
	})
	return cs, served
}

// callCode calls execute_code and returns its text, its structured result
// and isError.
func callCode(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, result, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "the content is text: %#v", res.Content[0])
	var r result
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &r), string(b))
	}
	return text.Text, r, res.IsError
}

// mcpScript reads and searches files of the working dir through the
// tools, and keeps what it found in a global for the next call.
const mcpScript = `from hermes_tools import read_file, search_files
found = search_files(r"^def ", path="app", file_glob="*.py")
defs = sorted((m["path"].replace("\\", "/").split("app/")[-1], m["line"]) for m in found["matches"])
notes = read_file("notes.txt")
print(defs)
print(notes["total_lines"], "hello" in notes["content"])
`

// withoutFallbackWarning is an MCP call's text without the warning of
// project mode's embedded-interpreter fallback (no python on the host),
// which it must have.
func withoutFallbackWarning(t *testing.T, text string) string {
	t.Helper()
	i := strings.Index(text, "warning: "+fallbackWarning)
	require.True(t, i >= 0, "the fallback's warning: %q", text)
	return text[:i] + strings.TrimPrefix(text[i+len("warning: "+fallbackWarning):], "\n")
}

func TestMCP(t *testing.T) {
	for _, mode := range []string{config.ModeStrict, config.ModeProject} {
		t.Run(mode, func(t *testing.T) { mcpTests(t, mode) })
	}
}

func mcpTests(t *testing.T, mode string) {
	callCode := func(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, result, bool) {
		t.Helper()
		text, res, isErr := callCode(t, cs, args)
		if mode == config.ModeProject && testenv.UnderWine() && res.Kernel != nil {
			// No python under wine: every call that runs code (in a
			// kernel) says it used the embedded interpreter.
			text = withoutFallbackWarning(t, text)
			require.Equal(t, fallbackWarning, res.Warning)
		}
		return text, res, isErr
	}
	e := newMCPEnv(t, mode, nil)
	cs, served := e.connect(nil, nil)
	ctx := context.Background()

	// Exactly one tool, described well enough to write a script for it.
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	tool := tools.Tools[0]
	require.Equal(t, "execute_code", tool.Name)
	// Hermes's description (executor.ExecuteCodeSchema), then what the
	// server adds.
	cfg := config.Default()
	cfg.CodeExecution.WarmPool = 0
	hermes := executor.ExecuteCodeSchema(cfg, mode, nil)
	require.True(t, strings.HasPrefix(tool.Description, hermes.Description+"\n\nThe tools act on the working dir "+e.workdir+"."), tool.Description)
	for _, s := range engine.Signatures() {
		require.Contains(t, tool.Description, s)
	}
	for _, want := range []string{
		"Limits: 5-minute timeout, max 50 tool calls per call. Stdout over 50KB shows head/tail inline",
		"Helpers require imports: `from hermes_tools import json_parse, shell_quote, retry`.",
		"Use normal tool calls for single calls (don't wrap a single terminal command in execute_code)",
		"after 30 idle minutes; pass reset=true to start fresh.",
		"need the user's approval",
	} {
		require.Contains(t, tool.Description, want)
	}
	if mode == config.ModeStrict {
		require.Contains(t, tool.Description, "Scripts run in their own temp dir, not the session's CWD, inside a WebAssembly sandbox (CPython 3.13, standard library only): the script itself cannot open host files or the network")
	} else {
		require.Contains(t, tool.Description, "Scripts run in the session's working directory. Interpreter: the project's activated venv/conda python")
	}
	schema, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	var in struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(schema, &in))
	require.Equal(t, "object", in.Type)
	require.Equal(t, []string{"code"}, in.Required)
	require.Len(t, in.Properties, 2)
	require.JSONEq(t, `{"type": "string", "description": "Python code to execute. Import tools with `+"`from hermes_tools import web_search, terminal, ...`"+` and print your final result to stdout."}`, string(in.Properties["code"]))
	require.JSONEq(t, `{"type": "boolean", "description": "Discard the kernel's persistent state and start fresh before running this code."}`, string(in.Properties["reset"]))

	// A script calling read_file and search_files on the working dir.
	text, res, isErr := callCode(t, cs, map[string]any{"code": mcpScript})
	require.False(t, isErr, text)
	require.Equal(t, "[('main.py', 4), ('util.py', 1), ('util.py', 5)]\n3 True\n", text)
	require.Equal(t, "success", res.Status)
	require.Equal(t, text, res.Output)
	require.Equal(t, mode, res.Mode)
	require.Equal(t, 2, res.ToolCallsMade)
	require.Len(t, res.ToolCalls, 2)
	require.Equal(t, "search_files", res.ToolCalls[0].Tool)
	require.Equal(t, "read_file", res.ToolCalls[1].Tool)
	require.Equal(t, 1, kernelOf(t, res).ExecutionCount)

	// One kernel per connection: the second call sees the first's state.
	text, res, isErr = callCode(t, cs, map[string]any{"code": "print(len(defs), notes['total_lines'])"})
	require.False(t, isErr, text)
	require.Equal(t, "3 3\n", text)
	require.True(t, kernelOf(t, res).Reused)
	require.Equal(t, 2, kernelOf(t, res).ExecutionCount)

	// An exception: isError, the traceback in the text, the state kept.
	text, res, isErr = callCode(t, cs, map[string]any{"code": "raise ValueError('boom')"})
	require.True(t, isErr)
	require.Equal(t, "error", res.Status)
	require.Contains(t, text, "ValueError: boom")
	require.Contains(t, text, "[status: error]")
	text, _, isErr = callCode(t, cs, map[string]any{"code": "print(len(defs))"})
	require.False(t, isErr, text)
	require.Equal(t, "3\n", text)

	// Another connection has a kernel of its own.
	other, otherServed := e.connect(nil, nil)
	text, _, isErr = callCode(t, other, map[string]any{"code": "print('defs' in globals())"})
	require.False(t, isErr, text)
	require.Equal(t, "False\n", text)

	// reset starts fresh.
	text, res, isErr = callCode(t, cs, map[string]any{"code": "print(defs)", "reset": true})
	require.True(t, isErr)
	require.Contains(t, text, "NameError")
	require.Equal(t, "error", res.Status)
	require.True(t, kernelOf(t, res).StateReset)
	require.Equal(t, 1, kernelOf(t, res).ExecutionCount)

	// A model's mistakes get Hermes's messages, never the schema
	// validator's, and run nothing.
	_, _, isErr = callCode(t, cs, map[string]any{"code": "kept = 3"})
	require.False(t, isErr)
	for _, tc := range []struct {
		args map[string]any
		msg  string
	}{
		{map[string]any{"reset": true}, executor.NoCodeMessage},
		{map[string]any{"code": "  \n"}, executor.NoCodeMessage},
		{map[string]any{"code": nil}, executor.NoCodeMessage},
		{nil, executor.NoCodeMessage},
		{map[string]any{"command": "ls -la"}, "execute_code received a 'command' parameter, but it requires Python source in 'code'. Use terminal(command=...) for shell commands; for Python, retry as execute_code(code=...)."},
		{map[string]any{"code": 42}, "execute_code received a int in 'code', but it requires Python source as a string. Retry as execute_code(code=\"...\")."},
		{map[string]any{"code": []string{"print(1)"}}, "execute_code received a list in 'code', but it requires Python source as a string. Retry as execute_code(code=\"...\")."},
		{map[string]any{"code": map[string]any{"x": 1}}, "execute_code received a dict in 'code', but it requires Python source as a string. Retry as execute_code(code=\"...\")."},
	} {
		text, res, isErr := callCode(t, cs, tc.args)
		require.True(t, isErr, "%v", tc.args)
		require.Equal(t, tc.msg+"\n[status: error]", text, "%v", tc.args)
		require.Equal(t, "error", res.Status)
		require.Equal(t, tc.msg, res.Error)
		require.Equal(t, mode, res.Mode)
		require.Nil(t, res.Kernel, "nothing ran")
	}
	text, res, isErr = callCode(t, cs, map[string]any{"code": "print(kept)", "reset": 0, "command": "ignored"})
	require.False(t, isErr, text)
	require.Equal(t, "3\n", text, "the kernel is still there; reset 0 is false, as in Python")
	require.True(t, kernelOf(t, res).Reused)

	// A connection's end closes its kernel: the server side of it ends.
	require.NoError(t, other.Close())
	select {
	case <-otherServed:
	case <-time.After(time.Minute):
		t.Fatal("the server did not end the closed connection")
	}
	select {
	case <-served:
		t.Fatal("the first connection ended too")
	default:
	}
}

// TestMCPLimits: the timeout kills the kernel and says so, and the
// description states the configured limits and approvals.
func TestMCPLimits(t *testing.T) {
	e := newMCPEnv(t, config.ModeStrict, func(c *config.Config) {
		c.CodeExecution.Timeout = 2
		c.CodeExecution.MaxToolCalls = 1
		c.Approvals.Mode = config.ApprovalsOff
	})
	cs, _ := e.connect(nil, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	desc := tools.Tools[0].Description
	require.Contains(t, desc, "Limits: 2-second timeout, max 1 tool calls per call.")
	require.Contains(t, desc, "approvals are off")

	text, _, isErr := callCode(t, cs, map[string]any{"code": "x = 1"})
	require.False(t, isErr, text)
	text, res, isErr := callCode(t, cs, map[string]any{"code": "while True: pass"})
	require.True(t, isErr)
	require.Equal(t, "timeout", res.Status)
	require.Equal(t, "⏰ Cell timed out after 2s; the session kernel was killed and its state was lost. The next execute_code call starts a fresh kernel.\n[status: timeout]", text)
	require.True(t, kernelOf(t, res).Ended)
	text, _, _ = callCode(t, cs, map[string]any{"code": "from hermes_tools import read_file\nprint(read_file('notes.txt')['total_lines'])\nprint(read_file('notes.txt').get('error'))\nprint(globals().get('x'))"})
	require.Equal(t, "3\nTool call limit reached (1). No more tool calls allowed in this execution.\nNone\n", text)
}

// TestMCPApprovals: a dangerous terminal command is asked about with an
// elicitation, by multi round trip (protocol 2026-07-28) or with the
// server's own request (earlier versions); a client without elicitation
// cannot approve it, and the message says how to allow such commands.
func TestMCPApprovals(t *testing.T) {
	e := newMCPEnv(t, config.ModeStrict, nil)
	build := filepath.Join(e.workdir, "build")
	const rm = "from hermes_tools import terminal\nr = terminal('rm -rf ./build')\nprint(r.get('error'))\nprint('after')\n"

	require.NoError(t, os.MkdirAll(build, 0o755))
	rmShim(t, e.workdir)
	plain, _ := e.connect(nil, nil)
	text, res, isErr := callCode(t, plain, map[string]any{"code": rm})
	require.False(t, isErr, text)
	require.Contains(t, text, "Command blocked: `rm -rf ./build` needs approval (recursive delete)")
	require.Contains(t, text, "does not support elicitation")
	require.Contains(t, text, "approvals.mode: off")
	require.True(t, strings.HasSuffix(text, "after\n"), text)
	require.False(t, res.Blocked, "the script itself needs no approval")
	require.DirExists(t, build)

	type asked struct {
		msg string
	}
	for _, tc := range []struct {
		name     string
		protocol string // empty: the SDK's latest
		action   string
		scope    string
		removed  bool
	}{
		{"multi round trip, accepted", "", "accept", "once", true},
		{"multi round trip, declined", "", "decline", "", false},
		{"server request, accepted", "2025-11-25", "accept", "session", true},
		{"server request, cancelled", "2025-06-18", "cancel", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.MkdirAll(build, 0o755))
			asks := make(chan asked, 10)
			opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asks <- asked{req.Params.Message}
				r := &mcp.ElicitResult{Action: tc.action}
				if tc.scope != "" {
					r.Content = map[string]any{"scope": tc.scope}
				}
				return r, nil
			}}
			var sopts *mcp.ClientSessionOptions
			if tc.protocol != "" {
				sopts = &mcp.ClientSessionOptions{ProtocolVersion: tc.protocol}
			}
			cs, _ := e.connect(opts, sopts)
			want := tc.protocol
			if want == "" {
				want = mcpserver.MRTRVersion
			}
			require.Equal(t, want, cs.InitializeResult().ProtocolVersion)
			code := rm + "print(terminal('echo still here')['output'].strip())\n"
			text, res, isErr := callCode(t, cs, map[string]any{"code": code})
			require.False(t, isErr, text)
			require.Equal(t, "success", res.Status)
			require.Len(t, asks, 1, "one question, for the dangerous command only")
			q := <-asks
			require.Contains(t, q.msg, "rm -rf ./build")
			require.Contains(t, q.msg, "recursive delete")
			if tc.removed {
				require.Equal(t, "None\nafter\nstill here\n", text)
				require.NoDirExists(t, build)
			} else {
				require.Contains(t, text, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and was denied.")
				require.DirExists(t, build)
			}
			if tc.scope == "session" {
				// Remembered for this connection's session.
				require.NoError(t, os.MkdirAll(build, 0o755))
				text, _, _ = callCode(t, cs, map[string]any{"code": rm})
				require.Equal(t, "None\nafter\n", text)
				require.Empty(t, asks)
			}
			if tc.protocol == "" && tc.action == "accept" {
				// Two questions in one call, each its own round trip.
				require.NoError(t, os.MkdirAll(filepath.Join(e.workdir, "dist"), 0o755))
				require.NoError(t, os.MkdirAll(build, 0o755))
				two := "from hermes_tools import terminal\nprint(terminal('rm -rf ./build').get('error'))\nprint(terminal('rm -rf ./dist').get('error'))\n"
				text, _, _ = callCode(t, cs, map[string]any{"code": two})
				require.Equal(t, "None\nNone\n", text)
				require.Len(t, asks, 2)
				require.NoDirExists(t, build)
				require.NoDirExists(t, filepath.Join(e.workdir, "dist"))
			}
		})
	}
}

// TestMCPCommand runs `mcp` as a process (the test binary acting as the
// CLI) over stdin/stdout with the SDK's command transport.
func TestMCPCommand(t *testing.T) {
	t.Parallel()
	home, tmp, workdir := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(workdir, "notes.txt"), []byte("one\ntwo\n"), 0o644))
	conf := filepath.Join(home, "config.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("code_execution:\n  warm_pool: 0\n"), 0o600))
	cmd := exec.Command(os.Args[0], "mcp", "--mode", "strict", "--workdir", workdir, "--config", conf, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "HERMES_HOME="+home, "TMPDIR="+tmp)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "hermes-test", Version: "v0.0.1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	require.Contains(t, tools.Tools[0].Description, "inside a WebAssembly sandbox")
	text, res, isErr := callCode(t, cs, map[string]any{"code": "from hermes_tools import read_file\nlines = read_file('notes.txt')['total_lines']\nprint(lines)"})
	require.False(t, isErr, text)
	require.Equal(t, "2\n", text)
	require.Equal(t, "strict", res.Mode)
	text, _, _ = callCode(t, cs, map[string]any{"code": "print(lines * 21)"})
	require.Equal(t, "42\n", text)
	require.NoError(t, cs.Close())
	require.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "hermes-wasm-exec mcp: serving MCP on stdin/stdout (tool execute_code, strict mode, working dir "+workdir+")")
	require.Contains(t, stderr.String(), "debug: mcp: a connection closed: session mcp-")
	left, _ := os.ReadDir(tmp)
	require.Empty(t, left, "temp dirs left behind")
}

func TestMCPUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "extra"}, "unexpected argument"},
		{[]string{"mcp", "--mode", "sandbox"}, `--mode "sandbox": give strict or project`},
		{[]string{"mcp", "--log-level", "trace"}, `--log-level "trace": give info or debug`},
		{[]string{"mcp", "--workdir", filepath.Join(t.TempDir(), "missing")}, "--workdir"},
		{[]string{"mcp", "--bogus"}, "unknown flag --bogus"},
		{[]string{"mcp", "--skill", filepath.Join(t.TempDir(), "missing")}, "--skill: skill "},
		{[]string{"mcp", "--skill", t.TempDir()}, "a skill's directory holds its SKILL.md"},
	} {
		code, stdout, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir()}, "", tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, tc.want, tc.args)
	}
	// End of input ends the server, with exit code 0 and nothing but the
	// protocol on stdout.
	code, stdout, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir()}, "", "mcp", "--mode", "strict")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stdout)
	var out strings.Builder
	require.Equal(t, 0, Run([]string{"help"}, nil, &out, &out))
	require.Contains(t, out.String(), "mcp [flags]")
	out.Reset()
	require.Equal(t, 0, Run([]string{"help", "mcp"}, nil, &out, &out))
	require.Contains(t, out.String(), "usage: hermes-wasm-exec mcp [flags]")
	require.Contains(t, out.String(), "--drain-timeout DURATION")
}

// TestMCPSkills: --skill (a SKILL.md or its directory) and --skill-env
// pass a skill's variables through to scripts and terminal(), in both
// modes; host-managed credentials are refused with a warning.
func TestMCPSkills(t *testing.T) {
	t.Parallel()
	skill := filepath.Join(t.TempDir(), "gh-skill")
	require.NoError(t, os.Mkdir(skill, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: gh-skill\nrequired_environment_variables:\n  - name: SKILL_TOKEN\n    prompt: a token\n  - OPENAI_API_KEY\n---\nbody\n"), 0o600))
	for _, mode := range []string{config.ModeStrict, config.ModeProject} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			home, tmp, workdir := t.TempDir(), t.TempDir(), t.TempDir()
			conf := filepath.Join(home, "config.yaml")
			require.NoError(t, os.WriteFile(conf, []byte("code_execution:\n  warm_pool: 0\n"), 0o600))
			cmd := exec.Command(os.Args[0], "mcp", "--mode", mode, "--workdir", workdir, "--config", conf,
				"--skill", skill, "--skill-env", "OTHER_VAR, ANTHROPIC_API_KEY", "--skill-env", "THIRD_VAR")
			cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "HERMES_HOME="+home, "TMPDIR="+tmp,
				"SKILL_TOKEN=tok-1", "OTHER_VAR_TOKEN=no", "OTHER_VAR=o-1", "THIRD_VAR=3", "OPENAI_API_KEY=sk-host", "ANTHROPIC_API_KEY=sk-ant")
			var stderr syncBuffer
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "hermes-test", Version: "v0.0.1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
			require.NoError(t, err, stderr.String())
			names := []string{"SKILL_TOKEN", "OTHER_VAR", "THIRD_VAR", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OTHER_VAR_TOKEN"}
			text, _, isErr := callCode(t, cs, map[string]any{"code": `import os, json
from hermes_tools import terminal
names = ["SKILL_TOKEN", "OTHER_VAR", "THIRD_VAR", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OTHER_VAR_TOKEN"]
print(json.dumps([os.environ.get(n) for n in names]))
print(terminal("` + echoVars(names...) + `")["output"].strip())`})
			require.False(t, isErr, text)
			if mode == config.ModeProject && testenv.UnderWine() {
				text = withoutFallbackWarning(t, text)
			}
			require.Equal(t, `["tok-1", "o-1", "3", null, null, null]`+"\n"+echoedVars(names, map[string]string{"SKILL_TOKEN": "tok-1", "OTHER_VAR": "o-1", "THIRD_VAR": "3"})+"\n", text)
			require.NoError(t, cs.Close())
			require.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
			// One warning for the refused names, the executor's (mcp no longer adds its own).
			require.Equal(t, 1, strings.Count(stderr.String(), "refus"), stderr.String())
			require.Contains(t, stderr.String(), "hermes-wasm-exec: warning: execute_code: refusing to pass through host-managed credentials [OPENAI_API_KEY ANTHROPIC_API_KEY] registered by a skill\n")
			left, _ := os.ReadDir(tmp)
			require.Empty(t, left, "temp dirs left behind")
		})
	}
}
