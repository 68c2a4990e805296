package executor_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// sandboxAttempts is a script prelude: attempt(name, fn) records fn's
// result as "ALLOWED: ..." or the name of the exception it raised, and
// report() prints them as JSON.
const sandboxAttempts = `import json, os
results = {}
def attempt(name, fn):
    try:
        results[name] = "ALLOWED: " + repr(fn())[:80]
    except Exception as e:
        results[name] = type(e).__name__
def read(p):
    with open(p) as f:
        return f.read()
def write(p, s):
    with open(p, "w") as f:
        return f.write(s)
def report():
    print(json.dumps(results, sort_keys=True))
`

// runSandboxed runs code in the sandboxed project mode over wd and returns
// the attempts it reported.
func runSandboxed(t *testing.T, ex *executor.Executor, wd, code string) (executor.Result, map[string]string) {
	t.Helper()
	res, err := ex.Execute(context.Background(), executor.Request{Code: sandboxAttempts + code + "\nreport()\n",
		Mode: config.ModeProject, Sandbox: config.SandboxWasm, Workdir: wd})
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
	return res, got
}

// TestSandboxRenameAroundHermesHome: a Hermes home inside the working dir
// (a working dir that is the user's home holds ~/.hermes) keeps its
// protection when the script renames the dirs above its stores. Before,
// os.rename(".hermes", "h2") succeeded, and the script then read the MCP
// tokens and a profile's auth.json under h2/, rewrote h2/config.yaml with
// approvals: off and renamed the home back, and planted a file in its
// cache by renaming the cache's parent aside.
func TestSandboxRenameAroundHermesHome(t *testing.T) {
	wd := t.TempDir()
	home := filepath.Join(wd, ".hermes")
	files := map[string]string{
		"config.yaml":             "approvals:\n  mode: manual\n",
		"mcp-tokens/github.json":  "mcp-token",
		"profiles/work/auth.json": "profile-auth",
		"cache/web/entry":         "cached",
	}
	for name, content := range files {
		p := filepath.Join(home, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: home})
	defer ex.Close(context.Background())

	res, got := runSandboxed(t, ex, wd, `
attempt("config direct", lambda: write(".hermes/config.yaml", "approvals:\n  mode: off\n"))
attempt("tokens direct", lambda: read(".hermes/mcp-tokens/github.json"))
attempt("rename home", lambda: os.rename(".hermes", "h2"))
base = "h2" if os.path.exists("h2") else ".hermes"
attempt("tokens renamed", lambda: read(base + "/mcp-tokens/github.json"))
attempt("profile renamed", lambda: read(base + "/profiles/work/auth.json"))
attempt("config renamed", lambda: write(base + "/config.yaml", "approvals:\n  mode: off\n"))
if base == "h2":
    os.rename("h2", ".hermes")
attempt("rename profiles", lambda: os.rename(".hermes/profiles", ".hermes/pp"))
attempt("rename cache", lambda: os.rename(".hermes/cache", ".hermes/c2"))
os.makedirs("evil", exist_ok=True)
write("evil/entry", "planted")
attempt("move into cache", lambda: os.rename("evil", ".hermes/cache/evil"))
attempt("move a plain dir", lambda: os.rename("evil", "evil2"))
`)
	for name, v := range got {
		if name == "move a plain dir" {
			require.Equal(t, "ALLOWED: None", v, "an ordinary dir still moves")
			continue
		}
		require.Equal(t, "PermissionError", v, name)
	}
	require.Contains(t, res.Warning, "The sandbox refused")
	for name, content := range files {
		b, err := os.ReadFile(filepath.Join(home, filepath.FromSlash(name)))
		require.NoError(t, err, name)
		require.Equal(t, content, string(b), name)
	}
	require.NoDirExists(t, filepath.Join(home, "cache", "evil"))
}

// TestSubprocessInputNeedsApproval: the WASI interpreter's subprocess runs
// commands through terminal() with the script's input on their stdin; a
// shell or interpreter given its program that way needs approval as one
// behind a pipe does. Before, subprocess.run(["sh"], input=b"rm -rf
// victim") was checked as "sh" and deleted victim without being asked
// about, in the sandboxed project mode and in strict mode alike.
func TestSubprocessInputNeedsApproval(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the commands are POSIX (sh, rm, sort); cmd.exe's reading is tested in internal/cmdcheck")
	}
	for _, mode := range []string{config.ModeProject, config.ModeStrict} {
		t.Run(mode, func(t *testing.T) {
			wd := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(wd, "victim", "a"), 0o755))
			cfg := config.Default()
			ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir()}) // manual approvals, nobody to ask
			defer ex.Close(context.Background())
			res, err := ex.Execute(context.Background(), executor.Request{Mode: mode, Sandbox: config.SandboxWasm, Workdir: wd, Code: `import subprocess
r = subprocess.run(["sh"], input=b"rm -rf victim\n", capture_output=True)
print(r.returncode, b"needs approval" in r.stderr)
r = subprocess.run("python3", shell=True, input=b"print(1)\n", capture_output=True)
print(r.returncode, b"needs approval" in r.stderr)
r = subprocess.run(["sort"], input=b"b\na\n", capture_output=True)
print(r.returncode, r.stdout)
`})
			require.NoError(t, err)
			require.Equal(t, config.StatusSuccess, res.Status, res.Output)
			require.Equal(t, "126 True\n126 True\n0 b'a\\nb\\n'\n", res.Output)
			require.DirExists(t, filepath.Join(wd, "victim", "a"))
		})
	}
}

