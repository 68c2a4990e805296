package engine

import (
	_ "embed"

	"fmt"
	"strings"
)

// param is one keyword parameter of a tool stub.
type param struct {
	name, typ, def string // def is a Python literal; "" means required
}

// toolSpec describes one script-callable tool for the generated module.
type toolSpec struct {
	name   string
	params []param
	doc    string
}

// toolSpecs are the stub signatures of docs/behaviour.md §3, in toolNames order.
var toolSpecs = []toolSpec{
	{"web_search", []param{{"query", "str", ""}, {"limit", "int", "5"}},
		"Search the web. Returns {\"success\", \"data\": {\"web\": [{\"title\", \"url\", \"description\", \"position\"}]}}."},
	{"web_extract", []param{{"urls", "list", ""}, {"char_limit", "int", "None"}},
		"Fetch up to 5 URLs as markdown. Returns {\"results\": [{\"url\", \"title\", \"content\", \"error\"}]}."},
	{"read_file", []param{{"path", "str", ""}, {"offset", "int", "1"}, {"limit", "int", "500"}},
		"Read lines of a text file (1-indexed). Returns {\"content\", \"total_lines\", \"file_size\", \"truncated\"}."},
	{"write_file", []param{{"path", "str", ""}, {"content", "str", ""}},
		"Write a file, creating parent dirs. Returns {\"bytes_written\", \"dirs_created\", \"resolved_path\", \"files_modified\"}."},
	{"search_files", []param{{"pattern", "str", ""}, {"target", "str", "\"content\""}, {"path", "str", "\".\""},
		{"file_glob", "str", "None"}, {"limit", "int", "50"}, {"offset", "int", "0"}, {"output_mode", "str", "\"content\""}, {"context", "int", "0"}},
		"Search file contents (regex) or names (target=\"files\"). Returns {\"total_count\", \"matches\": [{\"path\", \"line\", \"content\"}]}, \"files\" or \"counts\"."},
	{"patch", []param{{"path", "str", "None"}, {"old_string", "str", "None"}, {"new_string", "str", "None"},
		{"replace_all", "bool", "False"}, {"mode", "str", "\"replace\""}, {"patch", "str", "None"}},
		"Edit files: replace old_string with new_string, or apply a V4A patch (mode=\"patch\"). Returns {\"success\", \"diff\", \"files_modified\"}."},
	{"terminal", []param{{"command", "str", ""}, {"timeout", "int", "None"}, {"workdir", "str", "None"}},
		"Run a shell command in the foreground. Returns {\"output\", \"exit_code\", \"error\"}."},
}

// Signatures returns the Python signature of every tool, one per line, for
// documentation and tool descriptions.
func Signatures() []string {
	out := make([]string, 0, len(toolSpecs))
	for _, t := range toolSpecs {
		out = append(out, t.name+"("+pySignature(t.params)+")")
	}
	return out
}

func pySignature(ps []param) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		s := p.name + ": " + p.typ
		if p.def != "" {
			s += " = " + p.def
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}

// StubOptions selects the transport of the generated module.
type StubOptions struct {
	// HostCall selects strict mode's transport: every request goes to the
	// host through the interpreter's built-in _hermes_host module, a wasm
	// import the host answers synchronously. Without it the module uses
	// the socket transport: it connects to HERMES_RPC_SOCKET (a Unix socket
	// path, or tcp://127.0.0.1:PORT) and sends HERMES_RPC_TOKEN with every
	// request (project mode, see native.Server for the framing).
	HostCall bool
}

// GenerateStub returns the source of the hermes_tools module: the seven
// tool functions with the exact signatures of docs/behaviour.md §3, the helpers
// json_parse, shell_quote and retry, and the transport. With the host-call
// transport each call is one synchronous host function call (the WASI
// interpreter has no threads); with the socket transport each thread (and
// each forked process) has its own connection, so calls from threads run
// in parallel on the host.
//
// The source is the same for every tool set (strict mode compiles it once
// to bytecode): when the module is imported it drops the functions of the
// tools that toolsEnv does not list, so, as in Hermes, where the module
// defines only the enabled tools, `from hermes_tools import terminal`
// raises ImportError when terminal is not enabled.
func GenerateStub(opts StubOptions) string {
	var b strings.Builder
	b.WriteString(stubHeader)
	fmt.Fprintf(&b, "_TOOL_NAMES = (%s)\n__all__ = list(_TOOL_NAMES) + [\"json_parse\", \"shell_quote\", \"retry\"]\n", pyStrings(toolNames))
	b.WriteString(stubCodec)
	if opts.HostCall {
		b.WriteString(hostTransport)
	} else {
		b.WriteString(socketTransport)
	}
	b.WriteString(stubCall)
	for _, t := range toolSpecs {
		fmt.Fprintf(&b, "\n\ndef %s(%s) -> dict:\n    %q\n    return _call(%q, {", t.name, pySignature(t.params), t.doc, t.name)
		for i, p := range t.params {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q: %s", p.name, p.name)
		}
		b.WriteString("})\n")
	}
	b.WriteString(stubHelpers)
	b.WriteString(stubToolSet)
	if opts.HostCall {
		b.WriteString(wasiCompat)
	}
	return b.String()
}

// pyStrings renders names as the items of a Python tuple of strings.
func pyStrings(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(parts, ", ") + ","
}

// The Python sources of the generated hermes_tools module live in python/,
// one fragment per file, embedded here: the header (module docstring and
// imports), the tool-set filter, the JSON codec, one of the two transports
// (the strict host call or the project socket), the call function, and the
// helpers. GenerateStub joins them with the tool functions.
//
//go:embed python/stub_header.py
var stubHeader string

// stubToolSet removes the tools the execution does not enable, as
// toolsEnv lists them (TestStubToolSetReadsToolsEnv checks the name); it
// runs once, when the module is imported.
//
//go:embed python/stub_toolset.py
var stubToolSet string

//go:embed python/stub_codec.py
var stubCodec string

//go:embed python/transport_host.py
var hostTransport string

//go:embed python/transport_socket.py
var socketTransport string

//go:embed python/stub_call.py
var stubCall string

//go:embed python/stub_helpers.py
var stubHelpers string

// wasiCompat makes what the WASI interpreter lacks work as scripts expect
// (subprocess through terminal, threads one after another, no network,
// named extension modules); it ends the stub of the strict host call.
//
//go:embed python/wasi_compat.py
var wasiCompat string
