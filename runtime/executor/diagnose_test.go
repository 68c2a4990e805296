package executor

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

// TestDiagnose: the report names the embedded, verified interpreter, the
// executor's own dirs, and resolves project mode's python with the
// executor's environment, not the process's.
func TestDiagnose(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ex := New(Options{HermesHome: home, Environ: []string{"PATH=" + t.TempDir()}, RPCTransport: native.TransportTCP})
	defer ex.Close(context.Background())
	d := ex.Diagnose(context.Background())
	require.NoError(t, d.Strict.Err)
	require.Equal(t, pyodideassets.SHA256, d.Strict.SHA256)
	require.Equal(t, pyodideassets.RecipeSHA256, d.Strict.RecipeSHA256)
	require.Equal(t, pyodideassets.Size, d.Strict.Size)
	require.Equal(t, config.CacheDir(home), d.CacheDir)
	require.Equal(t, filepath.Join(home, "cache", "exec"), d.SpillDir)
	require.Empty(t, d.Project.Choice.Path, "an empty PATH has no python")
	require.Equal(t, native.TransportTCP, d.Project.Transport)
}
