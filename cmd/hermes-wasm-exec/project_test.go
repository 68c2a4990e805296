package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolCallsFromThreads calls tools from eight threads at once: every
// call gets its own answer (project mode serves each thread's connection in
// parallel). Strict mode's WASI interpreter has no threads: the script gets
// Python's own error and a hint.
func TestToolCallsFromThreads(t *testing.T) {
	forModes(t, allModes, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		code, res, _ := e.run(`import threading, json
from hermes_tools import read_file, write_file
for i in range(8):
    write_file("t%d.txt" % i, "thread %d\n" % i)
bad = []
def worker(i):
    for _ in range(5):
        r = read_file("t%d.txt" % i)
        if r.get("content", "").strip() != "1|thread %d" % i:
            bad.append(r)
threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"bad": bad}))
`)
		// The WASI interpreter (strict, sandboxed, the fallback) runs the
		// threads one after another; the results are the same.
		require.Equal(t, 0, code, res.Output)
		require.JSONEq(t, `{"bad": []}`, res.Output)
		require.Equal(t, 48, res.ToolCallsMade)
	})
}

// TestSameResultInBothModes runs the same scripts in every mode: the result
// JSON is the same apart from mode, durations and paths.
func TestSameResultInBothModes(t *testing.T) {
	scripts := map[string]string{
		"exception": "from hermes_tools import read_file\nprint('before')\nread_file('app/users.py')['content'].nope()\n",
		"sys.exit":  "import sys\nprint('bye')\nsys.exit(3)\n",
		"budget":    "from hermes_tools import read_file\nfor i in range(4):\n    print(read_file('README.md').get('error'))\n",
		"timeout":   "print('working', flush=True)\nwhile True:\n    pass\n",
	}
	for _, name := range []string{"data_pipeline", "bulk_refactor", "build_and_test", "web_research"} {
		b, err := os.ReadFile("../../testdata/examples/" + name + ".py")
		require.NoError(t, err)
		scripts[name] = string(b)
	}
	tracebackPath := regexp.MustCompile(`File "[^"]*script\.py"`)
	normalized := func(r result) string {
		r.Mode, r.Sandbox = "", ""
		r.DurationSeconds = 0
		for i := range r.ToolCalls {
			r.ToolCalls[i].DurationMS = 0
		}
		r.Output = tracebackPath.ReplaceAllString(r.Output, `File "script.py"`)
		r.Error = tracebackPath.ReplaceAllString(r.Error, `File "script.py"`)
		b, _ := json.MarshalIndent(r, "", "  ")
		return string(b)
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			var first string
			for _, m := range allModes {
				if why := m.needsPython(); why != "" {
					t.Logf("%s not compared: %s", m.name, why)
					continue
				}
				e := newEnvIn(t, m)
				e.copyProject()
				// Only the timeout case runs into its limit; the others get a
				// limit a slow python start on a busy machine never reaches.
				timeout := "60"
				if name == "timeout" {
					timeout = "2"
				}
				_, res, _ := e.run(script, "--max-tool-calls", "3", "--timeout", timeout)
				require.Equal(t, m.mode, res.Mode)
				require.Equal(t, m.sandboxed || m.fallback, res.Sandbox == "wasm", "the result says when a project-mode run was sandboxed")
				got := normalized(res)
				if first == "" {
					first = got
					continue
				}
				require.Equal(t, first, got, "%s differs from %s", m.name, allModes[0].name)
			}
		})
	}
}

