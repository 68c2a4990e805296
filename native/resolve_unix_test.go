//go:build unix

package native

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

// fakePython writes an executable that behaves like a python printing
// version, or fails when version is empty.
func fakePython(t *testing.T, path, version string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	script := "#!/bin/sh\necho " + version + "\n"
	if version == "" {
		script = "#!/bin/sh\necho 'broken interpreter' >&2\nexit 1\n"
	}
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
}

func TestResolve(t *testing.T) {
	venv := t.TempDir()
	conda := t.TempDir()
	pathDir := t.TempDir()
	fakePython(t, filepath.Join(pathDir, "python3"), "3.10.2")

	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	ctx := context.Background()

	t.Run("venv first", func(t *testing.T) {
		fakePython(t, filepath.Join(venv, "bin", "python"), "3.12.1")
		fakePython(t, filepath.Join(conda, "bin", "python"), "3.11.0")
		c := Resolve(ctx, env(map[string]string{"VIRTUAL_ENV": venv, "CONDA_PREFIX": conda, "PATH": pathDir}))
		require.Equal(t, filepath.Join(venv, "bin", "python"), c.Path)
		require.Equal(t, "3.12.1", c.Version)
		require.Equal(t, "VIRTUAL_ENV", c.Source)
	})
	t.Run("broken venv skipped, conda used", func(t *testing.T) {
		fakePython(t, filepath.Join(venv, "bin", "python"), "")
		fakePython(t, filepath.Join(venv, "bin", "python3"), "3.7.9")
		c := Resolve(ctx, env(map[string]string{"VIRTUAL_ENV": venv, "CONDA_PREFIX": conda}))
		require.Equal(t, "CONDA_PREFIX", c.Source)
		require.Len(t, c.Skipped, 2)
		require.Contains(t, c.Skipped[0], "does not run")
		require.Contains(t, c.Skipped[1], "Python 3.7.9 is older than 3.8") // the text the agent sees in the warning
	})
	t.Run("PATH", func(t *testing.T) {
		c := Resolve(ctx, env(map[string]string{"PATH": "relative:" + pathDir}))
		require.Equal(t, filepath.Join(pathDir, "python3"), c.Path)
		require.Equal(t, "PATH", c.Source)
	})
	t.Run("probed once per file version", func(t *testing.T) {
		dir := t.TempDir()
		py := filepath.Join(dir, "python3")
		fakePython(t, py, "3.9.1")
		require.Equal(t, "3.9.1", Resolve(ctx, env(map[string]string{"PATH": dir})).Version)
		// Same file version: the cached answer, even though the file now
		// counts its runs.
		counter := filepath.Join(dir, "runs")
		require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\necho x >> "+counter+"\necho 3.9.2\n"), 0o755))
		c := Resolve(ctx, env(map[string]string{"PATH": dir}))
		require.Equal(t, "3.9.2", c.Version, "a changed file is probed again")
		for range 3 {
			Resolve(ctx, env(map[string]string{"PATH": dir}))
		}
		b, err := os.ReadFile(counter)
		require.NoError(t, err)
		require.Equal(t, "x\n", string(b), "probed once")
	})
	t.Run("nothing usable: embedded", func(t *testing.T) {
		c := Resolve(ctx, env(map[string]string{"PATH": t.TempDir(), "VIRTUAL_ENV": t.TempDir()}))
		require.Empty(t, c.Path)
		require.Len(t, c.Skipped, 1)
		require.Contains(t, c.Skipped[0], "no python in it")
		require.Contains(t, c.Describe(), "embedded WASI CPython")
		require.Equal(t, "embedded", c.Source)
	})
}

// runsMarker writes an executable that records its runs in marker and
// answers as a python of version would.
func runsMarker(t *testing.T, path, marker, version string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho "+path+" >> "+marker+"\necho "+version+"\n"), 0o755))
}

