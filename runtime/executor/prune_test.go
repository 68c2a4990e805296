package executor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPruneSpills(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for name, age := range map[string]time.Duration{
		"stdout-aaaaaaaaaaaa.txt": 8 * 24 * time.Hour,
		"stdout-bbbbbbbbbbbb.txt": time.Hour,
		"notes.txt":               30 * 24 * time.Hour,
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
	}
	pruneSpills(dir, SpillRetention, now)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"notes.txt", "stdout-bbbbbbbbbbbb.txt"}, names)
}
