package hostfuncs

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allocatedDuring returns how many bytes the process allocated while fn
// ran. TotalAlloc only grows, so the figure does not depend on when the
// garbage collector runs.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestPatchAmplificationRefused is the red team's script: 4 MB of "a",
// each replaced by 150 bytes, would be a 600 MB file (the old code peaked
// at 2.46 GB of host memory). It is refused before anything is built, and
// costs little more than reading the file.
func TestPatchAmplificationRefused(t *testing.T) {
	tl, dir := newTestTools(t)
	res := callJSON(t, tl, "write_file", map[string]any{"path": "amp.txt", "content": strings.Repeat("a", 4_000_000)})
	require.NotContains(t, res, "error")
	var got map[string]any
	alloc := allocatedDuring(func() {
		got = callJSON(t, tl, "patch", map[string]any{"path": "amp.txt", "old_string": "a", "new_string": strings.Repeat("b", 150), "replace_all": true})
	})
	assert.Equal(t, false, got["success"])
	assert.Equal(t, "Found 4000000 matches for old_string, more than the 100000 patch replaces in one call. "+
		"Use terminal (e.g. sed) for a bulk edit this large, or write_file with the full new content.", got["error"])
	assert.Less(t, alloc, uint64(24<<20), "patch allocated %d bytes for a 4 MB file", alloc)
	t.Logf("the refused 4 MB replace_all allocated %.1f MiB", float64(alloc)/(1<<20))

	// Fewer matches, each growing the file past 32 MiB.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "amp.txt"), []byte(strings.Repeat("ab", 50_000)), 0o644))
	alloc = allocatedDuring(func() {
		got = callJSON(t, tl, "patch", map[string]any{"path": "amp.txt", "old_string": "a", "new_string": strings.Repeat("b", 1000), "replace_all": true})
	})
	assert.Equal(t, "Patch refused: replacing 50000 match(es) would make amp.txt 47.7 MiB, over the 32 MiB patch writes. "+
		"Nothing was changed. Use write_file with the full new content, or terminal (e.g. sed) for an edit this large.", got["error"])
	assert.Less(t, alloc, uint64(8<<20), "patch allocated %d bytes for a 100 kB file", alloc)

	// The same at a whitespace-tolerant level (no exact match): a million
	// matching lines cost neither a line table nor a million spans.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "amp.txt"), []byte(strings.Repeat("x \n", 1_000_000)), 0o644))
	alloc = allocatedDuring(func() {
		got = callJSON(t, tl, "patch", map[string]any{"path": "amp.txt", "old_string": "x\n", "new_string": "y\n", "replace_all": true})
	})
	assert.Contains(t, got["error"], "Found 1000000 matches for old_string, more than the 100000")
	assert.Less(t, alloc, uint64(16<<20), "patch allocated %d bytes for a 3 MB file", alloc)

	b, err := os.ReadFile(filepath.Join(dir, "amp.txt"))
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x \n", 1_000_000), string(b), "a refused patch changes nothing")

	// There, matches stop being collected once the result is too large.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grow.txt"), []byte(strings.Repeat("x \n", 50_000)), 0o644))
	alloc = allocatedDuring(func() {
		got = callJSON(t, tl, "patch", map[string]any{"path": "grow.txt", "old_string": "x\n", "new_string": strings.Repeat("y", 1000) + "\n", "replace_all": true})
	})
	assert.Equal(t, "Patch refused: replacing 50000 match(es) would make grow.txt at least 32.0 MiB, over the 32 MiB patch writes. "+
		"Nothing was changed. Use write_file with the full new content, or terminal (e.g. sed) for an edit this large.", got["error"])
	assert.Less(t, alloc, uint64(8<<20))

	// The same when only line endings differ.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crlf.txt"), []byte(strings.Repeat("a\r\nb\r\n", 20_000)), 0o644))
	got = callJSON(t, tl, "patch", map[string]any{"path": "crlf.txt", "old_string": "a\nb", "new_string": strings.Repeat("x", 2000), "replace_all": true})
	assert.Contains(t, got["error"], "Patch refused: replacing 20000 match(es) would make crlf.txt at least 32.0 MiB")
	b, err = os.ReadFile(filepath.Join(dir, "crlf.txt"))
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("a\r\nb\r\n", 20_000), string(b))

	// Without replace_all, many matches are counted, not collected.
	alloc = allocatedDuring(func() {
		got = callJSON(t, tl, "patch", map[string]any{"path": "amp.txt", "old_string": "x", "new_string": "y"})
	})
	assert.Equal(t, "Found 1000000 matches for old_string. Provide more context to make it unique, or use replace_all=True.", got["error"])
	assert.Less(t, alloc, uint64(16<<20))
}

