package hostfuncs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

// wineNoSymlinks says why the symlink tests skip under wine, and where
// what they check is tested instead.
const wineNoSymlinks = "wine has no symbolic links (CreateSymbolicLinkW reports success and creates nothing, " +
	"FSCTL_SET_REPARSE_POINT is unsupported); link resolution is tested on Linux and macOS and on a Windows " +
	"that may create symlinks, Windows junctions and path spellings by TestRealPathJunction and TestRealPathWindowsSpellings"

// symlinksUnavailable returns why this host cannot make symlinks, or ""
// when it can; probed once per test binary.
var symlinksUnavailable = sync.OnceValue(func() string {
	if testenv.UnderWine() {
		return wineNoSymlinks
	}
	dir, err := os.MkdirTemp("", "symlink-probe")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(dir)
	if err := os.Symlink("target", filepath.Join(dir, "link")); err != nil && runtime.GOOS == "windows" {
		return "Windows without the symlink privilege (Developer Mode off, not elevated): " + err.Error() +
			"; link resolution is tested on Linux and macOS and on a Windows that may create symlinks"
	}
	return ""
})

// skipWithoutSymlinks skips t where the host cannot make symlinks, saying
// why.
func skipWithoutSymlinks(t *testing.T) {
	t.Helper()
	if why := symlinksUnavailable(); why != "" {
		testenv.SkipUnderWine(t, why)
		t.Skip(why)
	}
}

// symlink makes link point at target, skipping the test where the host
// cannot make symlinks.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	skipWithoutSymlinks(t)
	require.NoError(t, os.Symlink(target, link))
	_, err := os.Lstat(link)
	require.NoError(t, err, "the link must exist once made")
}

// newTestTools returns tools working in a fresh temp dir, with PATH passed
// through so terminal can find commands.
func newTestTools(t *testing.T) (*Tools, string) {
	t.Helper()
	dir := t.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	tl, err := New(Options{Workdir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}})
	require.NoError(t, err)
	return tl, dir
}

// callJSON calls tool with args (marshalled, or used as is when already a
// json.RawMessage) and returns the result as the script sees it: through a
// JSON round trip, so numbers are float64.
func callJSON(t testing.TB, tl *Tools, tool string, args any) map[string]any {
	t.Helper()
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		raw, err = json.Marshal(args)
		require.NoError(t, err)
	}
	res := tl.Call(context.Background(), tool, raw)
	enc, err := json.Marshal(res)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(enc, &out))
	return out
}

// writeTestFile writes content to rel under dir, creating parents.
func writeTestFile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// pyUnquote is the value of the Python string literal lit (see humanpath.PyLiteral): a
// raw r"..." string or a "..." one with the escapes Go shares with Python.
func pyUnquote(t *testing.T, lit string) string {
	t.Helper()
	if raw, ok := strings.CutPrefix(lit, "r"); ok {
		require.True(t, len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"', lit)
		return raw[1 : len(raw)-1]
	}
	s, err := strconv.Unquote(lit)
	require.NoError(t, err, lit)
	return s
}
