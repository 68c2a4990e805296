package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// Hermes's texts (tools/code_execution_tool.py), verbatim.
const (
	hermesNoCode     = "No code provided. execute_code requires a non-empty 'code' parameter containing Python source. To run shell commands, use terminal(command=...) instead."
	hermesCommand    = "execute_code received a 'command' parameter, but it requires Python source in 'code'. Use terminal(command=...) for shell commands; for Python, retry as execute_code(code=...)."
	hermesIntCode    = "execute_code received a int in 'code', but it requires Python source as a string. Retry as execute_code(code=\"...\")."
	hermesCodeParam  = "Python code to execute. Import tools with `from hermes_tools import web_search, terminal, ...` and print your final result to stdout."
	hermesResetParam = "Discard the kernel's persistent state and start fresh before running this code."
)

func TestArgumentMessages(t *testing.T) {
	require.Equal(t, hermesNoCode, NoCodeMessage)
	require.Equal(t, hermesCommand, CommandNotCodeMessage)
	require.Equal(t, hermesIntCode, NonStringCodeMessage("int"))
}

func TestCodeArgument(t *testing.T) {
	for _, tc := range []struct {
		args, code, problem string
	}{
		{`{"code": "print(1)"}`, "print(1)", ""},
		{`{"code": "print(1)", "command": "ls"}`, "print(1)", ""},
		{`{"command": "ls -la"}`, "", hermesCommand},
		{`{"command": null}`, "", hermesCommand},
		{`{"code": null, "command": "ls"}`, "", ""}, // Hermes: "code" is present, so None → empty
		{`{}`, "", ""},
		{`{"reset": true}`, "", ""},
		{`{"code": 42}`, "", hermesIntCode},
		{`{"code": -7}`, "", hermesIntCode},
		{`{"code": 4.5}`, "", NonStringCodeMessage("float")},
		{`{"code": 1e3}`, "", NonStringCodeMessage("float")},
		{`{"code": true}`, "", NonStringCodeMessage("bool")},
		{`{"code": ["print(1)"]}`, "", NonStringCodeMessage("list")},
		{`{"code": {"src": "print(1)"}}`, "", NonStringCodeMessage("dict")},
	} {
		var args map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(tc.args), &args), tc.args)
		code, problem := CodeArgument(args)
		require.Equal(t, tc.code, code, tc.args)
		require.Equal(t, tc.problem, problem, tc.args)
	}
	// A map built in code may hold an empty value (no JSON decoder makes
	// one): it reads as no code, and never panics.
	code, problem := CodeArgument(map[string]json.RawMessage{"code": nil, "command": json.RawMessage(`"ls"`)})
	require.Equal(t, "", code)
	require.Equal(t, "", problem)
	code, problem = CodeArgument(map[string]json.RawMessage{"code": json.RawMessage(" ")})
	require.Equal(t, "", code)
	require.Equal(t, "", problem)
}

// Execute answers an empty script with Hermes's message, before anything
// starts: no kernel for a session call, no approval asked.
func TestExecuteEmptyCode(t *testing.T) {
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	asked := false
	ex := New(Options{Config: &cfg, HermesHome: t.TempDir(), Environ: []string{},
		Approver: ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) { asked = true; return Decision{}, nil })})
	defer ex.Close(context.Background())
	for _, req := range []Request{
		{Code: ""},
		{Code: "  \n\t ", Session: "s", Kind: config.KindGateway},
		{Code: "", Mode: "project", Session: "s"},
	} {
		res, err := ex.Execute(context.Background(), req)
		require.NoError(t, err)
		require.Equal(t, config.StatusError, res.Status)
		require.Equal(t, hermesNoCode, res.Error)
		require.Equal(t, hermesNoCode, res.Output)
		require.Equal(t, []ToolCall{}, res.ToolCalls)
		want := cmpOr(req.Mode, config.ModeStrict)
		require.Equal(t, want, res.Mode)
		require.Nil(t, res.Kernel)
	}
	require.False(t, asked, "nothing to approve")
	require.Zero(t, ex.Stats().Kernels, "no kernel started")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// hermesProjectDescription is the project-mode description with the
