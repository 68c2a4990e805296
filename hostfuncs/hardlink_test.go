package hostfuncs

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hardlink makes link a second name of target, skipping the test where
// this file system has no hard links.
func hardlink(t *testing.T, target, link string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	if err := os.Link(target, link); err != nil {
		t.Skipf("no hard links here (%v): the identity checks are tested where there are (Linux, macOS, NTFS)", err)
	}
}

// TestHardLinksToSecretsRefused: a hard link in the
// working dir to an env file or a credential file is that file under
// another name, and its path alone said nothing. read_file, patch (both
// modes) and search_files refuse it by its identity, with the refusal of
// the name it shares, and write_file refuses a link to a credential file;
// nothing is read or changed.
func TestHardLinksToSecretsRefused(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	const secret = "API_KEY=sk-secret\n"
	env := writeTestFile(t, e.workdir, ".env", secret)
	prod := writeTestFile(t, e.workdir, "backend/.env.prod", secret)
	auth := writeTestFile(t, e.hermes, "auth.json", `{"token": "sk-secret"}`+"\n")
	key := writeTestFile(t, e.home, ".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY----- sk-secret\n")
	tok := writeTestFile(t, e.hermes, "mcp-tokens/github.json", `{"token": "sk-secret"}`+"\n")

	envReason := ", which is a secret-bearing environment file and cannot be read to prevent credential leakage. " +
		"If you need to check the file structure, read .env.example instead." + notABoundary
	links := map[string]string{ // link (relative to the working dir) -> the refusal's tail
		"notes.txt":          " is a hard link to " + env + envReason,  // the same dir
		"frontend/notes.txt": " is a hard link to " + prod + envReason, // another subtree: the working dir's walk
		"docs/deep/auth.txt": " is a hard link to " + auth + ", which is a Hermes credential store and cannot be read directly. " +
			"Provider tools consume these credentials through internal channels." + notABoundary,
		"key.txt": " is a hard link to " + key + ", which is a protected system/credential file." + notABoundary,
		"tok.txt": " is a hard link to " + tok + ", which is a Hermes MCP token file and cannot be read directly." + notABoundary,
	}
	targets := map[string]string{"notes.txt": env, "frontend/notes.txt": prod, "docs/deep/auth.txt": auth, "key.txt": key, "tok.txt": tok}
	for rel, target := range targets {
		hardlink(t, target, filepath.Join(e.workdir, filepath.FromSlash(rel)))
	}
	wants := map[string][]byte{}
	for _, target := range targets {
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		wants[target] = b
	}

	for rel, tail := range links {
		msg := "Access denied: " + filepath.Join(e.workdir, filepath.FromSlash(rel)) + tail
		t.Run(rel, func(t *testing.T) {
			res := callJSON(t, tl, "read_file", map[string]any{"path": rel})
			assert.Equal(t, map[string]any{"error": msg}, res)
			res = callJSON(t, tl, "patch", map[string]any{"path": rel, "old_string": "\n", "new_string": "\n\n", "replace_all": true})
			assert.Equal(t, map[string]any{"success": false, "error": msg}, res)
			res = callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": "*** Begin Patch\n*** Update File: " + rel + "\n@@\n-nothing\n+x\n*** End Patch"})
			assert.Equal(t, map[string]any{"success": false, "error": msg}, res)
			res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-", "path": rel})
			assert.Equal(t, float64(0), res["total_count"], res)
			assert.Contains(t, res["_omitted"], "1 file(s) omitted", res)
		})
	}
	// A search of the whole working dir finds no secret, and says it left
	// the links out (a link's name tells nothing, so a listing shows it).
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-"})
	assert.Equal(t, float64(0), res["total_count"], res)
	assert.Equal(t, "5 file(s) omitted because they are credential, token, cache, or secret-bearing environment files.", res["_omitted"])

	// write_file: a link to a credential file is refused as the file is.
	res = callJSON(t, tl, "write_file", map[string]any{"path": "key.txt", "content": "attacker"})
	assert.Equal(t, "Write denied: '"+filepath.Join(e.workdir, "key.txt")+"' is a hard link to '"+key+
		"', which is a protected system/credential file.", res["error"])
	for target, want := range wants {
		got, err := os.ReadFile(target)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "changed: %s", target)
	}
}

