package shared

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// stubThreadsScript loads the generated module into a native python with a
// fake os whose channel answers each request after a random delay, then
// calls tools from 16 threads at once: every call must get its own answer.
const stubThreadsScript = `import importlib.util, json, random, sys, threading, time
spec = importlib.util.spec_from_file_location("hermes_tools", sys.argv[1])
ht = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ht)

class FakeChannel:
    O_RDWR = 2
    def __init__(self):
        self.pending = b""
    def open(self, path, flags):
        return 7
    def write(self, fd, data):
        req = json.loads(bytes(data))
        time.sleep(random.random() / 1000)
        self.pending = (json.dumps({"echo": req["args"]["query"]}) + "\n").encode()
        return len(data)
    def read(self, fd, n):
        time.sleep(random.random() / 1000)
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

ht._os = FakeChannel()
bad = []
def worker(i):
    for j in range(25):
        q = "%d-%d" % (i, j)
        if ht.web_search(q)["echo"] != q:
            bad.append(q)
threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print("mismatches", len(bad))
`

func TestStubThreadSafe(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs a native python3 to run the generated module with threads")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "hermes_tools.py")
	require.NoError(t, os.WriteFile(stub, []byte(GenerateStub(StubOptions{ChannelPath: "/unused"})), 0o600))
	out, err := exec.Command(python, "-c", stubThreadsScript, stub).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "mismatches 0\n", string(out))
}