// defaults and all seven tools: Hermes's text, with this executor's tool
// signatures and interpreter choice.
const hermesProjectDescription = "Run Python that calls Hermes tools programmatically. Use when you need 3+ tool calls with logic between them: filtering/reducing large outputs before they enter context, branching, or loops (N pages/files, retry on failure). Use normal tool calls for single calls (don't wrap a single terminal command in execute_code), results you must reason over in full, or anything needing user interaction.\n\n" +
	"Calls run in a persistent session kernel: variables, imports, and loaded data survive across execute_code calls, so build on earlier work instead of re-loading it. A timed-out or interrupted call loses that state.\n\n" +
	"Available via `from hermes_tools import ...`:\n\n" +
	"  web_search(query: str, limit: int = 5) -> dict\n" +
	"    Returns {\"data\": {\"web\": [{\"url\", \"title\", \"description\"}, ...]}}\n" +
	"  web_extract(urls: list, char_limit: int = None) -> dict\n" +
	"    Returns {\"results\": [{\"url\", \"title\", \"content\", \"error\"}, ...]} where content is markdown.\n" +
	"    No LLM summarization. Pages over char_limit (default 15000) are head+tail truncated; full text stored on disk (path in the content footer).\n" +
	"  read_file(path: str, offset: int = 1, limit: int = 500) -> dict\n" +
	"    Lines are 1-indexed. Returns {\"content\": \"...\", \"total_lines\": N}\n" +
	"  write_file(path: str, content: str) -> dict\n" +
	"    Always overwrites the entire file.\n" +
	"  search_files(pattern: str, target: str = \"content\", path: str = \".\", file_glob: str = None, limit: int = 50, offset: int = 0, output_mode: str = \"content\", context: int = 0) -> dict\n" +
	"    target: \"content\" (search inside files) or \"files\" (find files by name). Returns {\"matches\": [...]}\n" +
	"  patch(path: str = None, old_string: str = None, new_string: str = None, replace_all: bool = False, mode: str = \"replace\", patch: str = None) -> dict\n" +
	"    Replaces old_string with new_string in the file; mode=\"patch\" applies a V4A patch instead.\n" +
	"  terminal(command: str, timeout: int = None, workdir: str = None) -> dict\n" +
	"    Foreground only (no background/pty). Returns {\"output\": \"...\", \"exit_code\": N}\n\n" +
	"Limits: 5-minute timeout, max 50 tool calls per call. Stdout over 50KB shows head/tail inline; the FULL text is auto-saved to a file whose path rides in the result.\n\n" +
	"Scripts run in the session's working directory. Interpreter: the project's activated venv/conda python when one is active (VIRTUAL_ENV/CONDA_PREFIX — matches terminal()); otherwise python3 (or python) on PATH, and when there is none, the embedded WASI CPython (standard library only, no processes); check `import x` before relying on project packages.\n\n" +
	"Helpers require imports: `from hermes_tools import json_parse, shell_quote, retry`. json_parse(text) — tolerant json.loads for terminal() output; shell_quote(s) — shlex.quote for dynamic shell args; retry(fn, max_attempts=3, delay=2) — exponential backoff."

const hermesStrictNote = "Scripts run in their own temp dir, not the session's CWD, inside a WebAssembly sandbox (CPython 3.13, standard library only): the script itself cannot open host files or the network — reach them through the tools above, which act on the session's working directory (subprocess and os.system run their commands through terminal())."

