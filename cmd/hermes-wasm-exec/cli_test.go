package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

// TestMain lets the test binary act as the CLI in a child process (for
// exit codes, signals and interpreter overrides that are read once per
// process) when HERMES_CLI_MAIN is set.
func TestMain(m *testing.M) {
	// A hardened child re-executes itself with HERMES_CLI_MAIN hidden from
	// its initial environment: the hand-over variable marks that image.
	if os.Getenv("HERMES_CLI_MAIN") == "1" || os.Getenv("HERMES_WASM_EXEC_ENV_FD") != "" {
		harden()
		os.Exit(Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv("HERMES_WASM_CACHE_DIR") == "" {
		// Keep one compilation cache for every test run on this machine.
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		os.Setenv("HERMES_WASM_CACHE_DIR", filepath.Join(base, "hermes-wasm-exec-test", "wasm"))
	}
	// backendtest.Main runs the tests, then stops the Docker engine and
	// sshd the remote backend tests started; then no cgroup of this process
	// may be left.
	os.Exit(testenv.MainCheckingCgroups(func() int { return backendtest.Main(m) }))
}

// result is the result JSON as the tests decode it.
type result = engine.Result

// runMode is one way a script can run. The end-to-end scenarios are one
// table run in every mode, so both modes are held to the same results.
type runMode struct {
	name string   // subtest name
	mode string   // the result's mode
	args []string // run flags
	// fallback: project mode on a host with no python, so the run uses the
	// embedded interpreter and its result carries the fallback warning.
	fallback bool
	// sandboxed: the sandboxed project mode (the embedded interpreter).
	sandboxed bool
}

var (
	strictMode  = runMode{name: "strict", mode: "strict", args: []string{"--mode", "strict"}}
	projectUnix = runMode{name: "project", mode: "project", args: []string{"--mode", "project", "--rpc-transport", "unix"}}
	projectTCP  = runMode{name: "project-tcp", mode: "project", args: []string{"--mode", "project", "--rpc-transport", "tcp"}}
	// projectFallback is project mode where no python is on PATH: wine has
	// no Windows CPython, so under wine it is what project mode does.
	projectFallback = runMode{name: "project-fallback", mode: "project", args: []string{"--mode", "project"}, fallback: true}
	// projectSandbox is the sandboxed project mode: the embedded
	// interpreter over the working dir, with project mode's results.
	projectSandbox = runMode{name: "project-sandbox", mode: "project", args: []string{"--mode", "project", "--sandbox", "wasm"}, sandboxed: true}
	// allModes: strict, and project over both RPC transports (the TCP one
	// is Windows' default; it runs here too). Python on Windows has no
	// AF_UNIX sockets. Under wine the project-tcp variants skip (no
	// Windows CPython) and project-fallback runs the scenarios instead.
	allModes = func() []runMode {
		if testenv.UnderWine() {
			return []runMode{strictMode, projectTCP, projectFallback, projectSandbox}
		}
		if goruntime.GOOS == "windows" {
			return []runMode{strictMode, projectTCP, projectSandbox}
		}
		return []runMode{strictMode, projectUnix, projectTCP, projectSandbox}
	}()
)

// fallbackWarning is the note in the warning of a project-mode run that
// fell back to the embedded interpreter.
const fallbackWarning = "No usable python on this host (no python3 or python on PATH), so this project-mode run used the embedded WASI CPython over the working dir: standard library only, no processes. Install Python 3.8+ or activate a virtualenv for the project's own packages."

// needsPython is why m cannot run here, or "": project mode with a real
// python needs one, and wine has no Windows CPython.
func (m runMode) needsPython() string {
	if m.mode == "project" && !m.fallback && testenv.UnderWine() {
		return "wine has no Windows CPython for project mode's " + m.name + " variant; it runs on Linux and on a real Windows, and project-fallback runs these scenarios here"
	}
	return ""
}

// forModes runs fn as a subtest in each mode.
func forModes(t *testing.T, modes []runMode, fn func(t *testing.T, m runMode)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if why := m.needsPython(); why != "" {
				testenv.SkipUnderWine(t, why)
			}
			fn(t, m)
		})
	}
}

// env is an isolated environment for one CLI run: its own HERMES_HOME,
// TMPDIR (checked to be empty afterwards) and working dir.
type env struct {
	t       *testing.T
	mode    runMode
	home    string
	tmp     string
	workdir string
}

// newEnv is a strict-mode environment.
func newEnv(t *testing.T) *env { return newEnvIn(t, strictMode) }

func newEnvIn(t *testing.T, m runMode) *env {
	t.Helper()
	e := &env{t: t, mode: m, home: t.TempDir(), tmp: t.TempDir(), workdir: t.TempDir()}
	t.Setenv("HERMES_HOME", e.home)
	t.Setenv("TMPDIR", e.tmp)
	t.Cleanup(func() {
		left, _ := os.ReadDir(e.tmp)
		var names []string
		for _, d := range left {
			names = append(names, d.Name())
		}
		require.Empty(t, names, "temp dirs left behind")
	})
	return e
}

// copyProject copies testdata/project into the working dir.
func (e *env) copyProject() {
	e.t.Helper()
	require.NoError(e.t, os.CopyFS(e.workdir, os.DirFS("../../testdata/project")))
}

