package hostfuncs

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Unified diffs for patch results. difflib's matcher is quadratic-ish on
// large or repetitive files, so it only ever sees small windows around the
// regions known to have changed; the hunk headers are then shifted back to
// file line numbers.

// patchDiffContext is the number of context lines around each change.
const patchDiffContext = 3

// Bounds on the diff a patch result carries. Splitting texts into lines
// costs 16 bytes a line on top of the texts, and a replace_all over a large
// file changes every line, so files past these sizes get a note instead of
// a diff, and the whole diff is cut at patchDiffMaxOutput.
const (
	// patchDiffMaxInput bounds a file's old plus new size for its diff.
	patchDiffMaxInput = 8 << 20
	// patchDiffMaxLines bounds a file's old plus new line count.
	patchDiffMaxLines = 250_000
	// patchDiffMaxOutput bounds the diff text of one patch call.
	patchDiffMaxOutput = 1 << 20
)

// patchDiffWriter gathers the diffs of one patch call within the bounds
// above.
type patchDiffWriter struct {
	b         strings.Builder
	truncated bool
}

// file adds the diff from oldText (at from) to newText (at to). regions is
// called only when the diff is computed. With headers, a file whose texts
// are equal (an empty file added, deleted, or moved unchanged) still shows
// its "---"/"+++" lines.
func (w *patchDiffWriter) file(oldText, newText, from, to string, headers bool, regions func() []patchRegion) {
	if oldText == newText && !headers {
		return
	}
	head := "--- " + from + "\n+++ " + to + "\n"
	room := patchDiffMaxOutput - w.b.Len()
	if room <= 0 {
		w.truncated = true
		return
	}
	var d string
	size := len(oldText) + len(newText)
	lines := strings.Count(oldText, "\n") + strings.Count(newText, "\n")
	switch {
	case oldText == newText:
		d = head
	case size > patchDiffMaxInput || lines > patchDiffMaxLines:
		w.truncated = true
		d = head + fmt.Sprintf("# Diff omitted: the file is %s (%d lines) before and after the patch together, "+
			"over the %d MiB (%d lines) patch shows a diff for. The patch was applied; "+
			"use read_file to check the changed part.\n", patchMiB(int64(size)), lines, patchDiffMaxInput>>20, patchDiffMaxLines)
	default:
		d = patchUnifiedDiffLimit(oldText, newText, from, to, regions(), room)
		if d == "" {
			d = head
		}
	}
	if len(d) > room {
		w.truncated = true
		cut := strings.LastIndexByte(d[:room], '\n') + 1
		d = d[:cut] + fmt.Sprintf("# Diff truncated: patch shows at most %d MiB of diff. "+
			"The patch was applied in full; use read_file to check the rest.\n", patchDiffMaxOutput>>20)
	}
	w.b.WriteString(d)
}

// result sets r's "diff", and "diff_truncated" when a diff was omitted or
// cut, and returns r.
func (w *patchDiffWriter) result(r Result) Result {
	r["diff"] = w.b.String()
	if w.truncated {
		r["diff_truncated"] = true
	}
	return r
}

// patchRegion says lines [a0, a1) of the old text became lines [b0, b1) of
// the new one; lines outside all regions are equal and aligned. A region
// may include unchanged lines.
type patchRegion struct {
	a0, a1, b0, b1 int
}

// patchUnifiedDiff renders a unified diff between two texts ("" when they
// are equal). regions, when known, bound the changes (wrong or nil regions
// fall back to diffing everything between the common prefix and suffix). A
// missing final newline is marked the way diff does.
func patchUnifiedDiff(oldText, newText, from, to string, regions []patchRegion) string {
	return patchUnifiedDiffLimit(oldText, newText, from, to, regions, -1)
}

// patchUnifiedDiffLimit is patchUnifiedDiff that stops adding hunks once
// the diff is longer than limit bytes (when limit >= 0); the caller cuts
// it.
func patchUnifiedDiffLimit(oldText, newText, from, to string, regions []patchRegion, limit int) string {
	if oldText == newText {
		return ""
	}
	a, b := patchDiffLines(oldText), patchDiffLines(newText)
	regions = patchCheckRegions(a, b, regions)

	var out strings.Builder
	for _, r := range regions {
		wa0 := max(0, r.a0-patchDiffContext)
		wb0 := r.b0 - (r.a0 - wa0)
		wa1 := min(len(a), r.a1+patchDiffContext)
		wb1 := r.b1 + (wa1 - r.a1)
		s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A:       a[wa0:wa1],
			B:       b[wb0:wb1],
			Context: patchDiffContext,
		})
		if err != nil {
			continue
		}
		out.WriteString(patchShiftHunks(s, wa0, wb0))
		if limit >= 0 && out.Len() > limit {
			break
		}
	}
	if out.Len() == 0 {
		return ""
	}
	return "--- " + from + "\n+++ " + to + "\n" + out.String()
}