func TestExecuteCodeSchema(t *testing.T) {
	cfg := config.Default()
	s := ExecuteCodeSchema(cfg, config.ModeProject, nil)
	require.Equal(t, "execute_code", s.Name)
	require.Equal(t, hermesProjectDescription, s.Description)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{"name": "execute_code", "description": `+string(must(json.Marshal(hermesProjectDescription)))+`, "parameters": {
		"type": "object",
		"properties": {
			"code": {"type": "string", "description": `+string(must(json.Marshal(hermesCodeParam)))+`},
			"reset": {"type": "boolean", "description": `+string(must(json.Marshal(hermesResetParam)))+`}
		},
		"required": ["code"]}}`, string(b))

	// Strict mode: its own working-dir sentence, true about the sandbox;
	// the mode defaults to the configured one.
	cfg.CodeExecution.Mode = config.ModeStrict
	strict := ExecuteCodeSchema(cfg, "", nil).Description
	require.Equal(t, strings.Replace(hermesProjectDescription, projectWorkdirNote, hermesStrictNote, 1), strict)

	// Only the enabled tools are listed; the import example prefers
	// web_search and terminal, else the first two enabled by name.
	s = ExecuteCodeSchema(cfg, "", []string{"terminal", "read_file", "vision_analyze"})
	require.Contains(t, s.Description, "  read_file(path: str, offset: int = 1, limit: int = 500) -> dict\n")
	require.Contains(t, s.Description, "  terminal(command: str")
	require.NotContains(t, s.Description, "web_search(")
	require.NotContains(t, s.Description, "vision_analyze")
	require.Equal(t, "Python code to execute. Import tools with `from hermes_tools import terminal, ...` and print your final result to stdout.", param(s, "code"))
	s = ExecuteCodeSchema(cfg, "", []string{"write_file", "read_file", "patch"})
	require.Equal(t, "Python code to execute. Import tools with `from hermes_tools import patch, read_file, ...` and print your final result to stdout.", param(s, "code"))
	s = ExecuteCodeSchema(cfg, "", []string{"delegate_task"})
	require.Contains(t, s.Description, "(no tools are enabled for this session: hermes_tools has only the helpers)")
	require.Equal(t, "Python code to execute. Import tools with `from hermes_tools import ...` and print your final result to stdout.", param(s, "code"))

	// The limits are the configured ones.
	cfg.CodeExecution.Timeout = 90
	cfg.CodeExecution.MaxToolCalls = 7
	cfg.Web.Extract.CharLimit = 4000
	d := ExecuteCodeSchema(cfg, "", nil).Description
	require.Contains(t, d, "Limits: 90-second timeout, max 7 tool calls per call. Stdout over 50KB")
	require.Contains(t, d, "Pages over char_limit (default 4000)")
	cfg.CodeExecution.Timeout = 600
	cfg.CodeExecution.MaxToolCalls = 0
	// 0 allows no tool call at all (the broker refuses the first): the
	// model must not read "no limit".
	require.Contains(t, ExecuteCodeSchema(cfg, "", nil).Description, "Limits: 10-minute timeout, no tool calls allowed (code_execution.max_tool_calls is 0).")
}

func param(s ToolSchema, name string) string {
	return s.Parameters["properties"].(map[string]any)[name].(map[string]any)["description"].(string)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// The sandboxed project mode's description says what its scripts see and
// what is refused; strict mode ignores the setting.
func TestExecuteCodeSchemaSandboxed(t *testing.T) {
	cfg := config.Default()
	cfg.CodeExecution.Sandbox = config.SandboxWasm
	require.Contains(t, ExecuteCodeSchema(cfg, config.ModeProject, nil).Description, "\n\n"+sandboxWorkdirNote+"\n\n")
	require.Contains(t, ExecuteCodeSchema(cfg, config.ModeStrict, nil).Description, "\n\n"+hermesStrictNote+"\n\n")
}

// Request.Kind is read as the config's enums are (any case, trimmed); an
// unknown kind is an error that names the kinds, before any approval is
// asked or anything runs.
func TestExecuteKind(t *testing.T) {
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	asked := 0
	ex := New(Options{Config: &cfg, HermesHome: t.TempDir(), Environ: []string{},
		Approver: ApproverFunc(func(context.Context, ApprovalRequest) (Decision, error) {
			asked++
			return Decision{Approved: true}, nil
		})})
	defer ex.Close(context.Background())

	res, err := ex.Execute(context.Background(), Request{Code: "print(1)", Kind: " Gateway", Workdir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, "1\n", res.Output)
	require.Equal(t, 1, asked, "a gateway script is approved as a whole")

	res, err = ex.Execute(context.Background(), Request{Code: "print(1)", Kind: "tui", Workdir: t.TempDir()})
	require.Error(t, err)
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, `Request.Kind must be one of cli, gateway, automation, not "tui"; did you mean "cli"?`, res.Error)
	require.Equal(t, 1, asked, "not asked")
}
