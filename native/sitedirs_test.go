package native

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestSiteDirsRunsNothingOfTheWorkingDir: the site-dirs probe (run for
// the sandboxed project mode, whose scripts write the working dir) imports
// nothing from its cwd and runs no .pth file of the user's site dir. Before,
// it ran python -c "import json, ..." in the executor's cwd, which the CLI's
// default --workdir makes the working dir: a json.py a sandboxed script
// wrote there ran on the host at the next probe; and a .pth file a script
// wrote in ~/.local (a working dir that is the user's home) ran at every
// probe's start.
func TestSiteDirsRunsNothingOfTheWorkingDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the user's site dir is under %APPDATA% on Windows; the probe's code is the same everywhere")
	}
	py := testenv.RealPython(t)
	out, err := exec.Command(py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	require.NoError(t, err)
	home := t.TempDir()
	t.Setenv("HOME", home)
	userSite := filepath.Join(home, ".local", "lib", "python"+strings.TrimSpace(string(out)), "site-packages")
	require.NoError(t, os.MkdirAll(userSite, 0o755))
	marker := filepath.Join(t.TempDir(), "ran")
	plant := "open(" + pyQuote(marker) + ", 'a').write('ran\\n')\n"
	require.NoError(t, os.WriteFile(filepath.Join(userSite, "evil.pth"), []byte("import builtins; exec("+pyQuote(plant)+")\n"), 0o644))
	wd := t.TempDir()
	for _, mod := range []string{"json", "os", "site", "sysconfig", "re"} {
		require.NoError(t, os.WriteFile(filepath.Join(wd, mod+".py"), []byte(plant), 0o644))
	}
	t.Chdir(wd)
	memMu.Lock()
	clear(memCache)
	memMu.Unlock()

	dirs := SiteDirs(context.Background(), py, wd, "")
	require.NoFileExists(t, marker, "the probe ran a file of the working dir or the user's site dir")
	require.NotEmpty(t, dirs)
	if !strings.Contains(py, string(filepath.Separator)+".venv"+string(filepath.Separator)) {
		require.Contains(t, dirs, userSite, "the user's site dir is still listed")
	}
}

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
