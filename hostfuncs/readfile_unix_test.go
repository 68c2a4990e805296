//go:build unix

package hostfuncs

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFileSpecialFiles(t *testing.T) {
	tl, dir := newTestTools(t)
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	tests := []struct {
		path string
		has  string
	}{
		{"pipe", "named pipe (FIFO)"},
		{"/dev/null", "character device"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			// Must answer at once instead of blocking on the open.
			res := callJSON(t, tl, "read_file", map[string]any{"path": tc.path})
			assert.Contains(t, res["error"], tc.has)
			assert.Contains(t, res["error"], "terminal")
			assert.Contains(t, res["error"], "not a regular file")
		})
	}
}
