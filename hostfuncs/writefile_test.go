package hostfuncs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFileTable(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(t *testing.T, dir string)
		path        string // relative to the working dir
		content     string
		wantTarget  string // relative; defaults to path
		dirsCreated bool
	}{
		{name: "new file", path: "a.txt", content: "hello\n"},
		{name: "nested new dirs", path: "x/y/z/b.txt", content: "deep", dirsCreated: true},
		{name: "existing dir", path: "d/c.txt", content: "c",
			setup: func(t *testing.T, dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755)) }},
		{name: "overwrite", path: "o.txt", content: "new",
			setup: func(t *testing.T, dir string) { writeTestFile(t, dir, "o.txt", "old old old old") }},
		{name: "empty content", path: "empty.txt", content: ""},
		{name: "unicode byte count", path: "u.txt", content: "héllo 世界"},
		{name: "crlf kept verbatim", path: "w.txt", content: "a\r\nb\r\n"},
		{name: "dot segments cleaned", path: "p/../q.txt", content: "q", wantTarget: "q.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl, dir := newTestTools(t)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			res := callJSON(t, tl, "write_file", map[string]any{"path": tc.path, "content": tc.content})
			require.NotContains(t, res, "error")
			target := tc.wantTarget
			if target == "" {
				target = tc.path
			}
			abs := filepath.Join(dir, filepath.FromSlash(target))
			assert.Equal(t, float64(len(tc.content)), res["bytes_written"])
			assert.Equal(t, tc.dirsCreated, res["dirs_created"])
			assert.Equal(t, abs, res["resolved_path"])
			assert.Equal(t, []any{abs}, res["files_modified"])
			got, err := os.ReadFile(abs)
			require.NoError(t, err)
			assert.Equal(t, tc.content, string(got))
			assertNoTempFiles(t, filepath.Dir(abs))
		})
	}
}

// assertNoTempFiles checks that no write left a temp file behind in dir.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), ".hermes-tmp-"), "left over temp file %s", e.Name())
	}
}

func TestWriteFileKeepsMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no POSIX permission bits (os.Chmod only sets the read-only attribute): the kept mode is tested on Linux and macOS")
	}
	tl, dir := newTestTools(t)
	p := writeTestFile(t, dir, "script.sh", "#!/bin/sh\n")
	require.NoError(t, os.Chmod(p, 0o750))
	res := callJSON(t, tl, "write_file", map[string]any{"path": "script.sh", "content": "#!/bin/sh\necho hi\n"})
	require.NotContains(t, res, "error")
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())

	res = callJSON(t, tl, "write_file", map[string]any{"path": "fresh.txt", "content": "x"})
	require.NotContains(t, res, "error")
	fi, err = os.Stat(filepath.Join(dir, "fresh.txt"))
	require.NoError(t, err)
	assert.Equal(t, newFileMode, fi.Mode().Perm())
}

func TestWriteFileSymlinks(t *testing.T) {
	tl, dir := newTestTools(t)
	target := writeTestFile(t, dir, "real/target.txt", "old")
	link := filepath.Join(dir, "link.txt")
	symlink(t, filepath.Join("real", "target.txt"), link)
	res := callJSON(t, tl, "write_file", map[string]any{"path": "link.txt", "content": "new"})
	require.NotContains(t, res, "error")
	assert.Equal(t, target, res["resolved_path"])
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link must stay a link")

	// A dangling link gets its target created.
	symlink(t, filepath.Join("made", "here.txt"), filepath.Join(dir, "dangling"))
	res = callJSON(t, tl, "write_file", map[string]any{"path": "dangling", "content": "made"})
	require.NotContains(t, res, "error")
	assert.Equal(t, true, res["dirs_created"])
	got, err = os.ReadFile(filepath.Join(dir, "made", "here.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made", string(got))

	// A link loop is an error, not a hang.
	require.NoError(t, os.Symlink("loop2", filepath.Join(dir, "loop1")))
	require.NoError(t, os.Symlink("loop1", filepath.Join(dir, "loop2")))
	res = callJSON(t, tl, "write_file", map[string]any{"path": "loop1", "content": "x"})
	assert.Contains(t, res["error"], "too many levels of symbolic links")
}

func TestWriteFileErrors(t *testing.T) {
	tl, dir := newTestTools(t)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "adir"), 0o755))
	writeTestFile(t, dir, "file.txt", "keep")
	tests := []struct {
		name   string
		args   any
		errHas string
	}{
		{"missing content", map[string]any{"path": "a.txt"}, "Invalid arguments for write_file: content is required"},
		{"null content", map[string]any{"path": "a.txt", "content": nil}, "Invalid arguments for write_file: content is required"},
		{"missing path", map[string]any{"content": "x"}, "Invalid arguments for write_file: path is required"},
		{"content not a string", map[string]any{"path": "a.txt", "content": 5}, "Invalid arguments for write_file:"},
		{"unknown key", map[string]any{"path": "a.txt", "content": "x", "mode": "append"}, "Invalid arguments for write_file:"},
		{"target is a directory", map[string]any{"path": "adir", "content": "x"}, "it is a directory"},
		{"parent is a file", map[string]any{"path": "file.txt/child.txt", "content": "x"}, "Failed to"},
		{"not an object", json.RawMessage(`"x"`), "Invalid arguments for write_file:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "write_file", tc.args)
			assert.Contains(t, res["error"], tc.errHas)
			assert.NotContains(t, res, "bytes_written")
		})
	}
	got, err := os.ReadFile(filepath.Join(dir, "file.txt"))
	require.NoError(t, err)
	assert.Equal(t, "keep", string(got))
	_, err = os.Stat(filepath.Join(dir, "a.txt"))
	assert.True(t, os.IsNotExist(err))
}

func TestWriteFileFailureLeavesOriginal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no POSIX directory permissions to make the rename fail (a read-only attribute on a directory does not stop writes into it): tested on Linux and macOS")
	}
	// Root ignores POSIX permissions, which make the rename fail here.
	if !testenv.Unprivileged(t) {
		return
	}
	tl, dir := newTestTools(t)
	p := writeTestFile(t, dir, "ro/file.txt", "original")
	require.NoError(t, os.Chmod(filepath.Dir(p), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Dir(p), 0o755) })
	res := callJSON(t, tl, "write_file", map[string]any{"path": "ro/file.txt", "content": "replacement"})
	assert.Contains(t, res["error"], "Failed to write 'ro/file.txt'")
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "original", string(got))
	assertNoTempFiles(t, filepath.Dir(p))
}

func TestAtomicWriteRenameFailureCleansUp(t *testing.T) {
	dir := t.TempDir()
	// Renaming a file over a non-empty directory fails after the temp file
	// was written: the temp file must be gone and the directory intact.
	target := filepath.Join(dir, "occupied")
	require.NoError(t, os.MkdirAll(filepath.Join(target, "inner"), 0o755))
	err := atomicWrite(target, []byte("data"), 0o644)
	require.Error(t, err)
	assertNoTempFiles(t, dir)
	fi, err := os.Stat(target)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
}