// run runs the CLI in-process with args before the script (given as
// stdin) and returns the exit code, the parsed result and stderr.
func (e *env) run(script string, args ...string) (int, result, string) {
	e.t.Helper()
	full := append(append([]string{"run"}, e.mode.args...), "--workdir", e.workdir)
	full = append(full, args...)
	full = append(full, "-")
	var out, errb bytes.Buffer
	code := Run(full, strings.NewReader(script), &out, &errb)
	var res result
	if out.Len() > 0 {
		require.NoError(e.t, json.Unmarshal(out.Bytes(), &res), "stdout must be one JSON object: %s", out.String())
	}
	if e.mode.fallback && out.Len() > 0 && res.Error != engine.NoCodeMessage {
		// The fallback says so in the result of every script it runs (an
		// empty one is refused before an interpreter is chosen); the rest
		// is checked as in any other mode.
		require.Contains(e.t, res.Warning, fallbackWarning, "the fallback's warning")
		require.Contains(e.t, errb.String(), "no usable python on this host: project mode runs the embedded WASI CPython", "the fallback is logged")
		res.Warning = strings.TrimSpace(strings.Replace(res.Warning, fallbackWarning, "", 1))
	}
	return code, res, errb.String()
}

// runFile runs a testdata script file.
func (e *env) runFile(path string, args ...string) (int, result, string) {
	e.t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(e.t, err)
	return e.run(string(b), args...)
}

func TestExamples(t *testing.T) {
	forModes(t, allModes, examples)
}