// patchDiffLines splits s into lines that keep their newline; a last line
// without one carries the "\ No newline at end of file" marker, so a change
// of the final newline shows in the diff.
func patchDiffLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += "\n\\ No newline at end of file\n"
	return lines
}

// patchCheckRegions sorts and clamps regions, merges those whose windows
// would touch, and verifies that everything outside them is equal and
// aligned. Unusable regions give the single region between the common
// prefix and suffix.
func patchCheckRegions(a, b []string, regions []patchRegion) []patchRegion {
	if merged, ok := patchMergeRegions(a, b, regions); ok {
		return merged
	}
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return []patchRegion{{a0: p, a1: len(a) - s, b0: p, b1: len(b) - s}}
}

func patchMergeRegions(a, b []string, regions []patchRegion) ([]patchRegion, bool) {
	if len(regions) == 0 {
		return nil, false
	}
	rs := make([]patchRegion, len(regions))
	for i, r := range regions {
		r.a0, r.a1 = max(0, min(r.a0, len(a))), max(0, min(r.a1, len(a)))
		r.b0, r.b1 = max(0, min(r.b0, len(b))), max(0, min(r.b1, len(b)))
		if r.a1 < r.a0 || r.b1 < r.b0 {
			return nil, false
		}
		rs[i] = r
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].a0 < rs[j].a0 })

	var merged []patchRegion
	for _, r := range rs {
		if n := len(merged); n > 0 && r.a0-merged[n-1].a1 <= 2*patchDiffContext {
			m := &merged[n-1]
			m.a1, m.b0, m.b1 = max(m.a1, r.a1), min(m.b0, r.b0), max(m.b1, r.b1)
			continue
		}
		merged = append(merged, r)
	}

	// Every gap (before, between and after the regions) must be the same
	// lines on both sides.
	pa, pb := 0, 0
	gap := func(a1, b1 int) bool {
		if a1-pa != b1-pb || a1 < pa {
			return false
		}
		for i := 0; i < a1-pa; i++ {
			if a[pa+i] != b[pb+i] {
				return false
			}
		}
		return true
	}
	for _, r := range merged {
		if !gap(r.a0, r.b0) {
			return nil, false
		}
		pa, pb = r.a1, r.b1
	}
	if !gap(len(a), len(b)) {
		return nil, false
	}
	return merged, true
}

// patchHunkHeader matches the hunk headers difflib writes.
var patchHunkHeader = regexp.MustCompile(`^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@$`)

// patchShiftHunks adds line offsets to the hunk headers of a windowed diff.
// Content lines always start with ' ', '-', '+' or '\', never "@@".
func patchShiftHunks(s string, da, db int) string {
	if da == 0 && db == 0 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "@@ -") {
			continue
		}
		m := patchHunkHeader.FindStringSubmatch(strings.TrimSuffix(l, "\n"))
		if m == nil {
			continue
		}
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[3])
		lines[i] = "@@ -" + strconv.Itoa(x+da) + m[2] + " +" + strconv.Itoa(y+db) + m[4] + " @@\n"
	}
	return strings.Join(lines, "")
}

// patchSpanRegions converts replace-mode spans (offsets in content) into
// line regions of content and updated (content with the spans applied,
// plus lastLine when the final newline was restored afterwards).
func patchSpanRegions(content, updated string, spans []patchSpan, lastLine bool) []patchRegion {
	var regs []patchRegion
	aLine, aPos, bLine, bPos, delta := 0, 0, 0, 0, 0
	for _, s := range spans {
		ns := s.start + delta
		ne := ns + len(s.repl)
		if ns < bPos || ne > len(updated) {
			return nil
		}
		var r patchRegion
		aLine += strings.Count(content[aPos:s.start], "\n")
		r.a0 = aLine
		aLine += strings.Count(content[s.start:s.end], "\n")
		r.a1 = aLine + 1
		aPos = s.end
		bLine += strings.Count(updated[bPos:ns], "\n")
		r.b0 = bLine
		bLine += strings.Count(updated[ns:ne], "\n")
		r.b1 = bLine + 1
		bPos = ne
		regs = append(regs, r)
		delta += len(s.repl) - (s.end - s.start)
	}
	if lastLine {
		na, nb := strings.Count(content, "\n"), strings.Count(updated, "\n")
		regs = append(regs, patchRegion{a0: na - 1, a1: na, b0: nb - 1, b1: nb})
	}
	return regs
}
