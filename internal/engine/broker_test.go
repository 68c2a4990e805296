package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/stretchr/testify/require"
)

func okTool(_ context.Context, tool string, args json.RawMessage) map[string]any {
	switch tool {
	case "terminal":
		return map[string]any{"output": "", "exit_code": 0, "error": nil}
	case "patch":
		return map[string]any{"success": false, "error": "Could not find a match for old_string in the file"}
	case "read_file":
		panic("disk on fire")
	}
	return map[string]any{"tool": tool, "args": string(args)}
}

func decode(t *testing.T, line []byte) map[string]any {
	t.Helper()
	require.True(t, len(line) > 0 && line[len(line)-1] == '\n', "a response is one line")
	var m map[string]any
	require.NoError(t, json.Unmarshal(line, &m))
	return m
}

func TestBrokerBudgetAndLog(t *testing.T) {
	b := NewBroker(okTool, 2, nil)
	ctx := context.Background()
	require.Nil(t, decode(t, b.Serve(ctx, []byte(`{"tool":"terminal","args":{"command":"ls"}}`)))["error"])
	require.Equal(t, "Could not find a match for old_string in the file", decode(t, b.Serve(ctx, []byte(`{"tool":"patch","args":{}}`)))["error"])
	for range 3 {
		require.Equal(t, "Tool call limit reached (2). No more tool calls allowed in this execution.",
			decode(t, b.Serve(ctx, []byte(`{"tool":"terminal","args":{}}`)))["error"])
	}
	made, calls := b.Made()
	require.Equal(t, 2, made)
	require.Len(t, calls, 2)
	require.Equal(t, "terminal", calls[0].Tool)
	require.True(t, calls[0].OK)
	require.False(t, calls[1].OK)
}

func TestBrokerRefusals(t *testing.T) {
	// Hermes's enabled_tools hold tools that are not script-callable: they
	// are dropped, never enabled.
	b := NewBroker(okTool, 10, []string{"web_search", "vision_analyze", "read_file", "delegate_task"})
	require.Equal(t, []string{"web_search", "read_file"}, b.Enabled())
	ctx := context.Background()
	for line, want := range map[string]string{
		// Hermes's text (tools/code_execution_rpc.py), for an unknown tool
		// and for one of the seven that is not enabled alike.
		`{"tool":"execute_code","args":{}}`:  "Tool 'execute_code' is not available in execute_code. Available: read_file, web_search",
		`{"tool":"delegate_task","args":{}}`: "Tool 'delegate_task' is not available in execute_code. Available: read_file, web_search",
		`{"tool":"terminal","args":{}}`:      "Tool 'terminal' is not available in execute_code. Available: read_file, web_search",
		`not json`:                           "Malformed tool request",
		`{"tool":"read_file","args":{}}`:     "Tool read_file failed internally: disk on fire",
		`{"tool": 5}`:                        "Malformed tool request",
		`{"op":"exit","exit":{"kind":"boom"`: "Malformed tool request",
	} {
		got := decode(t, b.Serve(ctx, []byte(line)))["error"]
		if strings.HasPrefix(want, "Tool '") {
			require.Equal(t, want, got, line)
		} else {
			require.Contains(t, got, want, line)
		}
	}
	require.Equal(t, "Tool 'terminal' is not available in execute_code. Available: none",
		decode(t, NewBroker(okTool, 10, []string{"vision_analyze"}).Serve(ctx, []byte(`{"tool":"terminal","args":{}}`)))["error"],
		"a list with none of the seven enables none")
	made, _ := b.Made()
	require.Equal(t, 1, made, "refused calls do not count; the panicking call does")
	require.Nil(t, b.Report())
	require.Equal(t, true, decode(t, b.Serve(ctx, []byte(`{"op":"exit","exit":{"kind":"exception","type":"ValueError","message":"x","traceback":"tb"}}`)))["ok"])
	require.Equal(t, "ValueError", b.Report().Type)
}

func TestBrokerConcurrent(t *testing.T) {
	b := NewBroker(func(_ context.Context, tool string, args json.RawMessage) map[string]any {
		return map[string]any{"echo": string(args)}
	}, 1000, nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			args := strings.Repeat("x", i)
			res := b.Call(context.Background(), "web_search", json.RawMessage(`"`+args+`"`))
			require.Equal(t, `"`+args+`"`, res["echo"])
		})
	}
	wg.Wait()
	made, calls := b.Made()
	require.Equal(t, 50, made)
	require.Len(t, calls, 50)
}

func FuzzBrokerServe(f *testing.F) {
	for _, s := range []string{`{"tool":"terminal","args":{"command":"ls"}}`, `{"op":"exit","exit":{"kind":"ok"}}`, `{`, `[]`, `null`, `{"tool":null}`} {
		f.Add([]byte(s))
	}
	b := NewBroker(okTool, 1<<30, nil)
	f.Fuzz(func(t *testing.T, line []byte) {
		out := b.Serve(context.Background(), line)
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("response is not JSON: %q", out)
		}
	})
}