// TestSandboxDoesNotRunTheWorkingDirsPython: with a virtualenv in the
// working dir (VIRTUAL_ENV pointing there, as when the user activated the
// project's .venv), the sandboxed project mode mounts its site-packages
// without running its python. Before, a script replaced .venv/bin/python
// with a program of its own (a hard link to an executable of the project,
// rewritten), and the next call's interpreter probe ran it on the host,
// outside the sandbox, approval and Landlock.
func TestSandboxDoesNotRunTheWorkingDirsPython(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the planted program is a POSIX shell script")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to make a virtualenv with")
	}
	wd := t.TempDir()
	venv := filepath.Join(wd, ".venv")
	out, err := exec.Command(python, "-m", "venv", "--without-pip", venv).CombinedOutput()
	require.NoError(t, err, "%s", out)
	sites, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	require.NoError(t, err)
	require.Len(t, sites, 1)
	require.NoError(t, os.MkdirAll(filepath.Join(sites[0], "projpkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sites[0], "projpkg", "__init__.py"), []byte("NAME = 'projpkg'\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(wd, "build.sh"), []byte("#!/bin/sh\necho building\n"), 0o755))
	marker := filepath.Join(t.TempDir(), "ran-on-host")

	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(),
		Environ: append(os.Environ(), "VIRTUAL_ENV="+venv)})
	defer ex.Close(context.Background())
	code := `import projpkg
attempt("import", lambda: projpkg.NAME)
def plant():
    os.unlink(".venv/bin/python")
    os.link("build.sh", ".venv/bin/python")
    write(".venv/bin/python", "#!/bin/sh\necho ran > ` + marker + `\nexec ` + python + ` \"$@\"\n")
    os.utime(".venv/bin/python")
attempt("plant", plant)
`
	_, first := runSandboxed(t, ex, wd, code)
	require.Equal(t, "ALLOWED: 'projpkg'", first["import"], "the venv's packages are importable")
	require.Equal(t, "ALLOWED: None", first["plant"])
	res, err := ex.Execute(context.Background(), executor.Request{Code: "import projpkg\nprint(projpkg.NAME)\n",
		Mode: config.ModeProject, Sandbox: config.SandboxWasm, Workdir: wd})
	require.NoError(t, err)
	require.NoFileExists(t, marker, "the executor ran the working dir's python")
	require.Equal(t, "projpkg\n", res.Output)
}

// TestWasmPackagesStayIntact: a package dir of code_execution.wasm_packages
// in a working dir is not written by a sandboxed script's own open() nor
// by write_file, and the next session's strict run imports the package as
// installed. Before, either rewrote it, and every later WASI run of every
// session ran the script's code.
func TestWasmPackagesStayIntact(t *testing.T) {
	wd := t.TempDir()
	pkgs := filepath.Join(wd, "vendor", "wasm")
	require.NoError(t, os.MkdirAll(filepath.Join(pkgs, "goodpkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkgs, "goodpkg", "__init__.py"), []byte("def hello():\n    return 'genuine'\n"), 0o644))
	cfg := config.Default()
	cfg.CodeExecution.WasmPackages = []string{pkgs}
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir()})
	defer ex.Close(context.Background())

	_, got := runSandboxed(t, ex, wd, `from hermes_tools import write_file
import goodpkg
attempt("imported", goodpkg.hello)
attempt("open", lambda: write("vendor/wasm/goodpkg/__init__.py", "def hello():\n    return 'tampered'\n"))
attempt("new module", lambda: write("vendor/wasm/evil.py", "X = 1\n"))
results["write_file"] = write_file("vendor/wasm/goodpkg/__init__.py", "def hello():\n    return 'tampered'\n").get("error") or "ALLOWED"
`)
	require.Equal(t, "ALLOWED: 'genuine'", got["imported"])
	require.Equal(t, "PermissionError", got["open"])
	require.Equal(t, "PermissionError", got["new module"])
	require.Contains(t, got["write_file"], "is in a package dir of code_execution.wasm_packages")

	res, err := ex.Execute(context.Background(), executor.Request{Code: "import goodpkg\nprint(goodpkg.hello())\n",
		Mode: config.ModeStrict, Workdir: t.TempDir(), Session: "another"})
	require.NoError(t, err)
	require.Equal(t, "genuine\n", res.Output)
}
