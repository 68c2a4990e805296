package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// searchTree builds a working dir exercising ignore rules, hidden entries,
// binaries and symlinks, and returns tools working in it.
func searchTree(t *testing.T) (*Tools, string) {
	t.Helper()
	tl, dir := newTestTools(t)
	files := map[string]string{
		".gitignore":           "# generated\n*.log\nbuild/\n!keep.log\n/rootonly.txt\n",
		"a.py":                 "import os\ndef foo():\n    return 1\n",
		"b.txt":                "foo bar\nbaz\nfoo again\n",
		"debug.log":            "foo in log\n",
		"keep.log":             "foo kept\n",
		"build/out.py":         "foo built\n",
		"rootonly.txt":         "foo top\n",
		"sub/rootonly.txt":     "foo nested rootonly\n",
		"sub/.gitignore":       "*.md\n!important.md\n",
		"sub/x.md":             "foo md\n",
		"sub/important.md":     "foo important\n",
		"sub/debug.log":        "foo sub log\n",
		"sub/deep/c.py":        "def foo(): pass\n",
		"sub/deep/crlf.txt":    "x\r\nfoo crlf\r\n",
		".hidden/h.py":         "foo hidden\n",
		".git/config":          "foo git\n",
		"bin.dat":              "foo\x00bar\n",
		"unicode/naïve_世界.txt": "foo ünïcödé 世界\n",
	}
	for rel, content := range files {
		writeTestFile(t, dir, rel, content)
	}
	// A symlinked file and a symlinked directory (a loop) are not followed.
	_ = os.Symlink("a.py", filepath.Join(dir, "link.py"))
	_ = os.Symlink(".", filepath.Join(dir, "sub", "loop"))
	return tl, dir
}

// matchPaths lists "path:line" (with a "~" suffix for context lines).
func matchPaths(t *testing.T, res map[string]any) []string {
	t.Helper()
	ms, ok := res["matches"].([]any)
	require.True(t, ok, "matches missing: %v", res)
	out := []string{}
	for _, m := range ms {
		mm := m.(map[string]any)
		s := fmt.Sprintf("%s:%v", filepath.ToSlash(mm["path"].(string)), mm["line"])
		if mm["context"] == true {
			s += "~"
		}
		out = append(out, s)
	}
	return out
}

// slashList converts a JSON list of paths to slash form.
func slashList(v any) []string {
	out := []string{}
	for _, p := range v.([]any) {
		out = append(out, filepath.ToSlash(p.(string)))
	}
	return out
}

func TestSearchFilesContent(t *testing.T) {
	tl, _ := searchTree(t)
	tests := []struct {
		name  string
		args  map[string]any
		want  []string
		total int
	}{
		{"gitignore, hidden, binary, symlinks skipped", map[string]any{"pattern": "foo"},
			[]string{"a.py:2", "b.txt:1", "b.txt:3", "keep.log:1", "sub/deep/c.py:1", "sub/deep/crlf.txt:2",
				"sub/important.md:1", "sub/rootonly.txt:1", "unicode/naïve_世界.txt:1"}, 9},
		{"regex", map[string]any{"pattern": `^def\s+foo\(\): pass$`}, []string{"sub/deep/c.py:1"}, 1},
		{"case-insensitive flag", map[string]any{"pattern": `(?i)FOO BAR`}, []string{"b.txt:1"}, 1},
		{"file_glob on base name", map[string]any{"pattern": "foo", "file_glob": "*.py"}, []string{"a.py:2", "sub/deep/c.py:1"}, 2},
		{"file_glob with path", map[string]any{"pattern": "foo", "file_glob": "sub/**/*.txt"},
			[]string{"sub/deep/crlf.txt:2", "sub/rootonly.txt:1"}, 2},
		{"sub path keeps ancestor ignores", map[string]any{"pattern": "foo", "path": "sub"},
			[]string{"sub/deep/c.py:1", "sub/deep/crlf.txt:2", "sub/important.md:1", "sub/rootonly.txt:1"}, 4},
		{"single file", map[string]any{"pattern": "foo", "path": "b.txt"}, []string{"b.txt:1", "b.txt:3"}, 2},
		{"explicit ignored dir is searched", map[string]any{"pattern": "foo", "path": "build"}, []string{"build/out.py:1"}, 1},
		{"no match", map[string]any{"pattern": "nothing-here"}, []string{}, 0},
		{"unicode", map[string]any{"pattern": "世界"}, []string{"unicode/naïve_世界.txt:1"}, 1},
		{"nulls take defaults", map[string]any{"pattern": "baz", "target": nil, "path": nil, "file_glob": nil,
			"limit": nil, "offset": nil, "output_mode": nil, "context": nil}, []string{"b.txt:2"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "search_files", tc.args)
			require.NotContains(t, res, "error")
			assert.Equal(t, tc.want, matchPaths(t, res))
			assert.Equal(t, float64(tc.total), res["total_count"])
			assert.Equal(t, false, res["truncated"])
			assert.NotContains(t, res, "hint")
		})
	}
}