func TestStubSignatures(t *testing.T) {
	src := GenerateStub(StubOptions{HostCall: true})
	for _, sig := range []string{
		"def web_search(query: str, limit: int = 5) -> dict:",
		"def web_extract(urls: list, char_limit: int = None) -> dict:",
		"def read_file(path: str, offset: int = 1, limit: int = 500) -> dict:",
		"def write_file(path: str, content: str) -> dict:",
		`def search_files(pattern: str, target: str = "content", path: str = ".", file_glob: str = None, limit: int = 50, offset: int = 0, output_mode: str = "content", context: int = 0) -> dict:`,
		`def patch(path: str = None, old_string: str = None, new_string: str = None, replace_all: bool = False, mode: str = "replace", patch: str = None) -> dict:`,
		"def terminal(command: str, timeout: int = None, workdir: str = None) -> dict:",
		"def json_parse(text):",
		"def shell_quote(s):",
		"def retry(fn, max_attempts=3, delay=2):",
		"_roundtrip = _hermes_host.call",
	} {
		require.Contains(t, src, sig)
	}
	require.NotContains(t, src, "execute_code")
	require.NotContains(t, src, "delegate_task")
	require.Len(t, Signatures(), 7)
	for i, spec := range toolSpecs {
		require.Equal(t, toolNames[i], spec.name, "stubs follow the whitelist")
	}
}

func TestToolSet(t *testing.T) {
	require.Equal(t, toolNames, ToolSet(nil), "nil: all seven")
	require.Equal(t, []string{"web_search", "read_file", "terminal"},
		ToolSet([]string{"terminal", "vision_analyze", "read_file", "browser_navigate", "web_search", "terminal", "delegate_task"}),
		"intersected with the seven, in their order, once each")
	require.Equal(t, []string{}, ToolSet([]string{"vision_analyze"}))
	require.Equal(t, []string{}, ToolSet([]string{}))
	require.Equal(t, "", ToolsInject(nil))
	require.Equal(t, "", ToolsInject(append([]string{"image_generate"}, toolNames...)), "all seven need no variable")
	require.Equal(t, "HERMES_RPC_TOOLS=read_file,terminal", ToolsInject([]string{"terminal", "read_file", "clarify"}))
	require.Equal(t, "HERMES_RPC_TOOLS=", ToolsInject([]string{}))
}

func TestHint(t *testing.T) {
	exc := func(typ, msg string) *ExitReport { return &ExitReport{Kind: "exception", Type: typ, Message: msg} }
	// Hermes's texts (tools/code_execution_tool.py, _missing_hermes_tools_import_hint).
	require.Equal(t, "'delegate_task' is not available inside the execute_code sandbox. Importable tools here: patch, read_file, search_files, terminal, web_extract, web_search, write_file. For anything else, use the normal tool call instead of execute_code.",
		failureHint(config.ModeStrict, exc("ImportError", "cannot import name 'delegate_task' from 'hermes_tools' (/hermes_tools.py)"), nil))
	require.Equal(t, "Import helpers with `from hermes_tools import retry`. If that import failed, the generated module may be stale or another hermes_tools may be first on sys.path. Check hermes_tools.__file__ and retry with reset=true.",
		failureHint(config.ModeProject, exc("ImportError", "cannot import name 'retry' from 'hermes_tools' (/tmp/x/hermes_tools.py)"), nil))
	// Only the enabled tools are importable (the broker's set: a name that
	// is not one of the seven is dropped); the attribute form gets the same hint.
	enabled := NewBroker(nil, 0, []string{"terminal", "web_search", "vision_analyze"}).Enabled()
	require.Equal(t, "'read_file' is not available inside the execute_code sandbox. Importable tools here: terminal, web_search. For anything else, use the normal tool call instead of execute_code.",
		failureHint(config.ModeStrict, exc("ImportError", "cannot import name 'read_file' from 'hermes_tools' (/hermes_tools.py)"), enabled))
	require.Equal(t, "'read_file' is not available inside the execute_code sandbox. Importable tools here: terminal, web_search. For anything else, use the normal tool call instead of execute_code.",
		failureHint(config.ModeProject, exc("AttributeError", "module 'hermes_tools' has no attribute 'read_file'"), enabled))
	require.Contains(t, failureHint(config.ModeStrict, exc("ImportError", "cannot import name 'terminal' from 'hermes_tools' (/hermes_tools.py)"), []string{}), "Importable tools here: none.")
	require.Contains(t, failureHint(config.ModeStrict, exc("ModuleNotFoundError", "No module named 'pandas'"), nil), "strict mode")
	require.Contains(t, failureHint(config.ModeProject, exc("ModuleNotFoundError", "No module named 'pandas'"), nil), "not installed")
	// A module PEP 594 removed in 3.13: what to use instead, in both WASI
	// runs; a host python may be older, so project mode keeps its hint.
	require.Equal(t, "Module imghdr was removed from Python's standard library in 3.13 (PEP 594), and the WASI interpreter is CPython 3.13: read the file's first bytes and compare them with the format's signature (b'\\x89PNG', b'\\xff\\xd8\\xff' for JPEG, b'GIF8').",
		failureHint(config.ModeStrict, exc("ModuleNotFoundError", "No module named 'imghdr'"), nil))
	require.Contains(t, failureHint(modeProjectEmbedded, exc("ModuleNotFoundError", "No module named 'cgi'"), nil), "urllib.parse.parse_qs")
	require.Contains(t, failureHint(config.ModeProject, exc("ModuleNotFoundError", "No module named 'cgi'"), nil), "not installed")
	// A project-mode run that fell back to the embedded interpreter.
	require.Contains(t, failureHint(modeProjectEmbedded, exc("ModuleNotFoundError", "No module named 'pandas'"), nil), "in the embedded WASI CPython this project-mode run used (sandbox: wasm, or no python on this host)")
	require.Equal(t, "With no python on this host, this project-mode run used the embedded WASI CPython, which has no threads: call tools one after another (each call is fast), or install Python 3.8+ for threads.",
		failureHint(modeProjectEmbedded, exc("RuntimeError", "can't start new thread"), nil))
	require.Empty(t, failureHint(config.ModeProject, exc("RuntimeError", "can't start new thread"), nil), "a real python's thread error is its own")
	require.Contains(t, failureHint(config.ModeStrict, exc("TypeError", "the JSON object must be str, bytes or bytearray, not dict"), nil), "return dicts")
	require.Contains(t, failureHint(config.ModeStrict, exc("OSError", "[Errno 51] No space left on device"), nil), "code_execution.disk_limit_mb")
	require.Empty(t, failureHint(config.ModeProject, exc("OSError", "[Errno 28] No space left on device"), nil), "project mode has no disk limit: a full host disk is not the config's doing")
	require.Contains(t, failureHint(config.ModeStrict, exc("AttributeError", "'dict' object has no attribute 'split'"), nil), "return dicts")
	require.Contains(t, failureHint(config.ModeStrict, exc("EOFError", "EOF when reading a line"), nil), "stdin is empty")
	require.Empty(t, failureHint(config.ModeStrict, exc("ValueError", "bad"), nil))
	require.Empty(t, failureHint(config.ModeStrict, nil, nil))
}