func examples(t *testing.T, m runMode) {
	t.Run("data pipeline", func(t *testing.T) {
		e := newEnvIn(t, m)
		e.copyProject()
		code, res, _ := e.runFile("../../testdata/examples/data_pipeline.py")
		require.Equal(t, 0, code, res.Output)
		require.Equal(t, "success", res.Status)
		var got struct {
			Files     int                 `json:"files"`
			Functions int                 `json:"functions"`
			ByFile    map[string][]string `json:"by_file"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Output), &got))
		require.Equal(t, 4, got.Files)
		require.Equal(t, 6, got.Functions)
		// search_files gives host paths relative to the working dir
		// (app\users.py on Windows).
		require.Equal(t, []string{"load_user", "load_users", "display_name"}, got.ByFile[filepath.Join("app", "users.py")], res.Output)
		require.Equal(t, 5, res.ToolCallsMade)
		require.Equal(t, m.mode, res.Mode)
	})
	t.Run("bulk refactor", func(t *testing.T) {
		e := newEnvIn(t, m)
		e.copyProject()
		code, res, _ := e.runFile("../../testdata/examples/bulk_refactor.py")
		require.Equal(t, 0, code, res.Output)
		fixed, _ := json.Marshal([]string{filepath.Join("app", "orders.py"), filepath.Join("app", "users.py"), filepath.Join("app", "util.py")})
		require.JSONEq(t, `{"files_fixed": 3, "fixed": `+string(fixed)+`, "remaining": 0}`, res.Output)
		b, err := os.ReadFile(filepath.Join(e.workdir, "app", "users.py"))
		require.NoError(t, err)
		require.Equal(t, 2, strings.Count(string(b), "get_json("))
		require.NotContains(t, string(b), "fetch_json(")
	})
	t.Run("build and test", func(t *testing.T) {
		if goruntime.GOOS == "windows" {
			t.Skip("Windows: the example runs tests/test.sh with sh, and terminal() runs cmd there, which has no sh (Hermes itself needs Git Bash on Windows); it runs on Linux and macOS")
		}
		e := newEnvIn(t, m)
		e.copyProject()
		code, res, _ := e.runFile("../../testdata/examples/build_and_test.py")
		require.Equal(t, 0, code, res.Output)
		require.JSONEq(t, `{"exit_code": 0, "passed": 5, "failed": 0, "failures": []}`, res.Output)
		require.NoError(t, os.WriteFile(filepath.Join(e.workdir, "app", "util.py"), []byte("# XXX-TODO\n"), 0o644))
		code, res, _ = e.runFile("../../testdata/examples/build_and_test.py")
		require.Equal(t, 0, code, res.Output)
		require.JSONEq(t, `{"exit_code": 1, "passed": 3, "failed": 2, "failures": ["util defines fetch_json", "no TODO markers"]}`, res.Output)
	})
	t.Run("web research", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.runFile("../../testdata/examples/web_research.py")
		require.Equal(t, 0, code, res.Output)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.Output), &got))
		require.Equal(t, false, got["searched"])
		require.Contains(t, got["error"], "No web search provider configured.")
		require.Contains(t, got["error"], "web.search.provider")
		require.Len(t, res.ToolCalls, 1)
		require.False(t, res.ToolCalls[0].OK)
	})
}

func TestEnvScrubbing(t *testing.T) {
	forModes(t, allModes, envScrubbing)
}

func envScrubbing(t *testing.T, m runMode) {
	script := `import os, json
from hermes_tools import terminal
names = ["DB_PASSWORD", "HERMES_BASE_URL", "OPENAI_API_KEY", "MY_TOKEN", "HERMES_HOME", "LANG", "RANDOM_THING"]
shell = terminal("%s")["output"]
print(json.dumps({"guest": sorted(n for n in names if n in os.environ),
                  "terminal": sorted(n for n in names if n + "=" in shell)}))
`
	// The terminal's environment: env in sh, set in cmd (Windows).
	listEnv := "env"
	if goruntime.GOOS == "windows" {
		listEnv = "set"
	}
	script = fmt.Sprintf(script, listEnv)
	for name, tc := range map[string]struct {
		config string
		want   string
	}{
		"default":     {"", `{"guest": ["HERMES_HOME", "LANG"], "terminal": ["HERMES_HOME", "LANG"]}`},
		"passthrough": {"terminal:\n  env_passthrough: [HERMES_BASE_URL, OPENAI_API_KEY, MY_TOKEN]\n", `{"guest": ["HERMES_BASE_URL", "HERMES_HOME", "LANG", "MY_TOKEN"], "terminal": ["HERMES_BASE_URL", "HERMES_HOME", "LANG", "MY_TOKEN"]}`},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnvIn(t, m)
			for _, kv := range []string{"DB_PASSWORD=hunter2", "HERMES_BASE_URL=http://internal", "OPENAI_API_KEY=sk-x", "MY_TOKEN=t", "LANG=C.UTF-8", "RANDOM_THING=1"} {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			cfg := filepath.Join(e.home, "config.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tc.config), 0o600))
			code, res, stderr := e.run(script, "--log-level", "debug")
			require.Equal(t, 0, code, res.Output)
			require.JSONEq(t, tc.want, res.Output)
			// HERMES_WASM_CACHE_DIR (set for the tests) is dropped too.
			dropped := regexp.MustCompile(`execute_code: dropped \d+ non-allowlisted HERMES_\* var\(s\) from the sandbox child env \((.*)\)\. This is intentional hardening`).FindStringSubmatch(stderr)
			require.NotNil(t, dropped, stderr)
			if name == "default" {
				require.Contains(t, dropped[1], "HERMES_BASE_URL")
			} else {
				require.NotContains(t, dropped[1], "HERMES_BASE_URL")
				require.Contains(t, stderr, "refusing to pass through host-managed credentials [OPENAI_API_KEY]")
				// A refused credential is a warning shown at the default log level too.
				code, _, stderr = e.run(script)
				require.Equal(t, 0, code)
				require.Contains(t, stderr, "hermes-wasm-exec: warning: execute_code: refusing to pass through host-managed credentials [OPENAI_API_KEY]\n")
			}
		})
	}
}

// TestJail tries every path trick from inside the guest: `..`, absolute
// host paths, symlinks it tries to make, and a symlink planted in its
// staging dir from the host (through terminal) while it runs.
func TestJail(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	script := `import os, json
from hermes_tools import terminal, shell_quote
OUT = ` + "%q" + `
TMP = ` + "%q" + `
PLANT = ` + "%q" + `
results = {}
def attempt(name, fn):
    try:
        results[name] = "ALLOWED: " + repr(fn())[:60]
    except Exception as e:
        results[name] = type(e).__name__

attempt("read abs", lambda: open(OUT + "/secret.txt").read())
attempt("read dotdot", lambda: open("../../../../../../.." + OUT + "/secret.txt").read())
attempt("read etc", lambda: open("/etc/hostname").read())
attempt("list parent", lambda: os.listdir("/.."))
attempt("write abs", lambda: open(OUT + "/written.txt", "w").write("x"))
attempt("write dotdot", lambda: open("/../../../../../" + OUT + "/written2.txt", "w").write("x"))
attempt("symlink", lambda: os.symlink(OUT, "/esc"))
attempt("hardlink", lambda: os.link(OUT + "/secret.txt", "/hard"))
if PLANT:
    # Plant symlinks into the staging dir from the host, then try them.
    r = terminal("for d in " + shell_quote(TMP) + "/hermes-strict-*; do ln -s " + shell_quote(OUT) + " $d/planted; ln -s " + shell_quote(OUT + "/secret.txt") + " $d/planted-file; done")
    attempt("planted dir", lambda: open("/planted/secret.txt").read())
    attempt("planted file", lambda: open("/planted-file").read())
    attempt("planted write", lambda: open("/planted/new.txt", "w").write("x"))
    attempt("planted list", lambda: os.listdir("/planted"))
attempt("own file", lambda: open("/mine.txt", "w").write("ok"))
print(json.dumps(results, sort_keys=True))
print(sorted(os.listdir("/")))
`
	// --yes: the planting command (ln with run-time arguments) would
	// otherwise need approval; here it plays a hostile host process.
	// Planting needs ln in sh. On Windows terminal() runs cmd, whose mklink
	// needs administrator rights or developer mode (and makes nothing
	// under wine).
	plant := goruntime.GOOS != "windows"
	script = strings.Replace(strings.Replace(script, "%q", jsonString(outside), 1), "%q", jsonString(e.tmp), 1)
	script = strings.Replace(script, "%q", map[bool]string{true: "True", false: "False"}[plant], 1)
	got, lines := runJailProbe(t, e, script)
	t.Run("planted symlinks", func(t *testing.T) {
		if !plant {
			t.Skip("Windows: planting a symlink from the host needs mklink, which needs administrator rights or developer mode (and makes no link under wine); the planted-symlink escapes are tried on Linux and macOS")
		}
		require.Equal(t, "PermissionError", got["planted dir"])
		require.Equal(t, "PermissionError", got["planted file"])
		require.Contains(t, got, "planted write")
		require.Contains(t, got, "planted list")
	})
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "host secret", string(b))
	entries, _ := os.ReadDir(outside)
	require.Len(t, entries, 1, "nothing may be created outside the mount")
	require.Contains(t, lines[1], "'mine.txt'")
}

// TestJailSandboxed is TestJail for the sandboxed project mode, whose root
// is the working dir at its host path: `..` and absolute paths reach
// nothing outside it (the dirs above it list only the way down), the guest
// makes no symlinks nor hard links out, and symlinks planted in the working
// dir from the host (through terminal) while it runs are not followed.
func TestJailSandboxed(t *testing.T) {
	e := newEnvIn(t, projectSandbox)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(e.workdir, "ok.txt"), []byte("inside"), 0o600))
	script := `import os, json
from hermes_tools import terminal, shell_quote
OUT = ` + jsonString(filepath.ToSlash(outside)) + `
WD = os.getcwd()
PLANT = ` + map[bool]string{true: "True", false: "False"}[goruntime.GOOS != "windows"] + `
results = {}
def attempt(name, fn):
    try:
        results[name] = "ALLOWED: " + repr(fn())[:60]
    except Exception as e:
        results[name] = type(e).__name__

attempt("read abs", lambda: open(OUT + "/secret.txt").read())
attempt("read dotdot", lambda: open("../../../../../../.." + OUT + "/secret.txt").read())
attempt("read etc", lambda: open("/etc/hostname").read())
attempt("read proc", lambda: open("/proc/self/environ").read())
parent = sorted(os.listdir(".."))
attempt("write abs", lambda: open(OUT + "/written.txt", "w").write("x"))
attempt("write dotdot", lambda: open("/../../../../../" + OUT + "/written2.txt", "w").write("x"))
attempt("symlink", lambda: os.symlink(OUT, "esc"))
attempt("hardlink", lambda: os.link(OUT + "/secret.txt", "hard"))
attempt("rename out", lambda: os.rename("ok.txt", OUT + "/ok.txt"))
if PLANT:
    r = terminal("ln -s " + shell_quote(OUT) + " planted; ln -s " + shell_quote(OUT + "/secret.txt") + " planted-file")
    attempt("planted dir", lambda: open("planted/secret.txt").read())
    attempt("planted file", lambda: open("planted-file").read())
    attempt("planted write", lambda: open("planted/new.txt", "w").write("x"))
    attempt("planted list", lambda: os.listdir("planted"))
attempt("own file", lambda: open("mine.txt", "w").write("ok"))
print(json.dumps(results, sort_keys=True))
print(json.dumps(parent))
`
	got, lines := runJailProbe(t, e, script)
	require.Equal(t, `["`+filepath.Base(e.workdir)+`"]`, strings.TrimSpace(lines[1]), "the dir above lists only the way down")
	if goruntime.GOOS != "windows" {
		require.Equal(t, "PermissionError", got["planted dir"])
		require.Equal(t, "PermissionError", got["planted file"])
		require.Contains(t, got, "planted write")
		require.Contains(t, got, "planted list")
	}
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "host secret", string(b))
	entries, _ := os.ReadDir(outside)
	require.Len(t, entries, 1, "nothing may be created outside the working dir")
	require.FileExists(t, filepath.Join(e.workdir, "mine.txt"))
}

// TestFileToolsRefuseCredentials, end to end: in
// every mode a script's write_file("~/.ssh/authorized_keys", ...) is refused
// and nothing is written, read_file refuses .env, and with
// code_execution.confine_tools_to_workdir in config.yaml the file tools stay
// inside the working dir. The rest of the env
// family (.env.prod, prod.env) and a hard link to .env are refused too, by
// read_file and search_files.
func TestFileToolsRefuseCredentials(t *testing.T) {
	forModes(t, allModes, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		home := t.TempDir()
		t.Setenv("HOME", home)
		if goruntime.GOOS == "windows" {
			t.Setenv("USERPROFILE", home)
		}
		for _, name := range []string{".env", ".env.prod", "prod.env"} {
			require.NoError(t, os.WriteFile(filepath.Join(e.workdir, name), []byte("API_KEY=sk-secret\n"), 0o600))
		}
		linked := os.Link(filepath.Join(e.workdir, ".env"), filepath.Join(e.workdir, "notes.txt")) == nil
		require.NoError(t, os.WriteFile(filepath.Join(home, "notes.txt"), []byte("outside\n"), 0o600))
		script := `import json
from hermes_tools import write_file, read_file, search_files
w = write_file("~/.ssh/authorized_keys", "ssh-ed25519 AAAA attacker\n")
r = read_file(".env")
o = read_file("~/notes.txt")
got = {"write": w.get("error"), "env": r.get("error"), "outside": o.get("content") or o.get("error")}
for name in [".env.prod", "prod.env", "notes.txt"]:
    got[name] = read_file(name).get("error") or "READ"
got["search"] = json.dumps(search_files("sk-secret").get("matches"))
print(json.dumps(got))
`
		code, res, _ := e.run(script)
		require.Equal(t, 0, code, res.Output)
		var got map[string]string
		require.NoError(t, json.Unmarshal([]byte(res.Output), &got))
		realHome, err := filepath.EvalSymlinks(home) // the refusals name resolved paths, as Hermes's do
		require.NoError(t, err)
		require.Equal(t, "Write denied: '"+filepath.Join(realHome, ".ssh", "authorized_keys")+"' is a protected system/credential file.", got["write"])
		wd, err := filepath.EvalSymlinks(e.workdir)
		require.NoError(t, err)
		envReason := " is a secret-bearing environment file and cannot be read to prevent credential leakage. " +
			"If you need to check the file structure, read .env.example instead. (Defense-in-depth — not a security boundary; the terminal tool can still bypass.)"
		require.Equal(t, "Access denied: "+filepath.Join(wd, ".env")+envReason, got["env"])
		require.Equal(t, "Access denied: "+filepath.Join(wd, ".env.prod")+envReason, got[".env.prod"])
		require.Equal(t, "Access denied: "+filepath.Join(wd, "prod.env")+envReason, got["prod.env"])
		if linked {
			require.Equal(t, "Access denied: "+filepath.Join(wd, "notes.txt")+" is a hard link to "+filepath.Join(wd, ".env")+", which"+envReason, got["notes.txt"])
		} else {
			t.Logf("no hard links in %s: the hard-link refusal is checked where there are (Linux, macOS, NTFS)", e.workdir)
		}
		require.Equal(t, "[]", got["search"], "search_files found a secret")
		require.Equal(t, "1|outside", got["outside"])
		require.NoDirExists(t, filepath.Join(home, ".ssh"))
		require.NoDirExists(t, filepath.Join(e.workdir, "~"))

		// The same script with the file tools confined to the working dir.
		require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("code_execution:\n  confine_tools_to_workdir: true\n"), 0o600))
		code, res, _ = e.run(script)
		require.Equal(t, 0, code, res.Output)
		require.NoError(t, json.Unmarshal([]byte(res.Output), &got))
		require.True(t, strings.HasPrefix(got["outside"], "Read denied: '~/notes.txt' resolves to "), got["outside"])
		require.Contains(t, got["outside"], "code_execution.confine_tools_to_workdir is true")
		require.NoDirExists(t, filepath.Join(home, ".ssh"))
	})
}

// TestFileToolsRefuseExecutorCache: a script's write_file and patch never
// write the executor's caches. wazero's compilation cache holds native code
// it checks only by CRC32 and the .pyc cache beside it holds bytecode every
// strict run imports, so a script that rewrote them ran its own code in the
// host process on the next run. Canary files stand in for real entries, so
// a regression cannot damage the shared cache.
func TestFileToolsRefuseExecutorCache(t *testing.T) {
	forModes(t, allModes, func(t *testing.T, m runMode) {
		e := newEnvIn(t, m)
		cacheDir := os.Getenv("HERMES_WASM_CACHE_DIR") // set by TestMain, as the executor resolves it
		require.NotEmpty(t, cacheDir)
		require.NoError(t, os.MkdirAll(cacheDir, 0o700))
		canary := filepath.Join(cacheDir, fmt.Sprintf("canary-%s-%d", m.name, os.Getpid()))
		require.NoError(t, os.WriteFile(canary, []byte("compiled code\n"), 0o600))
		t.Cleanup(func() { os.Remove(canary) })
		newEntry := filepath.Join(cacheDir, fmt.Sprintf("pyc-canary-%s-%d", m.name, os.Getpid()), "hermes_tools.pyc")
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(newEntry)) }) // only if the refusal failed
		homeEntry := filepath.Join(e.home, "cache", "wasm", "wazero-canary", "0123abcd")
		script := fmt.Sprintf(`import json
from hermes_tools import write_file, patch
print(json.dumps({
    "overwrite": write_file(%[1]s, "native code").get("error"),
    "patch": patch(%[1]s, "compiled", "native", replace_all=True).get("error"),
    "new": write_file(%[2]s, "bytecode").get("error"),
    "home": write_file(%[3]s, "native code").get("error"),
}))
`, jsonString(canary), jsonString(newEntry), jsonString(homeEntry))
		code, res, _ := e.run(script)
		require.Equal(t, 0, code, res.Output)
		var got map[string]string
		require.NoError(t, json.Unmarshal([]byte(res.Output), &got))
		for _, k := range []string{"overwrite", "patch", "new", "home"} {
			require.Contains(t, got[k], "is in the executor's cache", k)
			require.Contains(t, got[k], "which the file tools never write", k)
		}
		b, err := os.ReadFile(canary)
		require.NoError(t, err)
		require.Equal(t, "compiled code\n", string(b), "the cache file was changed")
		require.NoDirExists(t, filepath.Dir(newEntry))
		require.NoDirExists(t, filepath.Join(e.home, "cache", "wasm"))
	})
}

// rmShim gives cmd an rm in dir, where the approval tests' terminal
// commands run (cmd looks in the current dir first): they ask about
// `rm -rf ./build`, whose dangerous pattern the approval check knows in sh
// syntax, and check its effect. On Windows terminal() runs cmd, which has
// no rm; the shim does what rm -rf does. Elsewhere it writes nothing.
func rmShim(t *testing.T, dir string) {
	t.Helper()
	if goruntime.GOOS != "windows" {
		return
	}
	shim := "@echo off\r\nrem rm -rf PATH for the approval tests: cmd has no rm\r\n" +
		"set \"p=%~2\"\r\nset \"p=%p:/=\\%\"\r\nif exist \"%p%\" rmdir /s /q \"%p%\"\r\nexit /b 0\r\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rm.cmd"), []byte(shim), 0o644))
}

// listDir is a terminal command listing the names in dir, one a line: ls in
// sh, dir /b in cmd (Windows).
func listDir(dir string) string {
	if goruntime.GOOS == "windows" {
		return "dir /b " + dir
	}
	return "ls " + dir
}

// sleepCommand is a terminal command that waits secs seconds: sleep in sh;
// in cmd (Windows), which has no sleep, ping's one-second pauses between
// its echo requests.
func sleepCommand(secs int) string {
	if goruntime.GOOS == "windows" {
		return fmt.Sprintf("ping -n %d 127.0.0.1 >nul", secs+1)
	}
	return fmt.Sprintf("sleep %d", secs)
}

// echoVars is a terminal command printing the named variables joined by
// "/": $NAME in sh, %NAME% in cmd (Windows).
func echoVars(names ...string) string {
	refs := make([]string, len(names))
	for i, n := range names {
		if goruntime.GOOS == "windows" {
			refs[i] = "%" + n + "%"
		} else {
			refs[i] = "$" + n
		}
	}
	return "echo " + strings.Join(refs, "/")
}

// echoedVars is what echoVars(names...) prints when only the variables in
// set have values: sh expands an unset variable to nothing, cmd leaves its
// %NAME% as it is.
func echoedVars(names []string, set map[string]string) string {
	vals := make([]string, len(names))
	for i, n := range names {
		v, ok := set[n]
		if !ok && goruntime.GOOS == "windows" {
			v = "%" + n + "%"
		}
		vals[i] = v
	}
	return strings.Join(vals, "/")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestSandboxHasNoNetworkOrProcesses: strict mode's guest opens no
// connection (OSError saying so, URLError through urllib), and starts no
// process of its own: subprocess and os.system run their command as a
// terminal() call, counted and logged as one (TestSubprocessNeedsTerminal:
// without terminal in the tool set they are refused).
func TestSandboxHasNoNetworkOrProcesses(t *testing.T) {
	e := newEnv(t)
	script := `import json
results = {}
def attempt(name, fn):
    try:
        fn()
        results[name] = "ALLOWED"
    except Exception as e:
        results[name] = type(e).__name__ + (": no network" if "no network" in str(e) else "")
import socket, subprocess, os, urllib.request
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", 80), timeout=1))
attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
attempt("urllib", lambda: urllib.request.urlopen("http://127.0.0.1:1/"))
attempt("subprocess", lambda: subprocess.run(["echo", "hi"], capture_output=True, check=True))
attempt("system", lambda: os.system("echo hi") == 0 or (_ for _ in ()).throw(OSError("system failed")))
print(json.dumps(results, sort_keys=True))
`
	code, res, _ := e.run(script)
	require.Equal(t, 0, code, res.Output)
	// os.system's command printed "hi" first, as a native one would.
	require.True(t, strings.HasPrefix(res.Output, "hi\n"), res.Output)
	require.JSONEq(t, `{"dns": "OSError: no network", "subprocess": "ALLOWED", "system": "ALLOWED", "tcp": "OSError: no network", "urllib": "URLError: no network"}`, strings.TrimPrefix(res.Output, "hi\n"))
	require.Equal(t, 2, res.ToolCallsMade, "each command is a terminal() call")
	for _, c := range res.ToolCalls {
		require.Equal(t, "terminal", c.Tool)
	}
}

func TestLimits(t *testing.T) {
	forModes(t, allModes, limits)
	t.Run("memory cap", func(t *testing.T) {
		e := newEnv(t)
		require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("code_execution:\n  memory_limit_mb: 64\n"), 0o600))
		code, res, _ := e.run("chunks = []\nwhile True:\n    chunks.append(bytearray(8 * 1024 * 1024))\n")
		require.Equal(t, 1, code)
		require.Equal(t, "error", res.Status)
		require.Contains(t, res.Error, "MemoryError")
	})
}

func limits(t *testing.T, m runMode) {
	t.Run("timeout", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("print('working', flush=True)\nwhile True:\n    pass\n", "--timeout", "3")
		require.Equal(t, 1, code)
		require.Equal(t, "timeout", res.Status)
		require.Equal(t, "Script timed out after 3s and was killed.", res.Error)
		require.True(t, strings.HasSuffix(res.Output, "\n⏰ Script timed out after 3s and was killed."), res.Output)
		require.Contains(t, res.Output, "working")
	})
	t.Run("timeout during a tool call", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("from hermes_tools import terminal\nterminal('"+sleepCommand(300)+"')\n", "--timeout", "2")
		require.Equal(t, 1, code)
		require.Equal(t, "timeout", res.Status)
		// Stopped at the timeout, not after the command's 300 s (loose for
		// a loaded machine).
		require.Less(t, res.DurationSeconds, 60.0)
	})
	t.Run("tool budget", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run(`from hermes_tools import web_search
for i in range(5):
    print(web_search("q").get("error"))
`, "--max-tool-calls", "3")
		require.Equal(t, 0, code, res.Output)
		lines := strings.Split(strings.TrimSpace(res.Output), "\n")
		require.Len(t, lines, 5)
		require.Equal(t, "Tool call limit reached (3). No more tool calls allowed in this execution.", lines[3])
		require.Equal(t, lines[3], lines[4])
		require.Equal(t, 3, res.ToolCallsMade)
		require.Len(t, res.ToolCalls, 3)
	})
	t.Run("huge output", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run(`import sys
for i in range(200000):
    sys.stdout.write("line %06d %s\n" % (i, "x" * 40))
`)
		require.Equal(t, 0, code, res.Error)
		total := int64(200000 * 53)
		require.True(t, res.StdoutTruncated)
		require.Equal(t, total, res.StdoutBytesTotal)
		require.Equal(t, int64(50000), res.StdoutBytesCaptured)
		require.Equal(t, total-50000, res.StdoutBytesOmitted)
		require.Contains(t, res.Output, "\n\n... [OUTPUT TRUNCATED - 10,550,000 bytes omitted out of 10,600,000 total] ...\n\n")
		require.True(t, strings.HasPrefix(res.Output, "line 000000 "))
		require.True(t, strings.HasSuffix(res.Output, "line 199999 "+strings.Repeat("x", 40)+"\n"))
		require.Equal(t, filepath.Join(e.home, "cache", "exec"), filepath.Dir(res.StdoutSpillPath))
		require.Regexp(t, `^stdout-[0-9a-f]{12}\.txt$`, filepath.Base(res.StdoutSpillPath))
		require.Contains(t, res.Warning, res.StdoutSpillPath)
		spill, err := os.ReadFile(res.StdoutSpillPath)
		require.NoError(t, err)
		require.Len(t, spill, 5_000_000, "the spill file is capped")
		require.True(t, strings.HasPrefix(string(spill), "line 000000 "))
	})
	t.Run("spill holds the full output", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("for i in range(20000):\n    print(i)\n")
		require.Equal(t, 0, code, res.Error)
		var want strings.Builder
		for i := range 20000 {
			want.WriteString(strconv.Itoa(i) + "\n")
		}
		spill, err := os.ReadFile(res.StdoutSpillPath)
		require.NoError(t, err)
		require.Equal(t, want.String(), string(spill))
	})
}

func TestBadInput(t *testing.T) {
	forModes(t, allModes, badScripts)
	badInvocations(t)
}

// badScripts are scripts that fail, the same way in every mode.
func badScripts(t *testing.T, m runMode) {
	t.Run("empty script", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("  \n\n")
		require.Equal(t, 1, code)
		require.Equal(t, "error", res.Status)
		require.Equal(t, "No code provided. execute_code requires a non-empty 'code' parameter containing Python source. To run shell commands, use terminal(command=...) instead.", res.Error)
	})
	t.Run("syntax error", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("print('a'\nx = 1\n")
		require.Equal(t, 1, code)
		require.Contains(t, res.Error, "SyntaxError")
		require.Contains(t, res.Error, `File "<stdin>", line 1`, "a script from stdin is <stdin> in tracebacks")
	})
	t.Run("exception with hint", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("from hermes_tools import read_file\nprint(read_file('README.md').splitlines())\n")
		require.Equal(t, 1, code)
		require.Contains(t, res.Error, "AttributeError: 'dict' object has no attribute 'splitlines'")
		require.Contains(t, res.Hint, "Tool functions return dicts")
	})
	t.Run("sys.exit codes", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("import sys\nsys.exit(0)\n")
		require.Equal(t, 0, code)
		require.Equal(t, "success", res.Status)
		code, res, _ = e.run("import sys\nprint('partial')\nsys.exit(4)\n")
		require.Equal(t, 1, code)
		require.Equal(t, "Script exited with code 4", res.Error)
		require.Equal(t, 4, *res.ExitCode)
		require.Contains(t, res.Output, "partial")
	})
	t.Run("non-UTF-8 output", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')\n")
		require.Equal(t, 0, code, res.Output)
		require.Equal(t, "ok \ufffd\ufffd end\n", res.Output)
	})
	t.Run("reads stdin", func(t *testing.T) {
		e := newEnvIn(t, m)
		code, res, _ := e.run("name = input('name? ')\nprint(name)\n")
		require.Equal(t, 1, code)
		require.Contains(t, res.Error, "EOFError")
		require.Contains(t, res.Hint, "stdin is empty")
	})
}

// badInvocations are mistakes of the caller, not of the script.
func badInvocations(t *testing.T) {
	t.Run("config typo", func(t *testing.T) {
		// A likely typo of a key is a warning (the file is Hermes's, whose keys are
		// ignored); a wrong type on a key that is used is an error.
		e := newEnv(t)
		require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("code_execution:\n  timout: 10\n"), 0o600))
		code, res, stderr := e.run("print(1)\n")
		require.Equal(t, 0, code, stderr)
		require.Equal(t, "success", res.Status)
		require.Contains(t, stderr, `hermes-wasm-exec: warning: `)
		require.Contains(t, stderr, `unknown key "code_execution.timout" is ignored; did you mean "code_execution.timeout"?`)
		require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("code_execution:\n  timeout: 10s\n"), 0o600))
		code, res, stderr = e.run("print(1)\n")
		require.Equal(t, 2, code)
		require.Empty(t, res.Status)
		require.Contains(t, stderr, `line 2: code_execution.timeout must be an integer (seconds), got string "10s"`)
	})
	t.Run("missing config file", func(t *testing.T) {
		e := newEnv(t)
		code, _, stderr := e.run("print(1)\n", "--config", filepath.Join(e.home, "nope.yaml"))
		require.Equal(t, 2, code)
		require.Contains(t, stderr, "nope.yaml")
	})
	t.Run("usage", func(t *testing.T) {
		var out, errb bytes.Buffer
		require.Equal(t, 2, Run([]string{"run"}, strings.NewReader(""), &out, &errb))
		require.Contains(t, errb.String(), "give exactly one script")
		require.Equal(t, 2, Run([]string{"frobnicate"}, strings.NewReader(""), &out, &errb))
		require.Equal(t, 2, Run([]string{"run", "--mode", "sandbox", "x.py"}, strings.NewReader(""), &out, &errb))
		require.Equal(t, 2, Run([]string{"run", "/does/not/exist.py"}, strings.NewReader(""), &out, &errb))
		require.Contains(t, errb.String(), "cannot read the script")
	})
}

// runJailProbe runs a script that prints a JSON object of attempts (name
// to outcome, "ALLOWED..." when it worked) on its first line, and checks
// that only "own file" was allowed (it writes 2 bytes). It returns the
// attempts and the output's lines (the first, and the rest).
func runJailProbe(t *testing.T, e *env, script string) (map[string]string, []string) {
	t.Helper()
	code, res, _ := e.run(script, "--yes")
	require.Equal(t, 0, code, res.Output)
	lines := strings.SplitN(res.Output, "\n", 2)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got), res.Output)
	for name, v := range got {
		if name == "own file" {
			require.Equal(t, "ALLOWED: 2", v)
			continue
		}
		require.NotContains(t, v, "ALLOWED", name)
	}
	return got, lines
}

// child runs the CLI in a child process (the test binary itself).
func child(t *testing.T, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), append(env, "HERMES_CLI_MAIN=1")...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errb.String()
}

func TestInterpreterFile(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	good, err := os.ReadFile("../../pyodide-assets/dist/python.wasm")
	require.NoError(t, err, "pyodide-assets/dist is committed: restore it with `git checkout -- pyodide-assets/dist`")
	truncated := filepath.Join(dir, "truncated.wasm")
	require.NoError(t, os.WriteFile(truncated, good[:len(good)/2], 0o600))
	corrupt := filepath.Join(dir, "corrupt.wasm")
	bad := append([]byte(nil), good...)
	bad[len(bad)/3] ^= 0xff
	require.NoError(t, os.WriteFile(corrupt, bad, 0o600))

	for name, tc := range map[string]struct{ path, want string }{
		"missing":   {filepath.Join(dir, "none.wasm"), "or unset it to use the embedded interpreter"},
		"truncated": {truncated, "corrupt or truncated"},
		"corrupted": {corrupt, "corrupt or truncated"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := child(t, []string{"HERMES_WASM_INTERPRETER=" + tc.path, "TMPDIR=" + tmp, "HERMES_HOME=" + dir},
				"print(1)\n", "run", "--mode", "strict", "-")
			require.Equal(t, 1, code, stderr)
			require.Contains(t, stderr, tc.want)
			var res result
			require.NoError(t, json.Unmarshal([]byte(stdout), &res))
			require.Equal(t, "error", res.Status)
			require.Contains(t, res.Error, tc.want)
			left, _ := os.ReadDir(tmp)
			require.Empty(t, left)
		})
	}
}

func TestVersionAndDoctor(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Run([]string{"version"}, nil, &out, &errb))
	require.Contains(t, out.String(), "hermes-wasm-exec ")
	out.Reset()
	e := newEnv(t)
	_ = e
	require.Equal(t, 0, Run([]string{"doctor"}, nil, &out, &errb), errb.String())
	for _, want := range []string{"sha256    " + pyodideassets.SHA256, "status    ok", "compile cache", "snapshot  ", "config in effect:", "mode: project", "disk_limit_mb: 1024", "confine_tools_to_workdir: false", "landlock: auto", "project-mode interpreter:",
		"processes a run starts (the project-mode child, terminal commands):\n  cgroups   ", "\n  landlock  "} {
		require.Contains(t, out.String(), want)
	}
}

// doctor shows the keys of the backend in use and client_env, docker_env's
// names without their values.
func TestDoctorRemoteBackend(t *testing.T) {
	newEnv(t)
	conf := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("terminal:\n  backend: docker\n  docker_image: debian:bookworm\n  docker_network: false\n  docker_env: {API_TOKEN: s3cr3t-value}\n  client_env: [HTTPS_PROXY]\n"), 0o600))
	var out, errb bytes.Buffer
	require.Equal(t, 0, Run([]string{"doctor", "--config", conf}, nil, &out, &errb), errb.String())
	for _, want := range []string{"backend: docker", "docker_image: debian:bookworm", "docker_network: false", "- API_TOKEN", "cwd: /root", "container_persistent: true", "client_env:\n          - HTTPS_PROXY"} {
		require.Contains(t, out.String(), want)
	}
	require.NotContains(t, out.String(), "s3cr3t-value")
}
