package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
	"github.com/stretchr/testify/require"
)

// sandboxProbe tries what the sandboxed project mode's file-safety rules
// refuse, and what they let through, printing one line per attempt.
const sandboxProbe = `
import os
def attempt(label, f):
    try:
        f()
        print(label, "ok")
    except Exception as e:
        print(label, type(e).__name__)
attempt("read data.txt", lambda: open("data.txt").read())
attempt("read .env", lambda: open(".env").read())
attempt("read .env.local", lambda: open(".env.local").read())
attempt("read hard link", lambda: open("notes.txt").read())
attempt("read symlink out", lambda: open("out.lnk").read())
attempt("read credential store", lambda: open("home/auth.json").read())
attempt("write config.yaml", lambda: open("home/config.yaml", "w").write("approvals: {mode: off}"))
attempt("rename .env", lambda: os.rename(".env", "plain.txt"))
attempt("link .env", lambda: os.link(".env", "alias.txt"))
attempt("symlink", lambda: os.symlink("/etc/passwd", "pw"))
attempt("read outside", lambda: open(OUTSIDE).read())
attempt("read via ..", lambda: open("../" + os.path.basename(os.path.dirname(OUTSIDE)) + "/" + os.path.basename(OUTSIDE)).read())
attempt("write tmp", lambda: open("/tmp/x", "w").write("x"))
`

func TestSandboxedProjectFileSafety(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("hard links and symlinks made by the test need POSIX semantics here; the Windows stage runs the path rules in runtime/internal/strict")
	}
	base := t.TempDir()
	wd := filepath.Join(base, "project")
	home := filepath.Join(wd, "home") // the Hermes home inside the working dir
	require.NoError(t, os.MkdirAll(home, 0o755))
	outside := filepath.Join(base, "outside", "secret.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(outside), 0o755))
	require.NoError(t, os.WriteFile(outside, []byte("outside"), 0o600))
	for name, content := range map[string]string{"data.txt": "data", ".env": "KEY=1", ".env.local": "KEY=2", "home/auth.json": "{}"} {
		require.NoError(t, os.WriteFile(filepath.Join(wd, name), []byte(content), 0o600))
	}
	require.NoError(t, os.Link(filepath.Join(wd, ".env"), filepath.Join(wd, "notes.txt")))
	require.NoError(t, os.Symlink(outside, filepath.Join(wd, "out.lnk")))

	cfg := config.Default()
	cfg.CodeExecution.Sandbox = config.SandboxWasm
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: home})
	defer ex.Close(context.Background())
	code := "OUTSIDE = " + fmt.Sprintf("%q", outside) + "\n" + sandboxProbe
	want := `read data.txt ok
read .env PermissionError
read .env.local PermissionError
read hard link PermissionError
read symlink out PermissionError
read credential store PermissionError
write config.yaml PermissionError
rename .env PermissionError
link .env PermissionError
symlink PermissionError
read outside FileNotFoundError
read via .. FileNotFoundError
write tmp ok
`
	for _, session := range []string{"", "safety"} {
		res, err := ex.Execute(context.Background(), executor.Request{Code: code, Mode: config.ModeProject, Workdir: wd, Session: session})
		require.NoError(t, err)
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		require.Equal(t, config.SandboxWasm, res.Sandbox)
		require.Equal(t, want, res.Output, "session %q", session)
		require.Contains(t, res.Warning, "The sandbox refused 7 file accesses by the file tools' rules (the script got PermissionError): Access denied: "+filepath.Join(wd, ".env")+" is a secret-bearing environment file")
		require.Contains(t, res.Warning, "| Refusing to write to Hermes config file: "+filepath.Join(home, "config.yaml"))
		require.NoFileExists(t, filepath.Join(wd, "plain.txt"))
		require.NoFileExists(t, filepath.Join(wd, "alias.txt"))
		require.NoFileExists(t, filepath.Join(home, "config.yaml"))
		require.NoFileExists(t, filepath.Join(base, "x"), "the guest's /tmp is private")
	}

	// The disk budget counts what the run adds to the working dir.
	cfg.CodeExecution.DiskLimitMB = 1
	small := executor.New(executor.Options{Config: &cfg, HermesHome: home})
	defer small.Close(context.Background())
	res, err := small.Execute(context.Background(), executor.Request{Code: "open('big.bin', 'wb').write(b'x' * (2 << 20))\n", Mode: config.ModeProject, Workdir: wd})
	require.NoError(t, err)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "No space left on device")
	fi, err := os.Stat(filepath.Join(wd, "big.bin"))
	require.NoError(t, err)
	require.LessOrEqual(t, fi.Size(), int64(1<<20))
}