// realPython is the host's python3 binary itself (not a launcher shim).
func realPython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs a host python3")
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func TestProjectInterpreter(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("Windows: these cases build POSIX venv layouts (bin/python symlinks, a #!/bin/sh python) and need a host python; the fallback with no python is TestProjectFallbackCLI, on every platform")
	}
	const whoami = "import sys, os, json\nprint(json.dumps({'exe': sys.executable, 'cwd': os.getcwd()}))\n"
	t.Run("venv chosen", func(t *testing.T) {
		e := newEnvIn(t, projectUnix)
		venv := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(venv, "bin"), 0o755))
		require.NoError(t, os.Symlink(realPython(t), filepath.Join(venv, "bin", "python")))
		t.Setenv("VIRTUAL_ENV", venv)
		code, res, _ := e.run(whoami)
		require.Equal(t, 0, code, res.Output)
		var got map[string]string
		require.NoError(t, json.Unmarshal([]byte(res.Output), &got))
		require.Equal(t, filepath.Join(venv, "bin", "python"), got["exe"])
		require.Equal(t, e.workdir, got["cwd"], "the script runs in the session dir")
	})
	t.Run("broken venv skipped", func(t *testing.T) {
		e := newEnvIn(t, projectUnix)
		venv := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(venv, "bin"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(venv, "bin", "python"), []byte("#!/bin/sh\necho 'no such module: encodings' >&2\nexit 1\n"), 0o755))
		t.Setenv("VIRTUAL_ENV", venv)
		code, res, stderr := e.run(whoami, "--log-level", "debug")
		require.Equal(t, 0, code, res.Output)
		require.NotContains(t, res.Output, venv)
		require.Contains(t, stderr, "skipped python "+filepath.Join(venv, "bin", "python")+" (VIRTUAL_ENV): does not run")
		require.Contains(t, res.Warning, "after skipping "+filepath.Join(venv, "bin", "python")+" (VIRTUAL_ENV): does not run")
	})
	t.Run("modules of the session dir import", func(t *testing.T) {
		e := newEnvIn(t, projectUnix)
		e.copyProject()
		// A hermes_tools.py of the project's own does not shadow ours.
		require.NoError(t, os.WriteFile(filepath.Join(e.workdir, "hermes_tools.py"), []byte("raise ImportError('the wrong hermes_tools')\n"), 0o644))
		code, res, _ := e.run("from app.orders import total\nfrom app import util\nfrom hermes_tools import read_file\nprint(total.__module__, util.__name__, 'read_file' in dir())\n")
		require.Equal(t, 0, code, res.Output)
		require.Equal(t, "app.orders app.util True\n", res.Output)
	})
	t.Run("no host python: the embedded interpreter over the session dir", func(t *testing.T) {
		e := newEnvIn(t, projectUnix)
		require.NoError(t, os.WriteFile(filepath.Join(e.workdir, "notes.txt"), []byte("alpha\n"), 0o644))
		t.Setenv("PATH", t.TempDir())
		t.Setenv("VIRTUAL_ENV", "")
		t.Setenv("CONDA_PREFIX", "")
		code, res, _ := e.run(`import os
from hermes_tools import read_file
print(open("notes.txt").read().strip(), read_file("notes.txt")["content"].strip())
open("made-by-script.txt", "w").write("hi")
print(sorted(n for n in os.listdir(".") if not n.startswith(".")))
`)
		require.Equal(t, 0, code, res.Output)
		require.Equal(t, "alpha 1|alpha\n['made-by-script.txt', 'notes.txt']\n", res.Output)
		require.Equal(t, "project", res.Mode)
		require.Contains(t, res.Warning, "embedded WASI CPython")
		b, err := os.ReadFile(filepath.Join(e.workdir, "made-by-script.txt"))
		require.NoError(t, err)
		require.Equal(t, "hi", string(b))
	})
}

// TestProjectFallbackCLI: `run --mode project` on a host with no python on
// PATH (on every platform, Windows included) runs the script in the
// embedded interpreter over the working dir, says so in the result's
// warning and on stderr, and gives the script's result.
func TestProjectFallbackCLI(t *testing.T) {
	home, tmp, workdir := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(workdir, "notes.txt"), []byte("alpha\n"), 0o644))
	script := `import os
from hermes_tools import read_file
print(open("notes.txt").read().strip(), read_file("notes.txt")["content"].strip())
open("made-by-script.txt", "w").write("hi")
print(sorted(n for n in os.listdir(".") if not n.startswith(".")))
`
	code, stdout, stderr := child(t, []string{"PATH=" + t.TempDir(), "VIRTUAL_ENV=", "CONDA_PREFIX=", "HERMES_HOME=" + home, "TMPDIR=" + tmp},
		script, "run", "--mode", "project", "--workdir", workdir, "-")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	var res result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.Equal(t, "success", res.Status)
	require.Equal(t, "project", res.Mode)
	require.Equal(t, "alpha 1|alpha\n['made-by-script.txt', 'notes.txt']\n", res.Output)
	require.Equal(t, fallbackWarning, res.Warning)
	require.Contains(t, stderr, "no usable python on this host: project mode runs the embedded WASI CPython over the session dir")
	b, err := os.ReadFile(filepath.Join(workdir, "made-by-script.txt"))
	require.NoError(t, err)
	require.Equal(t, "hi", string(b))
	left, _ := os.ReadDir(tmp)
	require.Empty(t, left, "temp dirs left behind")
}