func TestSearchFilesMatchContent(t *testing.T) {
	tl, dir := searchTree(t)
	writeTestFile(t, dir, "long.txt", strings.Repeat("z", 3000)+"needle\n")
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "crlf"})
	ms := res["matches"].([]any)
	require.Len(t, ms, 1)
	m := ms[0].(map[string]any)
	assert.Equal(t, "foo crlf", m["content"], "no trailing CR")
	assert.Equal(t, filepath.Join("sub", "deep", "crlf.txt"), m["path"])
	assert.Equal(t, float64(2), m["line"])
	assert.NotContains(t, m, "context")

	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "needle"})
	ms = res["matches"].([]any)
	require.Len(t, ms, 1)
	content := ms[0].(map[string]any)["content"].(string)
	assert.Equal(t, strings.Repeat("z", searchMaxLineChars)+lineTruncMarker, content)
}

func TestSearchFilesContext(t *testing.T) {
	tl, dir := newTestTools(t)
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		word := "line"
		if i == 5 || i == 6 || i == 15 {
			word = "HIT"
		}
		fmt.Fprintf(&b, "%s %d\n", word, i)
	}
	writeTestFile(t, dir, "f.txt", b.String())
	tests := []struct {
		name  string
		args  map[string]any
		want  []string
		total int
	}{
		{"context 1", map[string]any{"pattern": "HIT", "context": 1},
			[]string{"f.txt:4~", "f.txt:5", "f.txt:6", "f.txt:7~", "f.txt:14~", "f.txt:15", "f.txt:16~"}, 3},
		{"overlapping context not duplicated", map[string]any{"pattern": "HIT", "context": 2},
			[]string{"f.txt:3~", "f.txt:4~", "f.txt:5", "f.txt:6", "f.txt:7~", "f.txt:8~", "f.txt:13~", "f.txt:14~", "f.txt:15", "f.txt:16~", "f.txt:17~"}, 3},
		{"context at file edges", map[string]any{"pattern": "^(line 1|line 20)$", "context": 3},
			[]string{"f.txt:1", "f.txt:2~", "f.txt:3~", "f.txt:4~", "f.txt:17~", "f.txt:18~", "f.txt:19~", "f.txt:20"}, 2},
		{"paged context: match outside the page is context", map[string]any{"pattern": "HIT", "context": 1, "limit": 1},
			[]string{"f.txt:4~", "f.txt:5", "f.txt:6~"}, 3},
		{"paged context: second page", map[string]any{"pattern": "HIT", "context": 1, "limit": 1, "offset": 1},
			[]string{"f.txt:5~", "f.txt:6", "f.txt:7~"}, 3},
		{"negative context is none", map[string]any{"pattern": "HIT", "context": -3},
			[]string{"f.txt:5", "f.txt:6", "f.txt:15"}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "search_files", tc.args)
			require.NotContains(t, res, "error")
			assert.Equal(t, tc.want, matchPaths(t, res))
			assert.Equal(t, float64(tc.total), res["total_count"], "context lines are not counted")
		})
	}
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "HIT 15", "context": 1})
	ms := res["matches"].([]any)
	require.Len(t, ms, 3)
	assert.Equal(t, map[string]any{"path": "f.txt", "line": float64(14), "content": "line 14", "context": true}, ms[0])
}

