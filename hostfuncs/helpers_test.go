package hostfuncs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

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
func callJSON(t *testing.T, tl *Tools, tool string, args any) map[string]any {
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
