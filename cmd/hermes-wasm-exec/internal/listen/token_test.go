package listen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResolveToken: the token comes from the environment, else from
// --token-file (read when it exists, else generated there), else it is
// generated into a new private dir; Close removes what was generated and
// nothing else. Not parallel: it sets HERMES_SERVE_TOKEN.
func TestResolveToken(t *testing.T) {
	t.Setenv(TokenEnv, "")
	t.Setenv("TMPDIR", t.TempDir()) // os.TempDir on Unix
	t.Setenv("TMP", os.Getenv("TMPDIR"))

	// None given: generated into a dir of its own.
	tok, err := ResolveToken("")
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{64}$`, tok.Value)
	require.True(t, tok.Generated)
	b, err := os.ReadFile(tok.File)
	require.NoError(t, err)
	require.Equal(t, tok.Value+"\n", string(b))
	dir := filepath.Dir(tok.File)
	require.Equal(t, filepath.Clean(os.TempDir()), filepath.Dir(dir))
	require.Contains(t, tok.Where(), "a token generated into "+tok.File+" (owner-only; removed when the server exits)")
	requireOwnerOnly(t, tok.File, dir)
	other, err := ResolveToken("")
	require.NoError(t, err)
	require.NotEqual(t, tok.Value, other.Value)
	require.NotEqual(t, tok.File, other.File)
	other.Close()
	tok.Close()
	tok.Close() // idempotent
	require.NoDirExists(t, dir)

	// --token-file that does not exist: generated there, removed by Close.
	file := filepath.Join(t.TempDir(), "tok")
	tok, err = ResolveToken(file)
	require.NoError(t, err)
	require.True(t, tok.Generated)
	requireOwnerOnly(t, file, "")
	// ...and read by the next server while it exists.
	again, err := ResolveToken(file)
	require.NoError(t, err)
	require.False(t, again.Generated)
	require.Equal(t, tok.Value, again.Value)
	require.Equal(t, "the token in "+file, again.Where())
	again.Close()
	require.FileExists(t, file, "a token read is not removed")
	tok.Close()
	require.NoFileExists(t, file)

	// A file the user wrote (spaces around the token are not part of it).
	require.NoError(t, os.WriteFile(file, []byte("  my-token\n"), 0o600))
	tok, err = ResolveToken(file)
	require.NoError(t, err)
	require.Equal(t, "my-token", tok.Value)
	tok.Close()
	require.FileExists(t, file)

	// The environment wins.
	t.Setenv(TokenEnv, "from-env")
	tok, err = ResolveToken(file)
	require.NoError(t, err)
	require.Equal(t, "from-env", tok.Value)
	require.Empty(t, tok.File)
	require.Equal(t, "the token from $HERMES_SERVE_TOKEN", tok.Where())
	t.Setenv(TokenEnv, "")

	for _, tc := range []struct{ content, want string }{
		{"", "is empty: put the token in it, or remove it to have one generated"},
		{" \n\t", "is empty"},
		{"two tokens", "must hold one token on one line"},
		{"a\nb", "must hold one token on one line"},
		{strings.Repeat("x", 5000), "is larger than 4 KiB"},
	} {
		require.NoError(t, os.WriteFile(file, []byte(tc.content), 0o600))
		_, err := ResolveToken(file)
		require.ErrorContains(t, err, tc.want, "%q", tc.content)
		require.ErrorContains(t, err, "--token-file "+file)
	}
	// Not a file.
	_, err = ResolveToken(t.TempDir())
	require.ErrorContains(t, err, "is not a regular file")
}
