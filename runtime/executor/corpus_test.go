package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
	"github.com/stretchr/testify/require"
)

// The corpus (testdata/corpus): agent-style scripts over a fixture
// project. Each runs in project mode (the host's python), in the
// sandboxed project mode and in strict mode, each time on a fresh copy of
// the project at the same path:
//   - the sandboxed project mode gives project mode's answer (status,
//     output, exit code) and leaves the same files, on every script whose
//     first line does not start with "# differs:" (those need the network,
//     a compiled package or read what the file-safety rules refuse; each
//     has its expected sandbox answer below);
//   - strict mode answers or gives a hint, and a script that writes files
//     ("# writes") and succeeds has them listed as discarded.

// corpusVenv makes a virtualenv of the host's python3 with a pure-Python
// package, fixturepkg, and a compiled-extension file in it
// (fixturepkg.speedups), and returns its dir.
func corpusVenv(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		require.FailNow(t, "the corpus needs python3 on PATH, with its venv module: install it (apt-get install python3 python3-venv)", "%v", err)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	out, err := exec.Command(python, "-m", "venv", "--without-pip", venv).CombinedOutput()
	require.NoError(t, err, "python3 -m venv failed (apt-get install python3-venv): %s", out)
	bin := filepath.Join(venv, "bin", "python")
	if runtime.GOOS == "windows" {
		bin = filepath.Join(venv, "Scripts", "python.exe")
	}
	out, err = exec.Command(bin, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib']); print(sysconfig.get_config_var('EXT_SUFFIX'))").Output()
	require.NoError(t, err)
	lines := strings.Fields(string(out))
	require.Len(t, lines, 2, "%s", out)
	pkg := filepath.Join(lines[0], "fixturepkg")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "__init__.py"), []byte("def greet(who):\n    return 'hello ' + who\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "speedups"+lines[1]), []byte("not a real shared object"), 0o644))
	return venv
}

// copyTree copies the dir src to dst, which must not exist.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	}))
}

// treeOf lists the files under dir (without __pycache__ dirs), with the
// content hash of the text ones (archives and databases hold timestamps
// and library versions).
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		entry := filepath.ToSlash(rel)
		switch filepath.Ext(p) {
		case ".txt", ".md", ".json", ".csv", ".py", ".ini", ".log":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			entry += " " + hex.EncodeToString(sum[:6])
		}
		out = append(out, entry)
		return nil
	}))
	slices.Sort(out)
	return out
}

// answer is what the corpus compares of a result: the status, the output
// (without stderr, with the spill path named), the exception's last line
// and the exit code.
func answer(r executor.Result) string {
	out := r.Output
	if r.StdoutSpillPath != "" {
		out = strings.ReplaceAll(out, r.StdoutSpillPath, "SPILL")
	}
	out, _, _ = strings.Cut(out, "\n--- stderr ---\n")
	if strings.HasPrefix(out, "--- stderr ---\n") { // nothing printed on stdout
		out = ""
	}
	errLine := ""
	if lines := strings.Split(strings.TrimSpace(r.Error), "\n"); r.Error != "" {
		errLine = lines[len(lines)-1]
	}
	code := "nil"
	if r.ExitCode != nil {
		code = strconv.Itoa(*r.ExitCode)
	}
	return r.Status + " exit " + code + "\n" + out + "\n" + errLine
}

// sandboxExpect is the sandboxed project mode's answer to the scripts
// that differ from project mode: a part of its output, error or hint.
var sandboxExpect = map[string]string{
	"44_env_file.py":         "is a secret-bearing environment file",
	"45_network.py":          "no network: URLError",
	"46_compiled_package.py": "ImportError: True fixturepkg.speedups",
}

// hostNeeds is what a script's "# host needs: MODULE.NAME" line says the
// host's python must have for project mode's answer to be the one to
// compare with.
func hostNeeds(code string) (string, bool) {
	for _, line := range strings.Split(code, "\n") {
		if need, ok := strings.CutPrefix(line, "# host needs: "); ok {
			return strings.TrimSpace(need), true
		}
	}
	return "", false
}

// hostHas reports whether the venv's python has need (MODULE.NAME).
func hostHas(t *testing.T, venv, need string) bool {
	mod, _, _ := strings.Cut(need, ".")
	bin := filepath.Join(venv, "bin", "python")
	err := exec.Command(bin, "-c", "import "+mod+"; "+need).Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return err == nil
}

func TestCorpus(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the corpus's scripts run POSIX commands (ls, wc, sort) through terminal()")
	}
	venv := corpusVenv(t)
	cfg := config.Default()
	ex := executor.New(executor.Options{Config: &cfg, HermesHome: t.TempDir(),
		Environ: append(os.Environ(), "VIRTUAL_ENV="+venv)})
	defer ex.Close(context.Background())

	scripts, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corpus", "scripts", "*.py"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(scripts), 40)
	fixture := filepath.Join("..", "..", "testdata", "corpus", "project")
	work := filepath.Join(t.TempDir(), "project")
	run := func(code, mode, sandbox string) (executor.Result, []string) {
		t.Helper()
		require.NoError(t, os.RemoveAll(work))
		copyTree(t, fixture, work)
		res, err := ex.Execute(context.Background(), executor.Request{Code: code, Mode: mode, Sandbox: sandbox, Workdir: work})
		require.NoError(t, err)
		return res, treeOf(t, work)
	}
	var same, differs int
	for _, path := range scripts {
		name := filepath.Base(path)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		code := string(b)
		t.Run(name, func(t *testing.T) {
			project, projectTree := run(code, config.ModeProject, config.SandboxNone)
			sandboxed, sandboxTree := run(code, config.ModeProject, config.SandboxWasm)
			require.Equal(t, config.SandboxWasm, sandboxed.Sandbox)
			require.Empty(t, project.Sandbox)
			if need, ok := hostNeeds(code); ok && !hostHas(t, venv, need) {
				// An older host python (Debian bookworm's 3.11.2 has no
				// PEP 706 tarfile filters) cannot give the answer to
				// compare with: the sandboxed run, whose interpreter has
				// it, must still succeed on its own.
				t.Logf("the host's python lacks %s: checking the sandboxed answer alone", need)
				require.Equal(t, config.StatusSuccess, sandboxed.Status, "%s", sandboxed.Output)
			} else if strings.HasPrefix(code, "# differs:") {
				differs++
				want, ok := sandboxExpect[name]
				require.True(t, ok, "%s differs from project mode: give its expected sandbox answer in sandboxExpect", name)
				require.Contains(t, sandboxed.Output+sandboxed.Error+sandboxed.Hint+sandboxed.Warning, want)
			} else {
				same++
				require.Equal(t, answer(project), answer(sandboxed), "the sandboxed project mode answers as project mode")
				require.Equal(t, projectTree, sandboxTree, "and leaves the same files")
			}

			strictRes, _ := run(code, config.ModeStrict, "")
			switch {
			case strictRes.Status == config.StatusSuccess:
				if strings.Contains(code, "# writes") {
					require.NotEmpty(t, strictRes.DiscardedFiles, "strict mode lists what it discards")
				}
			default:
				require.NotEmpty(t, strictRes.Hint+strictRes.Warning, "strict mode's failure says why: %s", strictRes.Output)
			}
		})
	}
	t.Logf("%d scripts answer as in project mode, %d differ as expected", same, differs)
}
