package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func patchTestTools(t *testing.T) (*Tools, string) {
	t.Helper()
	dir := t.TempDir()
	tl, err := New(Options{Workdir: dir})
	require.NoError(t, err)
	return tl, tl.Workdir()
}

func patchTestCall(t *testing.T, tl *Tools, args map[string]any) result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	res := tl.Call(context.Background(), "patch", raw)
	// Every result must survive the JSON round trip to the script.
	_, err = json.Marshal(res)
	require.NoError(t, err)
	return res
}

func patchTestWrite(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func patchTestRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestPatchReplaceTable(t *testing.T) {
	cases := []struct {
		name       string
		file       string
		old, new   string
		replaceAll bool
		want       string // expected content on success
		wantErr    string // exact error, or prefix when errPrefix
		errPrefix  bool
	}{
		{name: "exact single", file: "a\nfoo()\nb\n", old: "foo()", new: "bar()", want: "a\nbar()\nb\n"},
		{name: "exact multi-line", file: "x = 1\ny = 2\nz = 3\n", old: "x = 1\ny = 2\n", new: "x = 10\n", want: "x = 10\nz = 3\n"},
		{name: "multiple matches", file: "x\nx\n", old: "x", new: "y",
			wantErr: "Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True."},
		{name: "replace_all", file: "x\nx\nx\n", old: "x", new: "y", replaceAll: true, want: "y\ny\ny\n"},
		{name: "replace_all single match", file: "a x b\n", old: "x", new: "y", replaceAll: true, want: "a y b\n"},
		{name: "delete text", file: "keep\ndrop\nkeep2\n", old: "drop\n", new: "", want: "keep\nkeep2\n"},
		{name: "trailing whitespace drift in file",
			file: "def f():   \n    return 1\t\n", old: "def f():\n    return 1", new: "def f():\n    return 2",
			want: "def f():\n    return 2\n"},
		{name: "trailing whitespace drift in old_string",
			file: "a\nb\nc\n", old: "a  \nb ", new: "A\nB", want: "A\nB\nc\n"},
		{name: "indentation drift re-indents",
			file: "class A:\n    def f(self):\n        return 1\n",
			old:  "def f(self):\n    return 1", new: "def f(self):\n    x = 1\n    return x",
			want: "class A:\n    def f(self):\n        x = 1\n        return x\n"},
		{name: "indentation drift dedents",
			file: "def f():\n  return 1\n",
			old:  "        def f():\n          return 1\n", new: "        def g():\n          return 2\n",
			want: "def g():\n  return 2\n"},
		{name: "spaces old_string against tab file",
			file: "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n",
			old:  "    if x {\n        return 1\n    }", new: "    if x {\n        return 2\n    }",
			want: "func f() {\n\tif x {\n\t\treturn 2\n\t}\n}\n"},
		{name: "CRLF file with LF old_string stays CRLF",
			file: "a\r\nb\r\nc\r\n", old: "a\nb", new: "x\ny", want: "x\r\ny\r\nc\r\n"},
		{name: "CRLF file replace_all maps every match back",
			file: "a\r\nb\r\nmid\r\na\r\nb\r\nend\r\na\r\nb", old: "a\nb", new: "x\ny\nz", replaceAll: true,
			want: "x\r\ny\r\nz\r\nmid\r\nx\r\ny\r\nz\r\nend\r\nx\r\ny\r\nz"},
		{name: "indentation drift replace_all, each match its own indent",
			file: "  k = 1\n    k = 1\n", old: "      k = 1", new: "      k = 2\n      j = 3", replaceAll: true,
			want: "  k = 2\n  j = 3\n    k = 2\n    j = 3\n"},
		{name: "CRLF file single line new gets CRLF",
			file: "a\r\nb\r\n", old: "b", new: "b\nc", want: "a\r\nb\r\nc\r\n"},
		{name: "CRLF old_string against LF file",
			file: "a\nb\nc\n", old: "a\r\nb", new: "x\r\ny", want: "x\ny\nc\n"},
		{name: "CRLF file with indentation drift",
			file: "if x:\r\n    y()\r\n", old: "\ty()", new: "\tz()\n\tw()", want: "if x:\r\n    z()\r\n    w()\r\n"},
		{name: "not found", file: "alpha\nbeta\n", old: "gamma", new: "delta",
			wantErr: "Could not find a match for old_string in the file", errPrefix: true},
		{name: "identical", file: "a\n", old: "a", new: "a", wantErr: "old_string and new_string are identical"},
		{name: "empty old_string", file: "a\n", old: "", new: "b", wantErr: "old_string cannot be empty"},
		{name: "trailing newline kept when old_string ends the file",
			file: "a\nb\n", old: "b\n", new: "c", want: "a\nc\n"},
		{name: "no final newline stays absent", file: "a\nb", old: "b", new: "c", want: "a\nc"},
		{name: "tolerant match at EOF without newline",
			file: "a\n  b", old: "b\n", new: "c\n", want: "a\n  c"},
		{name: "tolerant multiple matches",
			file: "  x()\n    x()\n", old: "x()", new: "y()",
			wantErr: "Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True."},
		{name: "tolerant replace_all re-indents each",
			file: "  x()\n    x()\n", old: "x()", new: "y()", replaceAll: true, want: "  y()\n    y()\n"},
		{name: "exact wins over tolerant",
			file: "  foo\nfoo\n", old: "foo\n", new: "bar\n", want: "  bar\nbar\n", replaceAll: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl, dir := patchTestTools(t)
			p := patchTestWrite(t, dir, "f.txt", tc.file)
			res := patchTestCall(t, tl, map[string]any{
				"path": "f.txt", "old_string": tc.old, "new_string": tc.new,
				"replace_all": tc.replaceAll, "mode": "replace", "patch": nil,
			})
			if tc.wantErr != "" {
				assert.Equal(t, false, res["success"])
				if tc.errPrefix {
					assert.Contains(t, res["error"], tc.wantErr)
					assert.Regexp(t, "^"+tc.wantErr, res["error"])
				} else {
					assert.Equal(t, tc.wantErr, res["error"])
				}
				assert.Equal(t, tc.file, patchTestRead(t, p), "file must be untouched")
				return
			}
			require.Equal(t, true, res["success"], "result: %v", res)
			assert.Equal(t, tc.want, patchTestRead(t, p))
			assert.Equal(t, []string{p}, res["files_modified"])
			assert.Contains(t, res["diff"], "--- a/f.txt\n+++ b/f.txt\n")
		})
	}
}

