package main

import (
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeFromPython runs testdata/clients/serve_demo.py, the Python agent
// host example of docs/serve.md: a session kernel, a delegated web_search, a
// denied approval and a streamed call, through `serve` (the test binary acting as the CLI).
func TestServeFromPython(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("Windows: the demo runs serve with --rpc-transport unix, and Windows' python has no AF_UNIX sockets (nor is there a Windows CPython under wine); it runs on Linux and macOS")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 to run the Python client")
	}
	forModes(t, []runMode{strictMode, projectUnix}, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		cmd := exec.Command(python, "serve_demo.py", m.mode, os.Args[0], "serve", "--rpc-transport", "unix")
		cmd.Dir = filepath.Join("..", "..", "testdata", "clients")
		cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "HERMES_HOME="+e.home, "TMPDIR="+e.tmp)
		out, err := cmd.Output()
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		require.NoError(t, err, stderr)
		require.JSONEq(t, `{"state": ["42", 2], "delegated": "From the host: wasm", "blocked": [true, true], "asked": ["script"], "streamed": ["live\n", {"stdout": "live\n", "stderr": "err\n"}]}`, string(out))
	})
}
