package hostfuncs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
)

// TestHardLinksThroughFileAgent: a real remote backend (exec with the
// prefix `env`, this host as the target) whose file agent reports each
// file's links, device and inode: a hard link in its working dir to an env
// file or to a credential file of the target's home is refused.
func TestHardLinksThroughFileAgent(t *testing.T) {
	e := newSafetyEnv(t) // HOME: the target's home, as the agent learns it
	b, err := backend.NewExec(context.Background(), backend.ExecOptions{Prefix: []string{"env"}, Cwd: e.workdir, ClientEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.home}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.Equal(t, e.home, b.Home())
	tl, err := New(Options{Workdir: e.workdir, backend: b})
	require.NoError(t, err)

	env := writeTestFile(t, e.workdir, "api/.env.local.bak", "API_KEY=sk-secret\n")
	key := writeTestFile(t, e.home, ".ssh/id_rsa", "sk-secret\n")
	hardlink(t, env, filepath.Join(e.workdir, "api", "v1", "notes.txt"))
	hardlink(t, key, filepath.Join(e.workdir, "id.txt"))

	res := callJSON(t, tl, "read_file", map[string]any{"path": "api/v1/notes.txt"})
	assert.Equal(t, "Access denied: "+filepath.Join(e.workdir, "api", "v1", "notes.txt")+" is a hard link to "+env+
		", which is a secret-bearing environment file and cannot be read to prevent credential leakage. "+
		"If you need to check the file structure, read .env.example instead."+notABoundary, res["error"])
	res = callJSON(t, tl, "patch", map[string]any{"path": "id.txt", "old_string": "sk", "new_string": "xx"})
	assert.Equal(t, "Access denied: "+filepath.Join(e.workdir, "id.txt")+" is a hard link to "+key+
		", which is a protected system/credential file."+notABoundary, res["error"])
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-"})
	assert.Equal(t, float64(0), res["total_count"], res)
	assert.Contains(t, res["_omitted"], "2 file(s) omitted", res)
}
