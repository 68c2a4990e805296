package sessionstore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func newKey(t *testing.T) []byte {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return key
}

// Images are encrypted at rest: the file holds none of the plain bytes, a
// Take gives them back, and a store with another key, or none, refuses it
// saying why.
func TestGuardEncrypts(t *testing.T) {
	root := t.TempDir()
	dir, err := Open(root)
	require.NoError(t, err)
	key := newKey(t)
	g, err := Guard(dir, key, 0)
	require.NoError(t, err)
	plain := bytes.Repeat([]byte("secret variable value "), 100)

	require.NoError(t, g.Put("s", "k", plain))
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.img"))
	require.Len(t, files, 1)
	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NotContains(t, string(raw), "secret variable")
	got, err := g.Take("s", "k")
	require.NoError(t, err)
	require.Equal(t, plain, got)

	require.NoError(t, g.Put("s", "k", plain))
	other, _ := Guard(dir, newKey(t), 0)
	_, err = other.Take("s", "k")
	require.ErrorIs(t, err, ErrSealed)
	require.ErrorContains(t, err, "does not open with "+KeyEnv)

	require.NoError(t, g.Put("s", "k", plain))
	none, _ := Guard(dir, nil, 0)
	_, err = none.Take("s", "k")
	require.ErrorContains(t, err, "encrypted and "+KeyEnv+" is not set")

	require.NoError(t, none.Put("s", "k", plain))
	_, err = g.Take("s", "k")
	require.ErrorContains(t, err, "not encrypted but "+KeyEnv+" is set")

	// A bit flipped in the sealed image is caught.
	require.NoError(t, g.Put("s", "k", plain))
	raw, _ = os.ReadFile(files[0])
	raw[len(raw)-5] ^= 1
	require.NoError(t, os.WriteFile(files[0], raw, 0o600))
	_, err = g.Take("s", "k")
	require.ErrorIs(t, err, ErrSealed)
}

// A session's images together stay within the cap; the image being
// replaced does not count against its replacement.
func TestGuardCapsASession(t *testing.T) {
	dir, err := Open(t.TempDir())
	require.NoError(t, err)
	g, err := Guard(dir, nil, 1000)
	require.NoError(t, err)
	require.NoError(t, g.Put("s", "a", make([]byte, 600)))
	require.NoError(t, g.Put("s", "a", make([]byte, 700)), "replacing a's image")
	err = g.Put("s", "b", make([]byte, 400))
	require.ErrorIs(t, err, ErrTooLarge)
	require.NoError(t, g.Put("s", "b", make([]byte, 300)))
	require.NoError(t, g.Put("t", "a", make([]byte, 1000)), "another session has its own cap")
}

func TestParseKey(t *testing.T) {
	key := newKey(t)
	k, err := ParseKey(hex.EncodeToString(key) + "\n")
	require.NoError(t, err)
	require.Equal(t, key, k)
	_, err = ParseKey("too short")
	require.ErrorContains(t, err, "openssl rand -hex 32")
}