// TestResolveSandboxed: the sandboxed project mode's resolution runs no
// interpreter the working dir holds or selects, where ResolveIn runs them:
// a virtualenv there (its site-packages found from its layout instead), a
// PATH python there, a venv whose pyvenv.cfg names a home there, a shim
// whose version file there names a python by path; and the probes it runs
// get no PATH entry there. Before, a sandboxed script that replaced one of
// them had its program run on the host by the next call's probe.
func TestResolveSandboxed(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	marker := filepath.Join(t.TempDir(), "runs")
	ran := func() string { b, _ := os.ReadFile(marker); return string(b) }
	outside := t.TempDir()
	runsMarker(t, filepath.Join(outside, "python3"), marker, "3.11.1")

	t.Run("venv in the working dir", func(t *testing.T) {
		venv := filepath.Join(wd, ".venv")
		runsMarker(t, filepath.Join(venv, "bin", "python"), marker, "3.12.1")
		site := filepath.Join(venv, "lib", "python3.12", "site-packages")
		require.NoError(t, os.MkdirAll(site, 0o755))
		getenv := env(map[string]string{"VIRTUAL_ENV": venv, "PATH": outside})
		c := ResolveSandboxed(ctx, getenv, wd, "")
		require.Empty(t, c.Path)
		require.Equal(t, "VIRTUAL_ENV", c.Source)
		require.Equal(t, []string{site}, c.Sites)
		require.Empty(t, ran(), "nothing was run")
		require.Equal(t, filepath.Join(venv, "bin", "python"), ResolveIn(ctx, getenv, wd, "").Path, "ResolveIn (project mode) runs it")
		require.NoError(t, os.Remove(marker))
	})
	t.Run("PATH entry in the working dir", func(t *testing.T) {
		bin := filepath.Join(wd, "bin")
		runsMarker(t, filepath.Join(bin, "python3"), marker, "3.12.1")
		c := ResolveSandboxed(ctx, env(map[string]string{"PATH": bin + string(os.PathListSeparator) + outside}), wd, "")
		require.Equal(t, filepath.Join(outside, "python3"), c.Path, "the first python on PATH outside the working dir")
		require.Equal(t, filepath.Join(outside, "python3")+"\n", ran(), "only the one outside ran")
		require.NoError(t, os.Remove(marker))
	})
	t.Run("pyvenv.cfg home in the working dir", func(t *testing.T) {
		venv := filepath.Join(t.TempDir(), "venv")
		runsMarker(t, filepath.Join(venv, "bin", "python"), marker, "3.12.1")
		require.NoError(t, os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte("home = "+filepath.Join(wd, "base", "bin")+"\n"), 0o644))
		c := ResolveSandboxed(ctx, env(map[string]string{"VIRTUAL_ENV": venv}), wd, "")
		require.Empty(t, c.Path)
		require.Contains(t, c.Skipped[0], "names a home in the working dir")
		require.Empty(t, ran())
	})
	t.Run("shim version file naming a path", func(t *testing.T) {
		py := filepath.Join(wd, "evil", "python3")
		runsMarker(t, py, marker, "3.12.1")
		real := testenv.RealPython(t)
		root, _, log := fakePyenv(t, real)
		require.NoError(t, os.WriteFile(filepath.Join(wd, ".python-version"), []byte(py+"\n"), 0o644))
		getenv := env(map[string]string{"PATH": filepath.Join(root, "shims"), "PYENV_ROOT": root, "HOME": t.TempDir()})
		c := ResolveSandboxed(ctx, getenv, wd, "")
		require.Empty(t, c.Path)
		require.Contains(t, c.Skipped[0], "names python "+py)
		require.Empty(t, ran())
		require.Zero(t, calls(t, log), "the shim was not run")
		// Without it the shim is probed (the fake manager then runs the
		// python of its root's version file, outside the working dir).
		require.NoError(t, os.Remove(filepath.Join(wd, ".python-version")))
		c = ResolveSandboxed(ctx, getenv, wd, "")
		require.Equal(t, real, c.Path, "%+v", c)
		require.Equal(t, 1, calls(t, log))
		require.Empty(t, ran())
	})
	t.Run("asdf path: versions", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), ".tool-versions")
		require.NoError(t, os.WriteFile(f, []byte("nodejs 20.1.0\npython 3.12.1 path:/x # comment\n"), 0o644))
		require.Equal(t, "path:/x", pathVersion(f))
		require.NoError(t, os.WriteFile(f, []byte("python 3.12.1 system\n"), 0o644))
		require.Empty(t, pathVersion(f))
	})
	t.Run("probe PATH", func(t *testing.T) {
		h := newHeld(wd)
		sep := string(os.PathListSeparator)
		require.Equal(t, "/usr/bin"+sep+outside, h.path(filepath.Join(wd, "bin")+sep+"/usr/bin"+sep+"."+sep+sep+"rel"+sep+outside))
		require.Equal(t, "a"+sep+"b", held{}.path("a"+sep+"b"), "ResolveIn's probes get PATH as it is")
	})
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