func TestPatchReplaceDiffAndResultShape(t *testing.T) {
	tl, dir := patchTestTools(t)
	p := patchTestWrite(t, dir, "pkg/a.py", "def f():\n    return 1\n")
	res := patchTestCall(t, tl, map[string]any{"path": "pkg/a.py", "old_string": "return 1", "new_string": "return 2"})
	assert.Equal(t, result{
		"success":        true,
		"diff":           "--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n",
		"files_modified": []string{p},
	}, res)
}

func TestPatchReplaceNotFoundHint(t *testing.T) {
	tl, dir := patchTestTools(t)
	patchTestWrite(t, dir, "a.py", "import os\n\ndef compute_total(items):\n    return sum(items)\n")
	res := patchTestCall(t, tl, map[string]any{"path": "a.py", "old_string": "def compute_totals(items):", "new_string": "x"})
	assert.Equal(t, false, res["success"])
	assert.Contains(t, res["error"], "Could not find a match for old_string in the file")
	assert.Contains(t, res["error"], "(3)")
	assert.Contains(t, res["error"], "compute_total(items)")
}

func TestPatchReplaceFileErrors(t *testing.T) {
	tl, dir := patchTestTools(t)
	res := patchTestCall(t, tl, map[string]any{"path": "missing.txt", "old_string": "a", "new_string": "b"})
	assert.Equal(t, result{"success": false, "error": "File not found: missing.txt"}, res)

	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	res = patchTestCall(t, tl, map[string]any{"path": "sub", "old_string": "a", "new_string": "b"})
	assert.Equal(t, false, res["success"])
	assert.Contains(t, res["error"], "directory")

	patchTestWrite(t, dir, "bin.dat", "a\x00b")
	res = patchTestCall(t, tl, map[string]any{"path": "bin.dat", "old_string": "a", "new_string": "b"})
	assert.Equal(t, false, res["success"])
	assert.Contains(t, res["error"], "binary")
}

func TestPatchReplaceAbsolutePath(t *testing.T) {
	tl, _ := patchTestTools(t)
	other := t.TempDir()
	p := patchTestWrite(t, other, "x.txt", "hello\n")
	res := patchTestCall(t, tl, map[string]any{"path": p, "old_string": "hello", "new_string": "bye"})
	require.Equal(t, true, res["success"], "%v", res)
	assert.Equal(t, "bye\n", patchTestRead(t, p))
}

func TestPatchReplaceKeepsMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no POSIX permission bits (os.Chmod only sets the read-only attribute): the kept mode is tested on Linux and macOS")
	}
	tl, dir := patchTestTools(t)
	p := patchTestWrite(t, dir, "run.sh", "#!/bin/sh\necho hi\n")
	require.NoError(t, os.Chmod(p, 0o755))

	res := patchTestCall(t, tl, map[string]any{"path": "run.sh", "old_string": "echo hi", "new_string": "echo bye"})
	require.Equal(t, true, res["success"], "%v", res)
	info, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	assert.Equal(t, "#!/bin/sh\necho bye\n", patchTestRead(t, p))
}