func TestMergeEnv(t *testing.T) {
	require.Equal(t, []string{"A=1", "C=3", "B=9", "D=4"}, MergeEnv([]string{"A=1", "B=2", "C=3"}, []string{"B=9", "D=4"}))
}

// TestStubToolSetReadsToolsEnv: the module's tool-set filter reads the
// variable the host sets (the file holds the name itself, not a Go format
// verb).
func TestStubToolSetReadsToolsEnv(t *testing.T) {
	require.Contains(t, stubToolSet, `_os.environ.get("`+toolsEnv+`")`)
	require.Contains(t, GenerateStub(StubOptions{}), `_os.environ.get("HERMES_RPC_TOOLS")`)
}

// TestBrokerBatch: a batch's calls each go through the whitelist and the
// budget (past it, the rest are refused as single calls are), results come
// back in the calls' order, and a batch over MaxBatch is refused whole.
func TestBrokerBatch(t *testing.T) {
	b := NewBroker(okTool, 3, []string{"web_search", "terminal"})
	ctx := context.Background()
	var calls []string
	for i := range 4 {
		calls = append(calls, fmt.Sprintf(`{"tool":"web_search","args":{"query":"q%d"}}`, i))
	}
	calls = append(calls, `{"tool":"read_file","args":{}}`)
	resp := decode(t, b.Serve(ctx, []byte(`{"op":"batch","calls":[`+strings.Join(calls, ",")+`]}`)))
	results := resp["results"].([]any)
	require.Len(t, results, 5)
	limited := 0
	for i, r := range results[:4] {
		m := r.(map[string]any)
		if m["error"] != nil {
			require.Equal(t, "Tool call limit reached (3). No more tool calls allowed in this execution.", m["error"])
			limited++
			continue
		}
		require.Equal(t, fmt.Sprintf(`{"query":"q%d"}`, i), m["args"], "in the calls' order")
	}
	require.Equal(t, 1, limited, "three calls fit the budget")
	require.Contains(t, results[4].(map[string]any)["error"], "Tool 'read_file' is not available in execute_code")
	made, _ := b.Made()
	require.Equal(t, 3, made)

	big := strings.Repeat(`{"tool":"terminal","args":{}},`, MaxBatch+1)
	resp = decode(t, NewBroker(okTool, 1000, nil).Serve(ctx, []byte(`{"op":"batch","calls":[`+strings.TrimSuffix(big, ",")+`]}`)))
	require.Len(t, resp["results"], MaxBatch+1)
	require.Contains(t, resp["results"].([]any)[0].(map[string]any)["error"], "Tool batch too large")
}
