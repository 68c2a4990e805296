package hostfuncs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/stretchr/testify/require"
)

// TestStatePaths: the executor's state is every protected Hermes home's
// caches, configuration and credential stores, its profiles but the one
// in use (whose own state is listed), and the compilation cache dir.
func TestStatePaths(t *testing.T) {
	user := t.TempDir()
	t.Setenv("HOME", user)
	t.Setenv("USERPROFILE", user)
	t.Setenv("HERMES_HOME", "")
	t.Setenv(config.CacheDirEnv, "")
	root := realOrSelf(filepath.Join(user, ".hermes"))
	for _, p := range []string{"work", "other"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "profiles", p), 0o700))
	}
	wasm := filepath.Join(t.TempDir(), "wasm")
	in := func(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }

	got := StatePaths(in("profiles", "work"), wasm)
	for _, want := range []string{
		in("config.yaml"), in("cache"), in(".env"), in("auth.json"), in("mcp-tokens"), in("sessions"), in("state.db"),
		in("profiles", "other"),
		in("profiles", "work", "config.yaml"), in("profiles", "work", "cache"), in("profiles", "work", ".env"),
		wasm,
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, in("profiles"), "the profile in use is not protected whole")
	require.NotContains(t, got, in("profiles", "work"))
	require.NotContains(t, got, in("skills"), "skills and memories are the user's")

	got = StatePaths("", "")
	require.Contains(t, got, in("profiles"), "no profile in use: every profile")
	require.Contains(t, got, in("cache"))
}