func TestPatchReplaceKeepsSymlink(t *testing.T) {
	tl, dir := patchTestTools(t)
	p := patchTestWrite(t, dir, "run.sh", "#!/bin/sh\necho hi\n")
	link := filepath.Join(dir, "link.sh")
	symlink(t, "run.sh", link)

	res := patchTestCall(t, tl, map[string]any{"path": "link.sh", "old_string": "echo hi", "new_string": "echo bye"})
	require.Equal(t, true, res["success"], "%v", res)
	assert.Equal(t, "#!/bin/sh\necho bye\n", patchTestRead(t, p))
	li, err := os.Lstat(link)
	require.NoError(t, err)
	assert.True(t, li.Mode()&os.ModeSymlink != 0, "the symlink must stay a symlink")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temp files left behind")
}

func TestPatchBadArgs(t *testing.T) {
	tl, _ := patchTestTools(t)
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"bad mode", map[string]any{"mode": "diff"}, []string{"Invalid mode", `"replace"`, `"patch"`}},
		{"patch mode without patch", map[string]any{"mode": "patch", "patch": nil}, []string{"patch is required"}},
		{"patch mode with blank patch", map[string]any{"mode": "patch", "patch": "  \n"}, []string{"patch is required"}},
		{"replace without path", map[string]any{"old_string": "a", "new_string": "b"}, []string{"path is required"}},
		{"replace without path but patch text", map[string]any{"patch": "*** Begin Patch"}, []string{"path is required", `mode="patch"`}},
		{"replace without new_string", map[string]any{"path": "x", "old_string": "a"}, []string{"new_string is required"}},
		{"unknown key", map[string]any{"path": "x", "bogus": 1}, []string{"Invalid arguments for patch"}},
		{"wrong type", map[string]any{"path": 3}, []string{"Invalid arguments for patch"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := patchTestCall(t, tl, tc.args)
			assert.Equal(t, false, res["success"])
			for _, w := range tc.want {
				assert.Contains(t, res["error"], w)
			}
		})
	}
}

func TestPatchNullArgsTakeDefaults(t *testing.T) {
	tl, dir := patchTestTools(t)
	p := patchTestWrite(t, dir, "a.txt", "one\n")
	res := patchTestCall(t, tl, map[string]any{
		"path": "a.txt", "old_string": "one", "new_string": "two",
		"replace_all": nil, "mode": nil, "patch": nil,
	})
	require.Equal(t, true, res["success"], "%v", res)
	assert.Equal(t, "two\n", patchTestRead(t, p))

	res = patchTestCall(t, tl, map[string]any{"path": "a.txt", "old_string": "two", "new_string": "three", "mode": " Replace "})
	require.Equal(t, true, res["success"], "%v", res)
}

func TestPatchIndentDelta(t *testing.T) {
	cases := []struct {
		from, to, line, want string
	}{
		{"", "    ", "x", "    x"},
		{"    ", "", "    x", "x"},
		{"    ", "", "  x", "x"},
		{"  ", "    ", "x", "  x"},
		{"    ", "\t", "        x", "\t\tx"},
		{"\t", "  ", "\t\tx", "    x"},
		{"    ", "        ", "", ""},
		{"a", "a", "zz", "zz"},
	}
	for _, tc := range cases {
		d := patchIndentDelta{from: tc.from, to: tc.to}
		assert.Equal(t, tc.want, d.apply(tc.line), "%q -> %q on %q", tc.from, tc.to, tc.line)
	}
}

// patchTestHunkHeader matches a unified diff's hunk header.
var patchTestHunkHeader = regexp.MustCompile(`^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@$`)

