package executor

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// The execute_code tool as a model sees it: its argument errors and its
// schema, with Hermes's texts (tools/code_execution_tool.py), so that a
// model that learnt Hermes's tool meets the same words here.

// Hermes's argument errors, verbatim.
const (
	// NoCodeMessage is the error of a call whose code is missing, empty or
	// only whitespace (Hermes's execute_code).
	NoCodeMessage = engine.NoCodeMessage
	// CommandNotCodeMessage is the error of a call that has a "command"
	// argument and no "code": a terminal call sent to execute_code
	// (Hermes's _execute_code_handler).
	CommandNotCodeMessage = "execute_code received a 'command' parameter, but it requires Python source in 'code'. Use terminal(command=...) for shell commands; for Python, retry as execute_code(code=...)."
)

// NonStringCodeMessage is the error of a call whose code is not a string;
// typeName is the Python type of the value (int, float, bool, list,
// dict), as Hermes's _execute_code_handler words it.
func NonStringCodeMessage(typeName string) string {
	return "execute_code received a " + typeName + " in 'code', but it requires Python source as a string. Retry as execute_code(code=\"...\")."
}

// CodeArgument reads the code of an execute_code call from the arguments
// a model sent (a JSON object), as Hermes's handler does: an argument
// "command" without "code" is a misdirected terminal call, and a code that
// is not a string (nor null) is refused; problem is then Hermes's message
// for it and code is "". A missing, null (or, in a map built in code,
// empty) code is "": [Executor.Execute]
// answers an empty code with [NoCodeMessage]. Other arguments are not
// looked at.
func CodeArgument(args map[string]json.RawMessage) (code, problem string) {
	raw, hasCode := args["code"]
	if _, hasCommand := args["command"]; !hasCode && hasCommand {
		return "", CommandNotCodeMessage
	}
	raw = bytes.TrimSpace(raw)
	if !hasCode || len(raw) == 0 || string(raw) == "null" {
		return "", ""
	}
	if json.Unmarshal(raw, &code) == nil {
		return code, ""
	}
	return "", NonStringCodeMessage(jsonTypeName(raw))
}

// jsonTypeName is the Python type json.loads gives the JSON value raw.
func jsonTypeName(raw json.RawMessage) string {
	switch raw[0] {
	case '[':
		return "list"
	case '{':
		return "dict"
	case 't', 'f':
		return "bool"
	case '"':
		return "str"
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "float"
	}
	return "int"
}

// ToolSchema is the execute_code tool offered to a model, in the shape of
// Hermes's build_execute_code_schema: name, description and the JSON
// schema of its parameters.
type ToolSchema struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// toolDocs is the second line of each tool's entry in the description
// (Hermes's _TOOL_DOC_LINES, where they hold for these tools); the first
// is the tool's signature, from the generated module's own.
var toolDocs = map[string]string{
	"web_search":   `Returns {"data": {"web": [{"url", "title", "description"}, ...]}}`,
	"web_extract":  `Returns {"results": [{"url", "title", "content", "error"}, ...]} where content is markdown.` + "\n    " + `No LLM summarization. Pages over char_limit (default %d) are head+tail truncated; full text stored on disk (path in the content footer).`,
	"read_file":    `Lines are 1-indexed. Returns {"content": "...", "total_lines": N}`,
	"write_file":   `Always overwrites the entire file.`,
	"search_files": `target: "content" (search inside files) or "files" (find files by name). Returns {"matches": [...]}`,
	"patch":        `Replaces old_string with new_string in the file; mode="patch" applies a V4A patch instead.`,
	"terminal":     `Foreground only (no background/pty). Returns {"output": "...", "exit_code": N}`,
}

// Working-dir sentences of the description, by mode. Hermes's strict
// sentence says the script can open files outside its temp dir by
// absolute path; here the script runs in a WebAssembly sandbox and
// reaches the host only through the tools, so the sentence says that.
const (
	strictWorkdirNote  = "Scripts run in their own temp dir, not the session's CWD, inside a WebAssembly sandbox (CPython 3.13, standard library only): the script itself cannot open host files or the network — reach them through the tools above, which act on the session's working directory (subprocess and os.system run their commands through terminal())."
	sandboxWorkdirNote = "Scripts run in the session's working directory, at its own path, inside a WebAssembly sandbox (CPython 3.13: the standard library and the project's pure-Python packages): project files read and write as usual, nothing else of the host is there, no network, and .env and credential files are refused (PermissionError); subprocess and os.system run their commands through terminal()."
	projectWorkdirNote = "Scripts run in the session's working directory. Interpreter: the project's activated venv/conda python when one is active (VIRTUAL_ENV/CONDA_PREFIX — matches terminal()); otherwise python3 (or python) on PATH, and when there is none, the embedded WASI CPython (standard library only, no processes); check `import x` before relying on project packages."
)