// TestHardLinkedFilesStillRead: hard links are common (pnpm's node_modules
// are links into its store, cp -al backups), so a file with several links
// none of which is protected reads, patches, searches and writes as before;
// so does a link to an env template.
func TestHardLinkedFilesStillRead(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	store := t.TempDir() // pnpm's content-addressed store, outside the project
	writeTestFile(t, e.workdir, ".env", "API_KEY=sk-secret\n")
	pkg := writeTestFile(t, store, "files/ab/cdef", "module.exports = 'sk-like'\n")
	hardlink(t, pkg, filepath.Join(e.workdir, "node_modules", ".pnpm", "left-pad@1.3.0", "node_modules", "left-pad", "index.js"))
	hardlink(t, pkg, filepath.Join(e.workdir, "node_modules", "left-pad", "index.js"))
	ex := writeTestFile(t, e.workdir, ".env.example", "API_KEY=\n")
	hardlink(t, ex, filepath.Join(e.workdir, "backup", "env-example.txt"))

	res := callJSON(t, tl, "read_file", map[string]any{"path": "node_modules/left-pad/index.js"})
	assert.Equal(t, "1|module.exports = 'sk-like'", res["content"], res)
	res = callJSON(t, tl, "read_file", map[string]any{"path": "backup/env-example.txt"})
	assert.Equal(t, "1|API_KEY=", res["content"], res)
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-like", "path": "node_modules/left-pad"})
	assert.Equal(t, float64(1), res["total_count"], res)
	assert.NotContains(t, res, "_omitted")
	res = callJSON(t, tl, "patch", map[string]any{"path": "node_modules/left-pad/index.js", "old_string": "sk-like", "new_string": "padded"})
	assert.Equal(t, true, res["success"], res)
	res = callJSON(t, tl, "write_file", map[string]any{"path": "backup/env-example.txt", "content": "API_KEY=\nDEBUG=\n"})
	assert.Nil(t, res["error"], res)
}

// TestHardLinksOnRemoteBackend: on a remote target the identity comes from
// the file agent's stat, and the protected names are those of the
// target's home and the file's own dir and those above it.
func TestHardLinksOnRemoteBackend(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake remote target serves a host dir whose stat must carry an inode (Linux, macOS)")
	}
	tl, _, root := newRemoteTools(t, Options{})
	env := writeTestFile(t, root, "srv/app/.env.production", "API_KEY=sk-secret\n")
	key := writeTestFile(t, root, "home/u/.aws/credentials", "aws_secret_access_key=sk-secret\n")
	hardlink(t, env, filepath.Join(root, "srv", "app", "src", "notes.txt"))
	hardlink(t, key, filepath.Join(root, "srv", "app", "aws.txt"))

	res := callJSON(t, tl, "read_file", map[string]any{"path": "src/notes.txt"})
	assert.Equal(t, "Access denied: /srv/app/src/notes.txt is a hard link to /srv/app/.env.production, which is a secret-bearing environment file "+
		"and cannot be read to prevent credential leakage. If you need to check the file structure, read .env.example instead."+notABoundary, res["error"])
	res = callJSON(t, tl, "read_file", map[string]any{"path": "aws.txt"})
	assert.Equal(t, "Access denied: /srv/app/aws.txt is a hard link to /home/u/.aws/credentials, which is a protected system/credential file."+notABoundary, res["error"])
	res = callJSON(t, tl, "write_file", map[string]any{"path": "aws.txt", "content": "x"})
	assert.Equal(t, "Write denied: '/srv/app/aws.txt' is a hard link to '/home/u/.aws/credentials', which is a protected system/credential file.", res["error"])
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-"})
	assert.Equal(t, float64(0), res["total_count"], res)
}

// BenchmarkReadFileHardLinked: read_file of a pnpm-style file (a hard link
// into a store outside the project) in a project of 2,000 files in 200
// dirs beside a node_modules of 5,000 linked files. "first" is a run's
// first such read, which finds the protected names (the fixed locations,
// the working dir's walk); "later" is every read after it in the run;
// "one-link" is a plain file, for comparison.
func BenchmarkReadFileHardLinked(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	store := b.TempDir()
	for i := range 200 {
		for j := range 10 {
			p := filepath.Join(dir, "src", "d"+strconv.Itoa(i), "f"+strconv.Itoa(j)+".go")
			require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(b, os.WriteFile(p, []byte("package x\n"), 0o644))
		}
	}
	for i := range 5000 {
		s := filepath.Join(store, strconv.Itoa(i))
		require.NoError(b, os.WriteFile(s, []byte("module.exports = 1\n"), 0o644))
		l := filepath.Join(dir, "node_modules", ".pnpm", "p"+strconv.Itoa(i/10), "index"+strconv.Itoa(i%10)+".js")
		require.NoError(b, os.MkdirAll(filepath.Dir(l), 0o755))
		if err := os.Link(s, l); err != nil {
			b.Skipf("no hard links here: %v", err)
		}
	}
	b.Setenv("HOME", b.TempDir())
	linked := map[string]any{"path": "node_modules/.pnpm/p7/index3.js"}
	plain := map[string]any{"path": "src/d7/f3.go"}
	newTools := func() *Tools {
		tl, err := New(Options{Workdir: dir, HermesHome: b.TempDir()})
		require.NoError(b, err)
		return tl
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			tl := newTools()
			b.StartTimer()
			require.Contains(b, callJSON(b, tl, "read_file", linked), "content")
		}
	})
	b.Run("later", func(b *testing.B) {
		tl := newTools()
		callJSON(b, tl, "read_file", linked)
		for b.Loop() {
			callJSON(b, tl, "read_file", linked)
		}
	})
	b.Run("one-link", func(b *testing.B) {
		tl := newTools()
		callJSON(b, tl, "read_file", plain)
		for b.Loop() {
			callJSON(b, tl, "read_file", plain)
		}
	})
}
