package shared

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
