package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// stubHostCallScript loads the generated module into a native python with a
// fake _hermes_host (the WASI interpreter's built-in module) and checks
// what crosses it: one JSON request line per call, without a token, and
// the response line decoded into the tool's result.
const stubHostCallScript = `import importlib.util, json, sys, types
sent = []
def call(payload):
    assert isinstance(payload, bytes) and payload.endswith(b"\n") and payload.count(b"\n") == 1, payload
    req = json.loads(payload)
    sent.append(req)
    return (json.dumps({"echo": req.get("args"), "big": "x" * 100000, "nl": "a\nb"}) + "\n").encode()
sys.modules["_hermes_host"] = types.SimpleNamespace(call=call)
spec = importlib.util.spec_from_file_location("hermes_tools", sys.argv[1])
ht = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ht)
r = ht.read_file("a.txt", limit=3)
assert r["echo"] == {"path": "a.txt", "offset": 1, "limit": 3}, r
assert len(r["big"]) == 100000 and r["nl"] == "a\nb"
assert sent == [{"tool": "read_file", "args": {"path": "a.txt", "offset": 1, "limit": 3}}], sent
ht._report_exit({"kind": "ok"})
assert sent[-1] == {"op": "exit", "exit": {"kind": "ok"}}, sent
print("ok")
`

func TestStubHostCallTransport(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs a native python3 to run the generated module")
	}
	stub := filepath.Join(t.TempDir(), "hermes_tools.py")
	require.NoError(t, os.WriteFile(stub, []byte(GenerateStub(StubOptions{HostCall: true})), 0o600))
	out, err := exec.Command(python, "-c", stubHostCallScript, stub).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "ok\n", string(out))
}

// stubToolSetScript imports the generated module with HERMES_RPC_TOOLS set
// by the caller and prints what a script sees of it.
const stubToolSetScript = `import sys
sys.path.insert(0, sys.argv[1])
try:
    from hermes_tools import terminal
except ImportError as e:
    print("ImportError:", str(e).replace(sys.argv[1], "DIR"))
import hermes_tools
print(sorted(n for n in hermes_tools._TOOL_NAMES if hasattr(hermes_tools, n)))
print(hermes_tools.__all__)
ns = {}
exec("from hermes_tools import *", ns)
print(sorted(k for k in ns if not k.startswith("__")))
`

// TestStubToolSet: only the enabled tools get a function, so importing
// another raises Python's ImportError (as in Hermes, whose generated module
// defines only the enabled tools); the helpers are always there.
func TestStubToolSet(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs a native python3 to run the generated module")
	}
	for _, transport := range []StubOptions{{HostCall: false}, {HostCall: true}} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, StubName), []byte(GenerateStub(transport)), 0o600))
		if transport.HostCall {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "_hermes_host.py"), []byte("def call(payload): raise AssertionError('no call')\n"), 0o600))
		}
		for _, tc := range []struct{ env, want string }{
			{"", "['patch', 'read_file', 'search_files', 'terminal', 'web_extract', 'web_search', 'write_file']\n" +
				"['web_search', 'web_extract', 'read_file', 'write_file', 'search_files', 'patch', 'terminal', 'json_parse', 'shell_quote', 'retry']\n" +
				"['json_parse', 'patch', 'read_file', 'retry', 'search_files', 'shell_quote', 'terminal', 'web_extract', 'web_search', 'write_file']\n"},
			{ToolsInject([]string{"web_search", "read_file"}), "ImportError: cannot import name 'terminal' from 'hermes_tools' (DIR/hermes_tools.py)\n" +
				"['read_file', 'web_search']\n" +
				"['web_search', 'read_file', 'json_parse', 'shell_quote', 'retry']\n" +
				"['json_parse', 'read_file', 'retry', 'shell_quote', 'web_search']\n"},
			{ToolsInject([]string{}), "ImportError: cannot import name 'terminal' from 'hermes_tools' (DIR/hermes_tools.py)\n" +
				"[]\n" +
				"['json_parse', 'shell_quote', 'retry']\n" +
				"['json_parse', 'retry', 'shell_quote']\n"},
		} {
			cmd := exec.Command(python, "-c", stubToolSetScript, dir)
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			require.Equal(t, tc.want, string(out), "env %q, host call %v", tc.env, transport.HostCall)
		}
	}
}