// ExecuteCodeSchema builds execute_code's schema by Hermes's rules
// (build_execute_code_schema): the description lists only the enabled
// tools (tools as in Request.Tools: nil means all seven, other names are
// dropped), its working-dir sentence is the mode's ("" means cfg's
// code_execution.mode), its limits are cfg's (a 300 s timeout reads
// "5-minute timeout"), and the code parameter's import example prefers
// web_search and terminal. Fields of cfg left zero read as the executor
// reads them (see Options.Config): a zero timeout is the default; a zero
// max_tool_calls allows no tool call, and the description says so.
func ExecuteCodeSchema(cfg config.Config, mode string, tools []string) ToolSchema {
	cfg = config.WithDefaults(cfg)
	mode, _ = config.NormalizeMode(cmp.Or(mode, cfg.CodeExecution.Mode))
	enabled := engine.ToolSet(tools)

	var lines []string
	for _, sig := range engine.Signatures() {
		name, _, _ := strings.Cut(sig, "(")
		if !slices.Contains(enabled, name) {
			continue
		}
		doc := toolDocs[name]
		if name == "web_extract" {
			doc = fmt.Sprintf(doc, cfg.Web.Extract.CharLimit)
		}
		lines = append(lines, "  "+sig+" -> dict\n    "+doc)
	}
	var imports []string
	for _, n := range []string{"web_search", "terminal"} {
		if slices.Contains(enabled, n) {
			imports = append(imports, n)
		}
	}
	if len(imports) == 0 {
		sorted := slices.Sorted(slices.Values(enabled))
		imports = sorted[:min(2, len(sorted))]
	}
	importStr := "..."
	if len(imports) > 0 {
		importStr = strings.Join(imports, ", ") + ", ..."
	}
	workdirNote := projectWorkdirNote
	switch sandbox, _ := config.NormalizeSandbox(cfg.CodeExecution.Sandbox); {
	case mode == config.ModeStrict:
		workdirNote = strictWorkdirNote
	case sandbox == config.SandboxWasm:
		workdirNote = sandboxWorkdirNote
	}
	ce := cfg.CodeExecution
	calls := fmt.Sprintf("max %d tool calls per call", ce.MaxToolCalls)
	if ce.MaxToolCalls <= 0 {
		// 0 allows none (the broker refuses every call), as for the executor.
		calls = "no tool calls allowed (code_execution.max_tool_calls is 0)"
	}
	toolLines := strings.Join(lines, "\n")
	if toolLines == "" {
		toolLines = "  (no tools are enabled for this session: hermes_tools has only the helpers)"
	}
	description := "Run Python that calls Hermes tools programmatically. Use when you " +
		"need 3+ tool calls with logic between them: filtering/reducing " +
		"large outputs before they enter context, branching, or loops " +
		"(N pages/files, retry on failure). Use normal tool calls for " +
		"single calls (don't wrap a single terminal command in execute_code), " +
		"results you must reason over in full, or anything needing user interaction.\n\n" +
		"Calls run in a persistent session kernel: variables, imports, and " +
		"loaded data survive across execute_code calls, so build on earlier " +
		"work instead of re-loading it. A timed-out or interrupted call loses that state.\n\n" +
		"Available via `from hermes_tools import ...`:\n\n" +
		toolLines + "\n\n" +
		"Limits: " + durationPhrase(time.Duration(ce.Timeout)*time.Second) + " timeout, " + calls + ". Stdout over " +
		fmt.Sprintf("%dKB", engine.StdoutLimits("").Max/1000) + " shows head/tail inline; the FULL text is auto-saved to a file whose path rides in the result.\n\n" +
		workdirNote + "\n\n" +
		"Helpers require imports: `from hermes_tools import json_parse, shell_quote, retry`. " +
		"json_parse(text) — tolerant " +
		"json.loads for terminal() output; shell_quote(s) — shlex.quote for " +
		"dynamic shell args; retry(fn, max_attempts=3, delay=2) — exponential backoff."
	return ToolSchema{
		Name:        "execute_code",
		Description: description,
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"code": map[string]any{"type": "string", "description": "Python code to execute. Import tools with " +
					"`from hermes_tools import " + importStr + "` " +
					"and print your final result to stdout."},
				"reset": map[string]any{"type": "boolean", "description": "Discard the kernel's persistent state and start fresh before running this code."},
			},
			"required": []string{"code"},
		},
	}
}

// durationPhrase words a timeout as Hermes does ("5-minute"): whole
// minutes in minutes, anything else in seconds.
func durationPhrase(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d-minute", int(d/time.Minute))
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".") + "-second"
}
