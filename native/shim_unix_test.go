//go:build unix

package native

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePyenv makes a pyenv-like layout: shims/python3 execs the manager,
// which logs each call and runs the python named in the nearest
// .python-version (or the root's version file).
func fakePyenv(t *testing.T, python string) (root, shim, log string) {
	t.Helper()
	root = t.TempDir()
	log = filepath.Join(root, "calls.log")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "shims"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "libexec"), 0o755))
	shim = filepath.Join(root, "shims", "python3")
	require.NoError(t, os.WriteFile(shim, []byte("#!/bin/sh\nexec \""+root+"/libexec/pyenv\" exec \"${0##*/}\" \"$@\"\n"), 0o755))
	manager := `#!/bin/sh
echo call >> "` + log + `"
shift; shift
d=$PWD; v=
while [ -n "$d" ]; do if [ -f "$d/.python-version" ]; then v=$(cat "$d/.python-version"); break; fi; [ "$d" = / ] && break; d=$(dirname "$d"); done
[ -n "$v" ] || v=$(cat "` + root + `/version")
exec "$v" "$@"
`
	require.NoError(t, os.WriteFile(filepath.Join(root, "libexec", "pyenv"), []byte(manager), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "version"), []byte(python+"\n"), 0o644))
	return root, shim, log
}

func calls(t *testing.T, log string) int {
	data, _ := os.ReadFile(log)
	return strings.Count(string(data), "call")
}

func TestResolveThroughShim(t *testing.T) {
	py := testenv.RealPython(t)
	root, shim, log := fakePyenv(t, py)
	assert.Equal(t, "pyenv", shimKind(shim))
	assert.Equal(t, "", shimKind(py))
	env := map[string]string{"PATH": filepath.Join(root, "shims"), "PYENV_ROOT": root, "HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	dir := t.TempDir()
	cacheFile := filepath.Join(t.TempDir(), ProbeCacheName)
	resolve := func() Choice { return ResolveIn(context.Background(), getenv, dir, cacheFile) }

	c := resolve()
	require.Equal(t, py, c.Path, "%+v", c)
	assert.Equal(t, shim, c.Shim)
	assert.Contains(t, c.Describe(), "through the shim "+shim+", started directly")
	assert.Equal(t, 1, calls(t, log))

	// Cached: no shim start.
	c = resolve()
	assert.Equal(t, py, c.Path)
	assert.Equal(t, 1, calls(t, log))
	// In another process too (the file): no shim start.
	memMu.Lock()
	clear(memCache)
	memMu.Unlock()
	c = resolve()
	assert.Equal(t, py, c.Path)
	assert.Equal(t, shim, c.Shim)
	assert.Equal(t, 1, calls(t, log))

	// A .python-version in the session dir's parents changes the answer.
	other := filepath.Join(t.TempDir(), "python3-other")
	require.NoError(t, os.Symlink(py, other))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(dir), ".python-version"), []byte(other+"\n"), 0o644))
	c = resolve()
	assert.Equal(t, 2, calls(t, log))
	assert.Equal(t, shim, c.Shim)
	assert.NotEmpty(t, c.Path)

	// PYENV_VERSION is part of the key too.
	env["PYENV_VERSION"] = "3.x"
	resolve()
	assert.Equal(t, 3, calls(t, log))

	// A shim whose python does not run is skipped with the reason.
	require.NoError(t, os.WriteFile(filepath.Join(root, "version"), []byte("/nonexistent/python\n"), 0o644))
	env["PYENV_VERSION"] = ""
	os.Remove(filepath.Join(filepath.Dir(dir), ".python-version"))
	c = resolve()
	assert.Equal(t, "", c.Path)
	require.Len(t, c.Skipped, 1)
	assert.Contains(t, c.Skipped[0], shim)
}
