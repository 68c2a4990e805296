package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// landlockEnv is a Hermes home, a user home, a working dir, a temp dir and
// a private compilation cache dir (the shared cache's compiled code and
// bytecode linked in, so nothing compiles) under one test dir, with
// $HOME, $TMPDIR and $HERMES_WASM_CACHE_DIR pointing at them.
type landlockEnv struct {
	root, home, user, wd, tmp, cache, token, otherProfile string
}

func newLandlockEnv(t *testing.T) landlockEnv {
	t.Helper()
	if st := landlock.Probe(); !st.Enforced {
		t.Skipf("Landlock %s", st)
	}
	if native.Resolve(context.Background(), os.Getenv).Path == "" {
		t.Skip("no host python: project mode needs one")
	}
	shared := os.Getenv(config.CacheDirEnv)
	if shared == "" {
		t.Skip("set HERMES_WASM_CACHE_DIR to a warm compilation cache: this test links its compiled code")
	}
	root := t.TempDir()
	e := landlockEnv{root: root, home: filepath.Join(root, "home"), user: filepath.Join(root, "user"),
		wd: filepath.Join(root, "wd"), tmp: filepath.Join(root, "tmp"), cache: filepath.Join(root, "cache"),
		token: filepath.Join(root, "secrets", "serve.token")}
	e.otherProfile = filepath.Join(e.home, "profiles", "other")
	for _, d := range []string{e.otherProfile, filepath.Join(e.user, ".cache"), e.wd, e.tmp, e.cache, filepath.Dir(e.token)} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	for path, content := range map[string]string{
		// Approvals off: the terminal() writes below must reach Landlock,
		// not stop at the dangerous-command check (which flags writes to
		// config.yaml).
		filepath.Join(e.home, "config.yaml"):         "code_execution:\n  mode: project\napprovals:\n  mode: \"off\"\n",
		filepath.Join(e.otherProfile, "config.yaml"): "code_execution:\n  mode: strict\n",
		e.token: "secret-token\n",
	} {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	}
	entries, err := os.ReadDir(shared)
	require.NoError(t, err)
	for _, en := range entries {
		if n := en.Name(); strings.HasPrefix(n, "wazero-") || strings.HasPrefix(n, "pyc-") || strings.HasPrefix(n, "compiled-") {
			require.NoError(t, os.Symlink(filepath.Join(shared, n), filepath.Join(e.cache, n)))
		}
	}
	t.Setenv("HOME", e.user)
	t.Setenv("TMPDIR", e.tmp)
	t.Setenv(config.CacheDirEnv, e.cache)
	return e
}

// store is the session store's dir.
func (e landlockEnv) store() string { return filepath.Join(e.root, "sessions") }

func (e landlockEnv) executor(t *testing.T, confine bool) *executor.Executor {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.home, "config.yaml"))
	require.NoError(t, err)
	cfg.CodeExecution.ConfineToolsToWorkdir = confine
	cfg.CodeExecution.SessionStore = e.store()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: e.home, StatePaths: []string{e.token}})
	t.Cleanup(func() { ex.Close(context.Background()) })
	return ex
}

func (e landlockEnv) run(t *testing.T, ex *executor.Executor, req executor.Request) executor.Result {
	t.Helper()
	req.Workdir = e.wd
	req.Timeout = 60 * time.Second
	res, err := ex.Execute(context.Background(), req)
	require.NoError(t, err)
	return res
}

// landlockProbe tries, from a project-mode script, each write (and
// signal) it is given and prints {name: "ok" or the exception}; then the
// same writes through terminal(), with the shell's status.
const landlockProbe = `
import json, os, signal, sys, tempfile
from hermes_tools import terminal
args = json.loads(sys.argv[1] if len(sys.argv) > 1 else os.environ["PROBE"])
out = {}
def attempt(name, f):
    try:
        f()
        out[name] = "ok"
    except Exception as e:
        out[name] = type(e).__name__ + ": " + str(e)
def overwrite(path):
    with open(path, "r+b") as f:
        f.seek(100)
        f.write(b"planted")
def create(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("planted")
for name, path in args["overwrite"].items():
    attempt(name, lambda p=path: overwrite(p))
for name, path in args["create"].items():
    attempt(name, lambda p=path: create(p))
for name, pid in args["kill"].items():
    attempt(name, lambda p=pid: os.kill(p, 0))
for name, path in args.get("open", {}).items():
    attempt(name, lambda p=path: os.close(os.open(p, os.O_RDONLY)))
attempt("tempfile", lambda: tempfile.mkstemp())
attempt("read config", lambda: open(args["read"]).read())
for name, path in args["terminal"].items():
    r = terminal("printf planted >> '%s'; echo $?" % path)
    out["terminal " + name] = (r["output"].strip().splitlines() or [r.get("error")])[-1]
r = terminal("kill -0 %d; echo $?" % args["executor"])
out["terminal kill executor"] = (r["output"].strip().splitlines() or [r.get("error")])[-1]
print(json.dumps(out))
`

