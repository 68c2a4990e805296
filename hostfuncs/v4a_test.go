package hostfuncs

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// patchTestSnapshot returns every regular file under dir, relative slash
// path to content.
func patchTestSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	require.NoError(t, err)
	return out
}

func patchTestV4A(t *testing.T, tl *Tools, text string) result {
	t.Helper()
	return patchTestCall(t, tl, map[string]any{
		"path": nil, "old_string": nil, "new_string": nil, "replace_all": false,
		"mode": "patch", "patch": text,
	})
}

func TestV4APatchTable(t *testing.T) {
	const app = "import os\n\n\ndef foo():\n    return 1\n\n\ndef bar():\n    return 1\n"
	cases := []struct {
		name    string
		files   map[string]string
		patch   string
		want    map[string]string // full tree after success
		added   []string
		deleted []string
		wantErr []string // substrings; the tree must stay as files
	}{
		{
			name:  "add file",
			files: map[string]string{},
			patch: "*** Begin Patch\n*** Add File: pkg/new.py\n+def hello():\n+    return 'hi'\n*** End Patch\n",
			want:  map[string]string{"pkg/new.py": "def hello():\n    return 'hi'\n"},
			added: []string{"pkg/new.py"},
		},
		{
			name:    "delete file",
			files:   map[string]string{"old.txt": "bye\n", "keep.txt": "k\n"},
			patch:   "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch",
			want:    map[string]string{"keep.txt": "k\n"},
			deleted: []string{"old.txt"},
		},
		{
			name:  "update single hunk",
			files: map[string]string{"a.py": "x = 1\ny = 2\nz = 3\n"},
			patch: "*** Begin Patch\n*** Update File: a.py\n@@\n x = 1\n-y = 2\n+y = 20\n z = 3\n*** End Patch",
			want:  map[string]string{"a.py": "x = 1\ny = 20\nz = 3\n"},
		},
		{
			name:  "anchor narrows to the right function",
			files: map[string]string{"app.py": app},
			patch: "*** Begin Patch\n*** Update File: app.py\n@@ def bar():\n-    return 1\n+    return 2\n*** End Patch",
			want:  map[string]string{"app.py": strings.Replace(app, "def bar():\n    return 1", "def bar():\n    return 2", 1)},
		},
		{
			name:  "anchor repeated as first context line",
			files: map[string]string{"app.py": app},
			patch: "*** Begin Patch\n*** Update File: app.py\n@@ def bar():\n def bar():\n-    return 1\n+    return 3\n*** End Patch",
			want:  map[string]string{"app.py": strings.Replace(app, "def bar():\n    return 1", "def bar():\n    return 3", 1)},
		},
		{
			name:  "pure addition goes after the anchor",
			files: map[string]string{"app.py": app},
			patch: "*** Begin Patch\n*** Update File: app.py\n@@ def foo():\n+    \"\"\"Doc.\"\"\"\n*** End Patch",
			want:  map[string]string{"app.py": strings.Replace(app, "def foo():\n", "def foo():\n    \"\"\"Doc.\"\"\"\n", 1)},
		},
		{
			name:  "multi-hunk in order",
			files: map[string]string{"app.py": app},
			patch: "*** Begin Patch\n*** Update File: app.py\n@@ def foo():\n-    return 1\n+    return 'foo'\n@@ def bar():\n-    return 1\n+    return 'bar'\n*** End Patch",
			want:  map[string]string{"app.py": "import os\n\n\ndef foo():\n    return 'foo'\n\n\ndef bar():\n    return 'bar'\n"},
		},
		{
			name:  "second hunk searches after the first",
			files: map[string]string{"a.txt": "v\nv\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-v\n+first\n@@\n-v\n+second\n*** End Patch",
			want:  map[string]string{"a.txt": "first\nsecond\n"},
		},
		{
			name:    "move with edit",
			files:   map[string]string{"src/old.py": "a = 1\nb = 2\n"},
			patch:   "*** Begin Patch\n*** Update File: src/old.py\n*** Move to: lib/new.py\n@@\n a = 1\n-b = 2\n+b = 3\n*** End Patch",
			want:    map[string]string{"lib/new.py": "a = 1\nb = 3\n"},
			added:   []string{"lib/new.py"},
			deleted: []string{"src/old.py"},
		},
		{
			name:    "pure rename",
			files:   map[string]string{"a.txt": "same\n"},
			patch:   "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch",
			want:    map[string]string{"b.txt": "same\n"},
			added:   []string{"b.txt"},
			deleted: []string{"a.txt"},
		},
		{
			name: "several files at once",
			files: map[string]string{
				"a.txt": "1\n2\n3\n", "gone.txt": "x\n",
			},
			patch:   "*** Begin Patch\n*** Update File: a.txt\n 1\n-2\n+two\n 3\n*** Delete File: gone.txt\n*** Add File: b.txt\n+new\n*** End Patch",
			want:    map[string]string{"a.txt": "1\ntwo\n3\n", "b.txt": "new\n"},
			added:   []string{"b.txt"},
			deleted: []string{"gone.txt"},
		},
		{
			name:  "trailing whitespace drift",
			files: map[string]string{"a.py": "def f():   \n    return 1  \n"},
			patch: "*** Begin Patch\n*** Update File: a.py\n@@\n def f():\n-    return 1\n+    return 2\n*** End Patch",
			want:  map[string]string{"a.py": "def f():   \n    return 2\n"},
		},
		{
			name:  "leading whitespace drift re-indents added lines",
			files: map[string]string{"a.py": "class A:\n    def f(self):\n        return 1\n"},
			patch: "*** Begin Patch\n*** Update File: a.py\n@@\n def f(self):\n-    return 1\n+    x = 1\n+    return x\n*** End Patch",
			want:  map[string]string{"a.py": "class A:\n    def f(self):\n        x = 1\n        return x\n"},
		},
		{
			name:  "blank line in hunk is empty context",
			files: map[string]string{"a.py": "a = 1\n\nb = 2\n"},
			patch: "*** Begin Patch\n*** Update File: a.py\n@@\n a = 1\n\n-b = 2\n+b = 3\n*** End Patch",
			want:  map[string]string{"a.py": "a = 1\n\nb = 3\n"},
		},
		{
			name:  "end of file marker",
			files: map[string]string{"a.txt": "x\ny\nx\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+z\n*** End of File\n*** End Patch",
			want:  map[string]string{"a.txt": "x\ny\nz\n"},
		},
		{
			name:  "append at end of file",
			files: map[string]string{"a.txt": "x\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n+y\n*** End of File\n*** End Patch",
			want:  map[string]string{"a.txt": "x\ny\n"},
		},
		{
			name:  "CRLF file stays CRLF",
			files: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"},
			patch: "*** Begin Patch\r\n*** Update File: w.txt\r\n@@\r\n a\r\n-b\r\n+B\r\n+B2\r\n c\r\n*** End Patch\r\n",
			want:  map[string]string{"w.txt": "a\r\nB\r\nB2\r\nc\r\n"},
		},
		{
			name:  "file without final newline keeps it absent",
			files: map[string]string{"a.txt": "a\nb"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n a\n-b\n+c\n*** End Patch",
			want:  map[string]string{"a.txt": "a\nc"},
		},
		{
			name:  "unified diff style header",
			files: map[string]string{"a.txt": "1\n2\n3\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+2b\n 3\n*** End Patch",
			want:  map[string]string{"a.txt": "1\n2b\n3\n"},
		},
		{
			name:  "two sections update the same file in sequence",
			files: map[string]string{"a.txt": "1\n2\n"},
			patch: "*** Begin Patch\n*** Update File: a.txt\n-1\n+one\n*** Update File: ./a.txt\n-2\n+two\n*** End Patch",
			want:  map[string]string{"a.txt": "one\ntwo\n"},
		},
		{
			name:    "unlocatable hunk leaves every file untouched",
			files:   map[string]string{"a.txt": "1\n2\n", "b.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Update File: a.txt\n-1\n+one\n*** Add File: c.txt\n+c\n*** Update File: b.txt\n@@\n-not there\n+y\n*** End Patch",
			wantErr: []string{"b.txt", "hunk 1 of 1", "-not there", "No files were modified"},
		},
		{
			name:    "hunk before its anchor is not found",
			files:   map[string]string{"app.py": app},
			patch:   "*** Begin Patch\n*** Update File: app.py\n@@ def bar():\n-import os\n+import sys\n*** End Patch",
			wantErr: []string{"app.py", "@@ def bar():", "-import os"},
		},
		{
			name:    "missing anchor",
			files:   map[string]string{"app.py": app},
			patch:   "*** Begin Patch\n*** Update File: app.py\n@@ def baz():\n-    return 1\n+    return 2\n*** End Patch",
			wantErr: []string{"app.py", `anchor "def baz():" not found`},
		},
		{
			name:    "add existing file",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Add File: a.txt\n+y\n*** End Patch",
			wantErr: []string{"Cannot add a.txt: file already exists"},
		},
		{
			name:    "delete missing file",
			files:   map[string]string{},
			patch:   "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch",
			wantErr: []string{"File not found: nope.txt"},
		},
		{
			name:    "update missing file",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Add File: b.txt\n+b\n*** Update File: nope.txt\n-x\n+y\n*** End Patch",
			wantErr: []string{"File not found: nope.txt"},
		},
		{
			name:    "move onto an existing file",
			files:   map[string]string{"a.txt": "a\n", "b.txt": "b\n"},
			patch:   "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch",
			wantErr: []string{"Cannot move a.txt to b.txt"},
		},
		{
			name:    "dot-dot path escapes",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch",
			wantErr: []string{"Path escapes the working directory: ../evil.txt"},
		},
		{
			name:    "nested dot-dot path escapes",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n*** Delete File: sub/../../a.txt\n*** End Patch",
			wantErr: []string{"Path escapes the working directory: sub/../../a.txt"},
		},
		{
			name:    "absolute path refused",
			files:   map[string]string{},
			patch:   "*** Begin Patch\n*** Add File: /tmp/evil.txt\n+x\n*** End Patch",
			wantErr: []string{"Path escapes the working directory: /tmp/evil.txt"},
		},
		{
			name:    "move destination escapes",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../a.txt\n*** End Patch",
			wantErr: []string{"Path escapes the working directory: ../a.txt"},
		},
		{
			name:    "missing begin",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Update File: a.txt\n-x\n+y\n*** End Patch",
			wantErr: []string{"Invalid patch", "*** Begin Patch"},
		},
		{
			name:    "missing end",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n",
			wantErr: []string{"Invalid patch", "*** End Patch"},
		},
		{
			name:    "unknown header",
			files:   map[string]string{"a.txt": "x\n"},
			patch:   "*** Begin Patch\n*** Modify File: a.txt\n-x\n+y\n*** End Patch",
			wantErr: []string{"Invalid patch line 2", "unknown header", "*** Modify File: a.txt"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl, dir := patchTestTools(t)
			for rel, c := range tc.files {
				patchTestWrite(t, dir, rel, c)
			}
			res := patchTestV4A(t, tl, tc.patch)
			if len(tc.wantErr) > 0 {
				assert.Equal(t, false, res["success"], "result: %v", res)
				for _, w := range tc.wantErr {
					assert.Contains(t, res["error"], w)
				}
				assert.Equal(t, tc.files, patchTestSnapshot(t, dir), "nothing may be written")
				return
			}
			require.Equal(t, true, res["success"], "result: %v", res)
			assert.Equal(t, tc.want, patchTestSnapshot(t, dir))

			abs := func(rels []string) []string {
				out := []string{}
				for _, r := range rels {
					out = append(out, filepath.Join(dir, filepath.FromSlash(r)))
				}
				sort.Strings(out)
				return out
			}
			assert.Equal(t, abs(tc.added), res["files_added"])
			assert.Equal(t, abs(tc.deleted), res["files_deleted"])
			var touched []string
			for rel, c := range tc.want {
				if old, ok := tc.files[rel]; !ok || old != c {
					touched = append(touched, rel)
				}
			}
			touched = append(touched, tc.deleted...)
			assert.Equal(t, abs(touched), res["files_modified"])
			assert.NotEmpty(t, res["diff"])
			if len(touched) == 1 && len(tc.added)+len(tc.deleted) == 0 {
				rel := touched[0]
				assert.True(t, strings.HasPrefix(res["diff"].(string), "--- a/"+rel+"\n+++ b/"+rel+"\n"))
				assert.Equal(t, tc.want[rel], patchTestApplyUnified(t, tc.files[rel], res["diff"].(string)))
			}
		})
	}
}

func TestV4APatchDiff(t *testing.T) {
	tl, dir := patchTestTools(t)
	patchTestWrite(t, dir, "a.txt", "1\n2\n3\n")
	patchTestWrite(t, dir, "old/name.txt", "k\n")
	res := patchTestV4A(t, tl, `*** Begin Patch
*** Add File: n.txt
+hello
*** Update File: a.txt
 1
-2
+two
*** Update File: old/name.txt
*** Move to: new/name.txt
*** Delete File: gone.txt
*** End Patch`)
	// gone.txt does not exist: the whole patch fails first.
	assert.Equal(t, false, res["success"])
	assert.Equal(t, map[string]string{"a.txt": "1\n2\n3\n", "old/name.txt": "k\n"}, patchTestSnapshot(t, dir))

	patchTestWrite(t, dir, "gone.txt", "bye\n")
	res = patchTestV4A(t, tl, `*** Begin Patch
*** Add File: n.txt
+hello
*** Update File: a.txt
 1
-2
+two
*** Update File: old/name.txt
*** Move to: new/name.txt
*** Delete File: gone.txt
*** End Patch`)
	require.Equal(t, true, res["success"], "%v", res)
	assert.Equal(t, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hello\n"+
		"--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n"+
		"--- a/old/name.txt\n+++ b/new/name.txt\n"+
		"--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n", res["diff"])
	assert.ElementsMatch(t, []string{"n.txt", "a.txt", "new/name.txt"}, patchTestKeys(patchTestSnapshot(t, dir)))
}

func patchTestKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestV4APatchSymlinkEscape(t *testing.T) {
	tl, dir := patchTestTools(t)
	outside := t.TempDir()
	target := patchTestWrite(t, outside, "secret.txt", "s\n")
	symlink(t, outside, filepath.Join(dir, "out"))
	symlink(t, target, filepath.Join(dir, "link.txt"))

	for _, p := range []string{"out/secret.txt", "out/new.txt", "link.txt"} {
		res := patchTestV4A(t, tl, "*** Begin Patch\n*** Update File: "+p+"\n-s\n+x\n*** End Patch")
		assert.Equal(t, result{"success": false, "error": "Path escapes the working directory: " + p}, res)
	}
	res := patchTestV4A(t, tl, "*** Begin Patch\n*** Add File: out/new.txt\n+x\n*** End Patch")
	assert.Equal(t, false, res["success"])
	assert.Equal(t, "s\n", patchTestRead(t, target))
	_, err := os.Stat(filepath.Join(outside, "new.txt"))
	assert.True(t, os.IsNotExist(err))
}

func TestV4APatchKeepsMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no POSIX permission bits (os.Chmod only sets the read-only attribute): the kept mode is tested on Linux and macOS")
	}
	tl, dir := patchTestTools(t)
	p := patchTestWrite(t, dir, "run.sh", "echo a\n")
	require.NoError(t, os.Chmod(p, 0o750))
	res := patchTestV4A(t, tl, "*** Begin Patch\n*** Update File: run.sh\n-echo a\n+echo b\n*** Move to: bin/run.sh\n*** End Patch")
	// "*** Move to" after hunk lines is malformed.
	assert.Equal(t, false, res["success"])
	assert.Contains(t, res["error"], "*** Move to:")

	res = patchTestV4A(t, tl, "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n-echo a\n+echo b\n*** End Patch")
	require.Equal(t, true, res["success"], "%v", res)
	info, err := os.Stat(filepath.Join(dir, "bin", "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), info.Mode().Perm())
}

func TestV4AParseErrors(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{"empty"}},
		{"no begin", "hello\n*** End Patch", []string{"first line", "*** Begin Patch", "hello"}},
		{"no end", "*** Begin Patch\n*** Delete File: a\n", []string{"missing", "*** End Patch"}},
		{"only markers", "*** Begin Patch\n*** End Patch", []string{"no file sections"}},
		{"unknown header", "*** Begin Patch\n*** Rename File: a\n*** End Patch", []string{"line 2", "unknown header"}},
		{"stray text", "*** Begin Patch\nhello\n*** End Patch", []string{"line 2", "expected a file header"}},
		{"bad add line", "*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch", []string{"line 3", "'+'"}},
		{"bad hunk line", "*** Begin Patch\n*** Update File: a\n-x\n?y\n*** End Patch", []string{"line 4", "' ' (context)"}},
		{"empty path", "*** Begin Patch\n*** Delete File:   \n*** End Patch", []string{"needs a path"}},
		{"update without hunks", "*** Begin Patch\n*** Update File: a\n*** End Patch", []string{"has no hunks"}},
		{"anchor without lines", "*** Begin Patch\n*** Update File: a\n@@ def f():\n*** End Patch", []string{"no lines"}},
		{"delete with body", "*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch", []string{"line 3"}},
		{"end in the middle", "*** Begin Patch\n*** End Patch\n*** Delete File: a\n*** End Patch", []string{"line 2", "last line"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v4aParse(tc.text)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestV4AParseStructure(t *testing.T) {
	ops, err := v4aParse("\n\n*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@ class A:\n@@     def f(self):\n-        return 1\n+        return 2\n\n@@\n x\n*** End of File\n*** Add File: c.txt\n+1\n\n+2\n\n*** Delete File: d.txt\n*** End Patch\n\n")
	require.NoError(t, err)
	require.Len(t, ops, 3)
	assert.Equal(t, v4aOpUpdate, ops[0].Kind)
	assert.Equal(t, "a.py", ops[0].Path)
	assert.Equal(t, "b.py", ops[0].MoveTo)
	require.Len(t, ops[0].Hunks, 2)
	assert.Equal(t, []string{"class A:", "def f(self):"}, ops[0].Hunks[0].Anchors)
	assert.Equal(t, []v4aLine{{Op: '-', Text: "        return 1"}, {Op: '+', Text: "        return 2"}}, ops[0].Hunks[0].Lines)
	assert.True(t, ops[0].Hunks[1].EOF)
	assert.Equal(t, v4aOpAdd, ops[1].Kind)
	assert.Equal(t, "1\n\n2\n", ops[1].Content)
	assert.Equal(t, v4aOpDelete, ops[2].Kind)
	assert.Equal(t, "d.txt", ops[2].Path)
}

func TestV4AApplyNestedAnchors(t *testing.T) {
	src := "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 1\n"
	ops, err := v4aParse("*** Begin Patch\n*** Update File: x.py\n@@ class B:\n@@     def f(self):\n-        return 1\n+        return 2\n*** End Patch")
	require.NoError(t, err)
	got, _, err := v4aApplyHunks(src, ops[0].Hunks, "x.py")
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(src, "class B:\n    def f(self):\n        return 1", "class B:\n    def f(self):\n        return 2", 1), got)
}

func FuzzParseV4A(f *testing.F) {
	seeds := []string{
		"",
		"*** Begin Patch\n*** End Patch",
		"*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n",
		"*** Begin Patch\n*** Delete File: a.txt\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@ def foo():\n x\n-y\n+z\n\n@@\n+tail\n*** End of File\n*** End Patch",
		"*** Begin Patch\r\n*** Update File: a\r\n@@ -1,2 +1,2 @@ ctx\r\n-a\r\n+b\r\n*** End Patch\r\n",
		"*** Begin Patch\n*** Update File: a\n@@\n@@ x\n*** End of File\n*** End Patch",
		"*** Begin Patch\n***\n@@\n+\n-\n \n*** End Patch",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	const sample = "a\nb\n\nc\r\n  d\nx\ny\nz"
	f.Fuzz(func(t *testing.T, text string) {
		ops, err := v4aParse(text)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(ops) == 0 {
			t.Fatal("success without sections")
		}
		for _, op := range ops {
			if op.Path == "" {
				t.Fatal("section without a path")
			}
			if op.Kind == v4aOpUpdate {
				// The applier must not panic either.
				_, _, _ = v4aApplyHunks(sample, op.Hunks, op.Path)
				_, _, _ = v4aApplyHunks("", op.Hunks, op.Path)
			}
		}
	})
}
