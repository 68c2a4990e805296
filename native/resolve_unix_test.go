//go:build unix

package native

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