func probeScript(t *testing.T, args map[string]any) string {
	t.Helper()
	args["executor"] = os.Getpid()
	b, err := json.Marshal(args)
	require.NoError(t, err)
	return "import sys\nsys.argv[1:] = [" + fmt.Sprintf("%q", string(b)) + "]\n" + landlockProbe
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

// TestProjectRunsCannotWriteExecutorState: a project-mode script and its
// terminal() commands cannot rewrite the strict interpreter's snapshot
// (which later strict runs executed before), plant a file in the
// compilation cache (native code the next process runs), or rewrite
// config.yaml, a token file or another profile; nor signal the executor
// or another session's kernel. Ordinary work still succeeds, and a later
// strict run starts from the snapshot as it was.
func TestProjectRunsCannotWriteExecutorState(t *testing.T) {
	e := newLandlockEnv(t)
	ex := e.executor(t, false)

	// A strict run makes the snapshot in the private cache dir.
	res := e.run(t, ex, executor.Request{Code: "print(6 * 7)", Mode: config.ModeStrict})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	snaps, err := filepath.Glob(filepath.Join(e.cache, "snapshot-*.bin"))
	require.NoError(t, err)
	require.Len(t, snaps, 1)
	snap := snaps[0]
	before := sum(t, snap)

	// Another session's kernel, to signal.
	res = e.run(t, ex, executor.Request{Code: "import os; print(os.getpid())", Mode: config.ModeProject, Session: "other"})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var otherPid int
	_, err = fmt.Sscan(res.Output, &otherPid)
	require.NoError(t, err)

	cfgFile := filepath.Join(e.home, "config.yaml")
	script := probeScript(t, map[string]any{
		"overwrite": map[string]string{
			"snapshot": snap, "config": cfgFile, "token": e.token,
			"other profile": filepath.Join(e.otherProfile, "config.yaml"),
		},
		"create": map[string]string{
			"compiled cache":  filepath.Join(e.cache, "planted"),
			"session store":   filepath.Join(e.store(), "planted.img"),
			"new profile":     filepath.Join(e.home, "profiles", "new", "config.yaml"),
			"workdir":         filepath.Join(e.wd, "out", "result.txt"),
			"user cache":      filepath.Join(e.user, ".cache", "other", "x"),
			"temp dir":        filepath.Join(e.tmp, "scratch", "x"),
			"home, new entry": filepath.Join(e.user, "newfile"),
		},
		"kill": map[string]int{"kill executor": os.Getpid(), "kill other session": otherPid},
		// ptrace access, which these need, is refused outside the
		// domain, to root too.
		"open": map[string]string{
			"executor fd":  fmt.Sprintf("/proc/%d/fd/2", os.Getpid()),
			"executor mem": fmt.Sprintf("/proc/%d/mem", os.Getpid()),
		},
		"read":     cfgFile,
		"terminal": map[string]string{"snapshot": snap, "config": cfgFile, "token": e.token},
	})
	res = e.run(t, ex, executor.Request{Code: script, Mode: config.ModeProject})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
	t.Logf("%s", res.Output)
	for _, name := range []string{"snapshot", "config", "token", "other profile", "compiled cache", "new profile"} {
		require.Contains(t, got[name], "PermissionError: [Errno 13]", name)
	}
	// Nothing is created directly in a directory that holds the
	// executor's state: the user's home holds the compilation cache's
	// parent here, as it holds ~/.hermes (COMPATIBILITY.md).
	require.Contains(t, got["home, new entry"], "PermissionError: [Errno 13]")
	for _, name := range []string{"kill executor", "kill other session"} {
		require.Contains(t, got[name], "PermissionError: [Errno 1]", name)
	}
	for _, name := range []string{"executor fd", "executor mem"} {
		require.Contains(t, got[name], "PermissionError: [Errno 13]", name)
	}
	for _, name := range []string{"workdir", "user cache", "temp dir", "tempfile", "read config"} {
		require.Equal(t, "ok", got[name], name)
	}
	for _, name := range []string{"terminal snapshot", "terminal config", "terminal token", "terminal kill executor"} {
		require.NotEqual(t, "0", got[name], name)
	}

	require.Equal(t, before, sum(t, snap), "the snapshot was rewritten")
	require.NoFileExists(t, filepath.Join(e.cache, "planted"))
	b, err := os.ReadFile(cfgFile)
	require.NoError(t, err)
	require.Equal(t, "code_execution:\n  mode: project\napprovals:\n  mode: \"off\"\n", string(b))

	// An uncaught refusal says why, and how to turn it off.
	res = e.run(t, ex, executor.Request{Code: fmt.Sprintf("open(%q, 'a').write('mode: strict')", cfgFile), Mode: config.ModeProject})
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Hint, "refused by Landlock: it is the executor's state")
	require.Contains(t, res.Hint, "code_execution.landlock: off")
	res = e.run(t, ex, executor.Request{Code: "import os\nos.kill(os.getppid(), 0)", Mode: config.ModeProject})
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Hint, "Signals to processes this run did not start")

	// A new executor (as the next process would) starts strict runs from
	// the snapshot file as it was.
	res = e.run(t, e.executor(t, false), executor.Request{Code: "print(6 * 7)", Mode: config.ModeStrict})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "42\n", res.Output)
	require.Equal(t, before, sum(t, snap))
}

