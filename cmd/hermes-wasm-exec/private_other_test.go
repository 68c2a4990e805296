//go:build !windows

package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// requirePrivateFile checks that only its owner may open path: mode 0600.
func requirePrivateFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