func TestSearchFilesPaging(t *testing.T) {
	tl, dir := newTestTools(t)
	var b strings.Builder
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	writeTestFile(t, dir, "m.txt", b.String())
	tests := []struct {
		name      string
		offset    int
		want      []string
		truncated bool
		hint      string
	}{
		{"first page", 0, []string{"m.txt:1", "m.txt:2", "m.txt:3"}, true, "Showing matches 1-3 of 7. Use offset=3 to see more."},
		{"middle page", 3, []string{"m.txt:4", "m.txt:5", "m.txt:6"}, true, "Showing matches 4-6 of 7. Use offset=6 to see more."},
		{"last page", 6, []string{"m.txt:7"}, false, ""},
		{"past the end", 50, []string{}, false, "Offset 50 is past the end"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "search_files", map[string]any{"pattern": "match", "limit": 3, "offset": tc.offset})
			assert.Equal(t, tc.want, matchPaths(t, res))
			assert.Equal(t, float64(7), res["total_count"])
			assert.Equal(t, tc.truncated, res["truncated"])
			if tc.hint == "" {
				assert.NotContains(t, res, "hint")
			} else {
				assert.Contains(t, res["hint"], tc.hint)
			}
		})
	}
}

func TestSearchFilesTargetFilesAndModes(t *testing.T) {
	tl, _ := searchTree(t)
	tests := []struct {
		name  string
		args  map[string]any
		key   string
		want  any
		total int
	}{
		{"files by glob", map[string]any{"pattern": "*.py", "target": "files"}, "files",
			[]string{"a.py", "sub/deep/c.py"}, 2},
		{"files by plain word", map[string]any{"pattern": "rootonly", "target": "files"}, "files",
			[]string{"sub/rootonly.txt"}, 1},
		{"files include binaries", map[string]any{"pattern": "*.dat", "target": "files"}, "files",
			[]string{"bin.dat"}, 1},
		{"files with path glob", map[string]any{"pattern": "sub/**/*.txt", "target": "files"}, "files",
			[]string{"sub/deep/crlf.txt", "sub/rootonly.txt"}, 2},
		{"files with file_glob", map[string]any{"pattern": "*", "target": "files", "file_glob": "*.md"}, "files",
			[]string{"sub/important.md"}, 1},
		{"files paged", map[string]any{"pattern": "*", "target": "files", "limit": 2, "offset": 1}, "files",
			[]string{"b.txt", "bin.dat"}, 9},
		{"files_only", map[string]any{"pattern": "foo", "output_mode": "files_only"}, "files",
			[]string{"a.py", "b.txt", "keep.log", "sub/deep/c.py", "sub/deep/crlf.txt", "sub/important.md", "sub/rootonly.txt", "unicode/naïve_世界.txt"}, 8},
		{"count", map[string]any{"pattern": "foo", "output_mode": "count", "path": "."}, "counts",
			map[string]any{"a.py": 1.0, "b.txt": 2.0, "keep.log": 1.0, "sub/deep/c.py": 1.0, "sub/deep/crlf.txt": 1.0,
				"sub/important.md": 1.0, "sub/rootonly.txt": 1.0, "unicode/naïve_世界.txt": 1.0}, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "search_files", tc.args)
			require.NotContains(t, res, "error")
			assert.NotContains(t, res, "matches")
			switch want := tc.want.(type) {
			case []string:
				assert.Equal(t, want, slashList(res[tc.key]))
			case map[string]any:
				got := map[string]any{}
				for k, v := range res[tc.key].(map[string]any) {
					got[filepath.ToSlash(k)] = v
				}
				assert.Equal(t, want, got)
			}
			assert.Equal(t, float64(tc.total), res["total_count"])
		})
	}
}

func TestSearchFilesCountPaging(t *testing.T) {
	tl, dir := newTestTools(t)
	for i := 0; i < 5; i++ {
		writeTestFile(t, dir, fmt.Sprintf("f%d.txt", i), strings.Repeat("x\n", i+1))
	}
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "x", "output_mode": "count", "limit": 2, "offset": 2})
	assert.Equal(t, map[string]any{"f2.txt": 3.0, "f3.txt": 4.0}, res["counts"])
	assert.Equal(t, float64(15), res["total_count"])
	assert.Equal(t, true, res["truncated"])
	assert.Contains(t, res["hint"], "Use offset=4")
}

func TestSearchFilesSkipsLargeFiles(t *testing.T) {
	tl, dir := newTestTools(t)
	big := strings.Repeat("filler line\n", searchMaxFileSize/12+10) + "needle\n"
	writeTestFile(t, dir, "big.txt", big)
	writeTestFile(t, dir, "small.txt", "needle\n")
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "needle"})
	assert.Equal(t, []string{"small.txt:1"}, matchPaths(t, res))
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "*.txt", "target": "files"})
	assert.Equal(t, []string{"big.txt", "small.txt"}, slashList(res["files"]), "listing still names it")
}

