package engine

import (
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

// toolSpecs are the stub signatures of docs/behaviour.md §3, in ToolNames order.
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
// tools that ToolsEnv does not list, so, as in Hermes, where the module
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
	fmt.Fprintf(&b, stubToolSet, toolsEnv)
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

const stubHeader = `"""Tools callable from this script, generated by hermes-wasm-exec.

Each tool returns the tool's JSON result as a dict; tool errors come back as a
dict with an "error" key and do not raise. Only the tools enabled in this
execution exist here (at most seven: web_search, web_extract, read_file,
write_file, search_files, patch, terminal).
"""
import _thread
import os as _os

# json, shlex and time are imported on first use: a script that calls no
# tool does not pay for them (imports are slow in the WASI build).

`

// stubToolSet removes the tools the execution does not enable (%s is
// ToolsEnv); it runs once, when the module is imported.
const stubToolSet = `

def _apply_tool_set():
    # The variable lists the tools enabled in this execution (absent: all
    # seven). The others get no function, so importing one raises
    # ImportError; the host refuses their calls whatever this module holds.
    global __all__
    names = _os.environ.get("%s")
    if names is None:
        return
    enabled = set(names.split(","))
    namespace = globals()
    for name in _TOOL_NAMES:
        if name not in enabled:
            namespace.pop(name, None)
    __all__ = [n for n in __all__ if n in enabled or n not in _TOOL_NAMES]


_apply_tool_set()
del _apply_tool_set
`

const stubCodec = `
_codec = None


def _json_codec():
    # The C encoder and scanner, called directly: json.dumps and json.loads
    # add layers of Python around them that cost more than the channel.
    global _codec
    if _codec is None:
        import json
        import json.encoder
        import json.scanner
        if json.encoder.c_make_encoder is not None:
            encoder = json.encoder.c_make_encoder(
                None, json.JSONEncoder(ensure_ascii=False).default, json.encoder.encode_basestring,
                None, ":", ",", False, False, True)
            encode = lambda obj: "".join(encoder(obj, 0))
        else:
            encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        scan = json.scanner.make_scanner(json.JSONDecoder())

        def decode(text):
            try:
                return scan(text, 0)[0]
            except StopIteration:
                raise RuntimeError("hermes_tools: malformed response from the host: %r" % text[:200]) from None

        _codec = (encode, decode)
    return _codec

`

const hostTransport = `import _hermes_host
_TOKEN = None
# One call per request: the host runs the tool while this thread waits in
# the wasm import, so no lock or framing is needed.
_roundtrip = _hermes_host.call
`

const socketTransport = `# Read once at import: the script may change os.environ afterwards.
_ADDRESS = _os.environ.get("HERMES_RPC_SOCKET", "")
_TOKEN = _os.environ.get("HERMES_RPC_TOKEN", "")
_local = _thread._local()


def _connect():
    import socket
    if not _ADDRESS:
        raise RuntimeError("hermes_tools: HERMES_RPC_SOCKET is not set; this module works only in a script run by hermes-wasm-exec")
    if _ADDRESS.startswith("tcp://"):
        host, _, port = _ADDRESS[len("tcp://"):].rpartition(":")
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(_ADDRESS)
    reader = sock.makefile("rb")
    # Authenticate the connection once; every request carries the token too.
    encode, _ = _json_codec()
    sock.sendall((encode({"token": _TOKEN, "op": "hello"}) + "\n").encode("utf-8", "surrogatepass"))
    if b'"ok"' not in reader.readline():
        sock.close()
        raise RuntimeError("hermes_tools: the host refused this connection (HERMES_RPC_TOKEN does not match)")
    return sock, reader


def _roundtrip(payload):
    # One connection per thread and per process (a forked child must not
    # share its parent's), so calls from threads run in parallel.
    conn = getattr(_local, "conn", None)
    if conn is None or conn[0] != _os.getpid():
        conn = (_os.getpid(),) + _connect()
        _local.conn = conn
    conn[1].sendall(payload)
    line = conn[2].readline()
    if not line.endswith(b"\n"):
        _local.conn = None
        raise RuntimeError("hermes_tools: the connection to the host was closed (the execution is ending)")
    return line
`

const stubCall = `

def _request(req):
    encode, decode = _json_codec()
    if _TOKEN is not None:
        req["token"] = _TOKEN
    line = encode(req) + "\n"
    return decode(_roundtrip(line.encode("utf-8", "surrogatepass")).decode("utf-8", "replace"))


def _call(tool, args):
    return _request({"tool": tool, "args": args})


def _report_exit(report):
    _request({"op": "exit", "exit": report})
`

const stubHelpers = `

def json_parse(text):
    """Parse JSON leniently: strips a leading BOM and allows control characters in strings."""
    import json as _json
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        raise TypeError("json_parse expects a str, got %s (tool results are already dicts)" % type(text).__name__)
    return _json.loads(text.lstrip("\ufeff"), strict=False)


def shell_quote(s):
    """Quote s for safe use as one word in a terminal() command."""
    import shlex
    return shlex.quote(str(s))


def retry(fn, max_attempts=3, delay=2):
    """Call fn() up to max_attempts times, sleeping delay, 2*delay, ... between tries; re-raise the last error."""
    import time
    last = None
    for attempt in range(max_attempts):
        try:
            return fn()
        except Exception as e:
            last = e
            if attempt + 1 < max_attempts:
                time.sleep(delay * (2 ** attempt))
    if last is None:
        raise ValueError("retry: max_attempts must be at least 1")
    raise last
`