// The sandbox is chosen per call, and an unknown value runs in it with a
// warning event; strict mode ignores it.
func TestSandboxPerCall(t *testing.T) {
	cfg := config.Default()
	logs := &lockedLog{}
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(), Logger: logs.logger()})
	defer ex.Close(context.Background())
	wd := t.TempDir()
	probe := "import sys, os\nprint(sys.platform, os.getcwd() == " + fmt.Sprintf("%q", strict.GuestPath(wd)) + ")\n"
	for _, tc := range []struct{ sandbox, mode, platform, want string }{
		{"wasm", "project", "wasi", "wasm"},
		{"wsm", "project", "wasi", "wasm"},
		{"wasm", "strict", "wasi", ""},
	} {
		res, err := ex.Execute(context.Background(), executor.Request{Code: probe, Mode: tc.mode, Sandbox: tc.sandbox, Workdir: wd})
		require.NoError(t, err)
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		require.True(t, strings.HasPrefix(res.Output, tc.platform+" "), res.Output)
		require.Equal(t, tc.want, res.Sandbox, "%+v", tc)
	}
	require.Contains(t, logs.String(), `level=WARN msg="unknown sandbox, using wasm" sandbox=wsm`)
}

// TestSubprocessNeedsTerminal: in the WASI interpreter subprocess and
// os.system run their command as a terminal() call, so a tool set without
// terminal refuses them, and a dangerous command needs approval as it
// would through terminal() (blocked here: nobody answers).
func TestSubprocessNeedsTerminal(t *testing.T) {
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir()})
	defer ex.Close(context.Background())
	for _, sandbox := range []string{"", config.SandboxWasm} {
		mode := config.ModeStrict
		if sandbox != "" {
			mode = config.ModeProject
		}
		res, err := ex.Execute(context.Background(), executor.Request{Mode: mode, Sandbox: sandbox, Workdir: t.TempDir(), Tools: []string{"read_file"},
			Code: "import subprocess\ntry:\n    subprocess.run(['ls'])\nexcept PermissionError as e:\n    print(e)\n"})
		require.NoError(t, err)
		require.Equal(t, "subprocess, os.system and os.popen run commands through the terminal tool, which this execution does not enable\n", res.Output, mode)
		require.Zero(t, res.ToolCallsMade)

		wd := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(wd, "x"), 0o755))
		res, err = ex.Execute(context.Background(), executor.Request{Mode: mode, Sandbox: sandbox, Workdir: wd,
			Code: "import subprocess\nr = subprocess.run(['rm', '-rf', 'x'], capture_output=True, text=True)\nprint(r.returncode, 'needs approval' in r.stderr)\n"})
		require.NoError(t, err)
		require.Equal(t, "126 True\n", res.Output, mode)
		require.DirExists(t, filepath.Join(wd, "x"), "the refused command did not run")
	}
}