func TestSearchFilesOutsideWorkdir(t *testing.T) {
	tl, _ := newTestTools(t)
	other := t.TempDir()
	other, err := filepath.EvalSymlinks(other)
	require.NoError(t, err)
	writeTestFile(t, other, "o.txt", "outside\n")
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "outside", "path": other})
	ms := res["matches"].([]any)
	require.Len(t, ms, 1)
	assert.Equal(t, filepath.Join(other, "o.txt"), ms[0].(map[string]any)["path"], "absolute outside the working dir")
}

func TestSearchFilesErrors(t *testing.T) {
	tl, _ := searchTree(t)
	tests := []struct {
		name   string
		args   any
		errHas string
	}{
		{"bad regex", map[string]any{"pattern": "foo("}, `Invalid regex pattern "foo(": error parsing regexp: missing closing )`},
		{"missing pattern", map[string]any{}, "Invalid arguments for search_files: pattern is required"},
		{"bad target", map[string]any{"pattern": "x", "target": "dirs"}, `target must be "content" or "files", got "dirs"`},
		{"bad output mode", map[string]any{"pattern": "x", "output_mode": "json"}, "output_mode must be"},
		{"bad file glob", map[string]any{"pattern": "x", "file_glob": "[a"}, "file_glob"},
		{"bad files glob", map[string]any{"pattern": "[a", "target": "files"}, "not a valid glob"},
		{"missing path", map[string]any{"pattern": "x", "path": "nope"}, "Path not found: nope"},
		{"wrong type", map[string]any{"pattern": "x", "limit": "ten"}, "Invalid arguments for search_files:"},
		{"unknown key", map[string]any{"pattern": "x", "case": "smart"}, "Invalid arguments for search_files:"},
		{"not an object", json.RawMessage(`42`), "Invalid arguments for search_files:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "search_files", tc.args)
			assert.Contains(t, res["error"], tc.errHas)
		})
	}
}

func TestSearchFilesCancelled(t *testing.T) {
	tl, _ := searchTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := tl.Call(ctx, "search_files", json.RawMessage(`{"pattern": "foo"}`))
	assert.Equal(t, "Search cancelled: context canceled", res["error"])
}

func TestSearchFilesCap(t *testing.T) {
	tl, dir := newTestTools(t)
	writeTestFile(t, dir, "many.txt", strings.Repeat("x\n", searchMaxCounted+500))
	writeTestFile(t, dir, "z.txt", "x\n")
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "x", "limit": 1})
	assert.Equal(t, float64(searchMaxCounted), res["total_count"])
	assert.Equal(t, true, res["truncated"])
	assert.Contains(t, res["hint"], "lower bound")
}

func TestIgnoreTop(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "a", "b"), 0o755))
	assert.Equal(t, repo, ignoreTop(filepath.Join(repo, "a", "b"), dir))
	plain := filepath.Join(dir, "plain", "x")
	require.NoError(t, os.MkdirAll(plain, 0o755))
	assert.Equal(t, dir, ignoreTop(plain, dir))
	assert.Equal(t, plain, ignoreTop(plain, filepath.Join(dir, "elsewhere")))
}

func TestSearchFilesGitRepoAboveWorkdir(t *testing.T) {
	tl, dir := newTestTools(t)
	// The working dir is a subdirectory of a repository whose top-level
	// .gitignore still applies.
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	writeTestFile(t, dir, ".gitignore", "*.gen.go\n")
	writeTestFile(t, dir, "pkg/a.go", "package pkg // marker\n")
	writeTestFile(t, dir, "pkg/a.gen.go", "package pkg // marker\n")
	sub, err := New(Options{Workdir: filepath.Join(dir, "pkg")})
	require.NoError(t, err)
	res := callJSON(t, sub, "search_files", map[string]any{"pattern": "marker"})
	assert.Equal(t, []string{"a.go:1"}, matchPaths(t, res))
	_ = tl
}

// TestNewNeedsAbsoluteWorkdir: the tools never resolve a working dir of
// their own (the executor's rule does, once): a relative or empty one is
// refused.
func TestNewNeedsAbsoluteWorkdir(t *testing.T) {
	for _, wd := range []string{"", ".", "rel/dir"} {
		_, err := New(Options{Workdir: wd})
		require.ErrorContains(t, err, "is not absolute", wd)
	}
}