// TestProjectRunsLandlockOff: with code_execution.landlock: off the
// processes a run starts are not restricted (the escape hatch for a false
// refusal).
func TestProjectRunsLandlockOff(t *testing.T) {
	e := newLandlockEnv(t)
	cfg, err := config.Load(filepath.Join(e.home, "config.yaml"))
	require.NoError(t, err)
	cfg.CodeExecution.Landlock = config.LandlockOff
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: e.home})
	defer ex.Close(context.Background())
	script := probeScript(t, map[string]any{
		"overwrite": map[string]string{}, "create": map[string]string{"home, new entry": filepath.Join(e.user, "newfile")},
		"kill": map[string]int{"kill executor": os.Getpid()}, "read": filepath.Join(e.home, "config.yaml"), "terminal": map[string]string{},
	})
	res := e.run(t, ex, executor.Request{Code: script, Mode: config.ModeProject})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
	require.Equal(t, "ok", got["home, new entry"])
	require.Equal(t, "ok", got["kill executor"])
	require.Equal(t, "0", got["terminal kill executor"])
	require.Equal(t, "off (code_execution.landlock: off)", ex.Diagnose(context.Background()).Landlock)
}

// TestProjectRunsConfinedToWorkdir: with confine_tools_to_workdir, a
// project-mode script and its terminal() commands write only in the
// working dir and the temp dir.
func TestProjectRunsConfinedToWorkdir(t *testing.T) {
	e := newLandlockEnv(t)
	ex := e.executor(t, true)
	outside := filepath.Join(e.root, "outside.txt")
	script := probeScript(t, map[string]any{
		"overwrite": map[string]string{},
		"create": map[string]string{
			"workdir": filepath.Join(e.wd, "out", "x"), "temp dir": filepath.Join(e.tmp, "x"),
			"outside": outside, "user cache": filepath.Join(e.user, ".cache", "other", "x"),
		},
		"kill": map[string]int{}, "read": filepath.Join(e.home, "config.yaml"),
		"terminal": map[string]string{"outside": outside, "workdir": filepath.Join(e.wd, "t.txt")},
	})
	res := e.run(t, ex, executor.Request{Code: script, Mode: config.ModeProject})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
	for _, name := range []string{"workdir", "temp dir", "tempfile", "read config"} {
		require.Equal(t, "ok", got[name], name)
	}
	for _, name := range []string{"outside", "user cache"} {
		require.Contains(t, got[name], "PermissionError: [Errno 13]", name)
	}
	require.Equal(t, "0", got["terminal workdir"])
	require.NotEqual(t, "0", got["terminal outside"])
	require.NoFileExists(t, outside)

	res = e.run(t, ex, executor.Request{Code: fmt.Sprintf("open(%q, 'w')", outside), Mode: config.ModeProject})
	require.Contains(t, res.Hint, "outside the working dir and the temp dir")
	require.Contains(t, ex.Diagnose(context.Background()).Landlock, "writes confined to the working dir")
}

// cgroupEscape, run in project mode, tries to move the script (and, from
// terminal(), the shell) into the root cgroup of every cgroup file system
// it sees, and prints {attempt: "ok" or the error, "after": its cgroups}.
const cgroupEscape = `
import json, os
from hermes_tools import terminal
out = {}
points = []
for line in open("/proc/self/mountinfo"):
    f = line.split()
    i = f.index("-")
    if f[i + 1] in ("cgroup", "cgroup2"):
        points.append(f[4])
for p in points:
    try:
        with open(os.path.join(p, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        out[p] = "ok"
    except Exception as e:
        out[p] = type(e).__name__ + ": " + str(e)
    r = terminal("echo $$ > '%s/cgroup.procs'; echo $?" % p)
    out["terminal " + p] = (r["output"].strip().splitlines() or [r.get("error")])[-1]
out["after"] = open("/proc/self/cgroup").read()
print(json.dumps(out))
`

// TestProjectRunsCannotLeaveTheirCgroup: a project-mode script run as
// root, and its terminal() commands, cannot move themselves out of their
// tree's cgroup into the root cgroup (where the kill at the run's end and
// at the executor's death would miss them, and no limit applies): the
// cgroup file systems are protected. (Before, one write to
// /sys/fs/cgroup/.../cgroup.procs moved a script out.)
func TestProjectRunsCannotLeaveTheirCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can write a root cgroup's cgroup.procs: the escape needs it")
	}
	if st := cgroup.Current(); !st.Used {
		t.Skipf("cgroups are not used here: %s", st)
	}
	e := newLandlockEnv(t)
	ex := e.executor(t, false)
	res := e.run(t, ex, executor.Request{Code: cgroupEscape, Mode: config.ModeProject})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
	t.Logf("%s", res.Output)
	points := cgroup.MountPoints()
	require.NotEmpty(t, points)
	for _, p := range points {
		require.Contains(t, got[p], "PermissionError: [Errno 13]", p)
		require.NotEqual(t, "0", got["terminal "+p], p)
	}
	require.Contains(t, got["after"], "hermes-", "the script is still in its tree's cgroup")
}
