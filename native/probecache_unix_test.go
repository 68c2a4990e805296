//go:build unix

package native

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProbeCacheOthersCouldWriteIsNotUsed: the probe cache names the
// interpreter the executor runs, so a cache file another user could have
// written is not read: the interpreter is probed again (before, a planted
// entry chose the python project mode ran).
func TestProbeCacheOthersCouldWriteIsNotUsed(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	planted := filepath.Join(dir, "planted-python")
	require.NoError(t, os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o700))
	file := filepath.Join(dir, ProbeCacheName)
	data, err := json.Marshal(map[string]diskEntry{"key": {Python: planted, Version: "3.11.0"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o600))

	probe := func(mode os.FileMode) string {
		require.NoError(t, os.Chmod(file, mode))
		memMu.Lock()
		clear(memCache)
		memMu.Unlock()
		python, _, err := cachedProbe(context.Background(), "key", file, func() (string, string, error) {
			return "/probed/python", "3.11.7", nil
		})
		require.NoError(t, err)
		return python
	}
	require.Equal(t, planted, probe(0o600), "a private file is used")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	require.Equal(t, "/probed/python", probe(0o666), "a file writable by every user is not")
}

// TestProbeCacheDiskHitKeptInMemory: an answer read from the file is kept
// in memory, so a long-lived process reads the file once, not on every
// call (serve's project-mode calls each re-read and decoded it, ~1 ms).
func TestProbeCacheDiskHitKeptInMemory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	python := filepath.Join(dir, "python")
	require.NoError(t, os.WriteFile(python, []byte("#!/bin/sh\n"), 0o700))
	file := filepath.Join(dir, ProbeCacheName)
	data, err := json.Marshal(map[string]diskEntry{"kept": {Python: python, Version: "3.12.1"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o600))
	memMu.Lock()
	clear(memCache)
	memMu.Unlock()
	probe := func() (string, string, error) { t.Fatal("the interpreter was probed"); return "", "", nil }
	_, v, err := cachedProbe(context.Background(), "kept", file, probe)
	require.NoError(t, err)
	require.Equal(t, "3.12.1", v)
	require.NoError(t, os.Remove(file))
	_, v, err = cachedProbe(context.Background(), "kept", file, probe)
	require.NoError(t, err)
	require.Equal(t, "3.12.1", v, "answered from memory, without the file")
}