// TestPatchRefusesHugeFiles: a file over 32 MiB is refused before it is
// read, in both modes.
func TestPatchRefusesHugeFiles(t *testing.T) {
	tl, dir := newTestTools(t)
	f, err := os.Create(filepath.Join(dir, "huge.log"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(33<<20)) // sparse: cheap to make
	require.NoError(t, f.Close())
	want := "Cannot patch huge.log: it is 33.0 MiB, over the 32 MiB patch reads and writes. " +
		"Use write_file with the full new content, or terminal (e.g. sed) to edit a file this large."
	var res map[string]any
	alloc := allocatedDuring(func() {
		res = callJSON(t, tl, "patch", map[string]any{"path": "huge.log", "old_string": "x", "new_string": "y"})
	})
	assert.Equal(t, map[string]any{"success": false, "error": want}, res)
	assert.Less(t, alloc, uint64(1<<20))
	res = callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": "*** Begin Patch\n*** Update File: huge.log\n@@\n-x\n+y\n*** End Patch"})
	assert.Equal(t, map[string]any{"success": false, "error": want}, res)

	// A V4A patch of too many lines, and a file of too many lines to split.
	res = callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": "*** Begin Patch\n" + strings.Repeat("\n", patchMaxLines) + "*** End Patch"})
	assert.Equal(t, "The patch has 1048578 lines, more than the 1048576 one patch call takes. "+
		"Split it into several patches, or use write_file for whole files.", res["error"])
	writeTestFile(t, dir, "lines.txt", "first\n"+strings.Repeat("\n", patchMaxLines))
	res = callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": "*** Begin Patch\n*** Update File: lines.txt\n@@\n-first\n+1st\n*** End Patch"})
	assert.Equal(t, `Cannot update lines.txt: it has 1048578 lines, more than the 1048576 a V4A patch edits. `+
		`Use mode="replace", write_file with the full new content, or terminal (e.g. sed). No files were modified.`, res["error"])
	// replace mode handles it.
	res = callJSON(t, tl, "patch", map[string]any{"path": "lines.txt", "old_string": "first\n", "new_string": "1st\n"})
	assert.Equal(t, true, res["success"], res)
}

// TestPatchDiffBounded: a large file's diff is replaced by a note, and a
// diff over 1 MiB is cut; the patch itself is applied in full and the
// result says the diff is incomplete.
func TestPatchDiffBounded(t *testing.T) {
	tl, dir := newTestTools(t)
	big := "needle\n" + strings.Repeat("filler line\n", 800_000) // 9.6 MB
	writeTestFile(t, dir, "big.txt", big)
	res := callJSON(t, tl, "patch", map[string]any{"path": "big.txt", "old_string": "needle", "new_string": "pin"})
	require.Equal(t, true, res["success"], res["error"])
	assert.Equal(t, true, res["diff_truncated"])
	assert.Equal(t, "--- a/big.txt\n+++ b/big.txt\n# Diff omitted: the file is 18.3 MiB (1600002 lines) before and after the patch together, "+
		"over the 8 MiB (250000 lines) patch shows a diff for. The patch was applied; use read_file to check the changed part.\n", res["diff"])
	b, err := os.ReadFile(filepath.Join(dir, "big.txt"))
	require.NoError(t, err)
	assert.Equal(t, "pin"+big[len("needle"):], string(b))

	// Every line changed: the diff would be 2.5 MB.
	lines := strings.Repeat("aaaaaaaaaaaaaaaaaaaa\n", 60_000)
	writeTestFile(t, dir, "many.txt", lines)
	res = callJSON(t, tl, "patch", map[string]any{"path": "many.txt", "old_string": "aaaaaaaaaaaaaaaaaaaa", "new_string": "bbbbbbbbbbbbbbbbbbbb", "replace_all": true})
	require.Equal(t, true, res["success"], res["error"])
	assert.Equal(t, true, res["diff_truncated"])
	d := res["diff"].(string)
	assert.LessOrEqual(t, len(d), patchDiffMaxOutput+200)
	assert.True(t, strings.HasPrefix(d, "--- a/many.txt\n+++ b/many.txt\n@@ -1,60000 +1,60000 @@\n-aaaa"), d[:100])
	assert.True(t, strings.HasSuffix(d, "\n# Diff truncated: patch shows at most 1 MiB of diff. "+
		"The patch was applied in full; use read_file to check the rest.\n"), d[len(d)-200:])
	b, err = os.ReadFile(filepath.Join(dir, "many.txt"))
	require.NoError(t, err)
	assert.Equal(t, strings.ReplaceAll(lines, "a", "b"), string(b))

	// A small patch has no diff_truncated key.
	res = callJSON(t, tl, "patch", map[string]any{"path": "many.txt", "old_string": "bbbbbbbbbbbbbbbbbbbb\nbbbbbbbbbbbbbbbbbbbb\n", "new_string": "x\n", "replace_all": false})
	assert.Contains(t, res["error"], "Found 30000 matches")
}