// patchTestApplyUnified applies a unified diff produced by patchUnifiedDiff
// to old, checking every context and removed line on the way.
func patchTestApplyUnified(t *testing.T, old, diff string) string {
	t.Helper()
	const marker = "\\ No newline at end of file\n"
	// old's lines with their newline; a last line without one carries the
	// marker, as in the diff.
	var a []string
	if old != "" {
		a = strings.SplitAfter(old, "\n")
		if a[len(a)-1] == "" {
			a = a[:len(a)-1]
		} else {
			a[len(a)-1] += "\n" + marker
		}
	}
	lines := strings.SplitAfter(diff, "\n")
	require.GreaterOrEqual(t, len(lines), 3, "diff: %q", diff)
	require.True(t, strings.HasPrefix(lines[0], "--- ") && strings.HasPrefix(lines[1], "+++ "), "headers: %q", diff)
	var out []string
	ai := 0
	for i := 2; i < len(lines) && lines[i] != ""; {
		m := patchTestHunkHeader.FindStringSubmatch(strings.TrimSuffix(lines[i], "\n"))
		require.NotNil(t, m, "hunk header expected: %q", lines[i])
		start, _ := strconv.Atoi(m[1])
		length := 1
		if m[2] != "" {
			length, _ = strconv.Atoi(m[2][1:])
		}
		idx := start - 1
		if length == 0 {
			idx = start
		}
		require.GreaterOrEqual(t, idx, ai, "hunks out of order")
		out = append(out, a[ai:idx]...)
		ai = idx
		for i++; i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@ "); i++ {
			l := lines[i]
			text := l[1:]
			if i+1 < len(lines) && lines[i+1] == marker {
				text += marker
				i++
			}
			switch l[0] {
			case ' ', '-':
				require.Less(t, ai, len(a))
				require.Equal(t, a[ai], text, "line %d", ai+1)
				if l[0] == ' ' {
					out = append(out, text)
				}
				ai++
			case '+':
				out = append(out, text)
			default:
				t.Fatalf("bad diff line %q", l)
			}
		}
	}
	out = append(out, a[ai:]...)
	return strings.ReplaceAll(strings.Join(out, ""), "\n"+marker, "")
}

func TestPatchUnifiedDiffRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "x = 1", "", "  return y", "}"}
	randText := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[rng.IntN(len(words))])
			if i < n-1 || rng.IntN(4) > 0 {
				b.WriteByte('\n')
			}
		}
		return b.String()
	}
	for iter := 0; iter < 500; iter++ {
		old := randText(rng.IntN(80))
		// Random non-overlapping spans.
		var spans []patchSpan
		for pos := 0; pos < len(old); {
			start := pos + rng.IntN(len(old)-pos+1)
			if start >= len(old) || rng.IntN(3) == 0 {
				break
			}
			end := start + rng.IntN(min(12, len(old)-start)+1)
			spans = append(spans, patchSpan{start: start, end: end, repl: randText(rng.IntN(3))})
			pos = end + 1
		}
		var b strings.Builder
		prev := 0
		for _, s := range spans {
			b.WriteString(old[prev:s.start] + s.repl)
			prev = s.end
		}
		b.WriteString(old[prev:])
		updated := b.String()

		for name, regions := range map[string][]patchRegion{
			"spans":    patchSpanRegions(old, updated, spans, false),
			"fallback": nil,
			"wrong":    {{a0: 1, a1: 2, b0: 5, b1: 6}},
		} {
			d := patchUnifiedDiff(old, updated, "a/f", "b/f", regions, -1)
			if old == updated {
				require.Empty(t, d)
				continue
			}
			require.Equal(t, updated, patchTestApplyUnified(t, old, d), "%s: old %q diff %q", name, old, d)
			if name == "spans" {
				_, ok := patchWindows(old, updated, regions)
				require.True(t, ok, "span regions rejected: old %q new %q regions %v", old, updated, regions)
				full := patchUnifiedDiff(old, updated, "a/f", "b/f", nil, -1)
				require.Equal(t, updated, patchTestApplyUnified(t, old, full))
			}
		}
	}
}

func TestPatchUnifiedDiffLargeFileWindows(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	old := b.String()
	spans := patchFindMatches(old, "line 10\n", "ten\n", 1).spans
	require.Len(t, spans, 1)
	spans = append(spans, patchFindMatches(old, "line 1990\n", "nineteen-ninety\n", 1).spans...)
	updated := old[:spans[0].start] + spans[0].repl + old[spans[0].end:spans[1].start] + spans[1].repl + old[spans[1].end:]
	d := patchUnifiedDiff(old, updated, "a/f", "b/f", patchSpanRegions(old, updated, spans, false), -1)
	assert.Equal(t, "--- a/f\n+++ b/f\n"+
		"@@ -8,7 +8,7 @@\n line 7\n line 8\n line 9\n-line 10\n+ten\n line 11\n line 12\n line 13\n"+
		"@@ -1988,7 +1988,7 @@\n line 1987\n line 1988\n line 1989\n-line 1990\n+nineteen-ninety\n line 1991\n line 1992\n line 1993\n", d)
	assert.Equal(t, updated, patchTestApplyUnified(t, old, d))
}

func TestPatchDiffNoFinalNewline(t *testing.T) {
	d := patchUnifiedDiff("a\nb", "a\nb\n", "a/f", "b/f", nil, -1)
	assert.Equal(t, "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", d)
}