// TestWasmPackages: the dirs of code_execution.wasm_packages import in
// strict mode and the sandboxed project mode, read-only, after the
// script's own dir; a missing one is left out.
func TestWasmPackages(t *testing.T) {
	pkgs := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(pkgs, "tinypkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkgs, "tinypkg", "__init__.py"), []byte("def hello():\n    return 'hello from tinypkg'\n"), 0o644))
	cfg := config.Default()
	cfg.CodeExecution.WasmPackages = []string{filepath.Join(t.TempDir(), "missing"), pkgs}
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir()})
	defer ex.Close(context.Background())
	code := `import tinypkg, os
print(tinypkg.hello(), tinypkg.__file__)
try:
    open(os.path.join(os.path.dirname(tinypkg.__file__), "x.py"), "w")
except OSError as e:
    print(type(e).__name__)
`
	for _, sandbox := range []string{"", config.SandboxWasm} {
		mode := config.ModeStrict
		if sandbox != "" {
			mode = config.ModeProject
		}
		for _, session := range []string{"", "pkgs"} {
			res, err := ex.Execute(context.Background(), executor.Request{Code: code, Mode: mode, Sandbox: sandbox, Workdir: t.TempDir(), Session: session})
			require.NoError(t, err)
			require.Equal(t, config.StatusSuccess, res.Status, res.Output)
			require.Equal(t, "hello from tinypkg /.hermes-packages/1/tinypkg/__init__.py\nOSError\n", res.Output, "%s %q", mode, session)
		}
	}
	require.NoFileExists(t, filepath.Join(pkgs, "tinypkg", "x.py"))
}

// With confine_tools_to_workdir the project python's packages, outside the
// working dir by design, still import in the sandboxed project mode
// (before, the confinement refused reading them).
func TestSandboxedPackagesWithConfinement(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the venv layout below is POSIX's")
	}
	venv := corpusVenv(t)
	cfg := config.Default()
	cfg.CodeExecution.Sandbox = config.SandboxWasm
	cfg.CodeExecution.ConfineToolsToWorkdir = true
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(), Environ: append(os.Environ(), "VIRTUAL_ENV="+venv)})
	defer ex.Close(context.Background())
	res, err := ex.Execute(context.Background(), executor.Request{Mode: config.ModeProject, Workdir: t.TempDir(),
		Code: "import fixturepkg\nprint(fixturepkg.greet('confined'))\n"})
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "hello confined\n", res.Output)
}

// TestPoolToolCallsRunConcurrently: in the WASI interpreter a thread
// pool's tasks that are tool calls (pool.map(web_extract, ...),
// pool.submit(partial(read_file, ...))) run concurrently on the host: the
// handler below answers only once all eight calls are in flight at once,
// which sequential calls never are (each would wait for the next).
func TestPoolToolCallsRunConcurrently(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	inFlight := 0
	all := make(chan struct{})
	handler := func(ctx context.Context, args json.RawMessage) map[string]any {
		mu.Lock()
		inFlight++
		if inFlight == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return map[string]any{"results": []any{map[string]any{"url": string(args), "content": "page"}}}
		case <-ctx.Done():
			return map[string]any{"error": "not all calls were in flight at once"}
		}
	}
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(), Tools: map[string]executor.ToolHandler{"web_extract": handler}})
	defer ex.Close(context.Background())
	for _, tc := range []struct{ mode, sandbox string }{{config.ModeStrict, ""}, {config.ModeProject, config.SandboxWasm}} {
		mu.Lock()
		inFlight, all = 0, make(chan struct{})
		mu.Unlock()
		res, err := ex.Execute(context.Background(), executor.Request{Mode: tc.mode, Sandbox: tc.sandbox, Workdir: t.TempDir(), Timeout: 60 * time.Second,
			Code: "from concurrent.futures import ThreadPoolExecutor\nfrom hermes_tools import web_extract\n" +
				"with ThreadPoolExecutor(8) as pool:\n    pages = list(pool.map(web_extract, [['https://example.com/%d' % i] for i in range(8)]))\n" +
				"print([p['results'][0]['content'] for p in pages])\n"})
		require.NoError(t, err)
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		require.Equal(t, "['page', 'page', 'page', 'page', 'page', 'page', 'page', 'page']\n", res.Output, tc.mode)
		require.Equal(t, n, res.ToolCallsMade)
	}
}
