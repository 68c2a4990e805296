package hostfuncs

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Unified diffs for patch results, computed by go-udiff (gopls' diff).
// The patch knows which lines each change touched (patchRegion), so the
// diff is computed per region: go-udiff bounds its search and, once two
// texts differ by about a hundred inserted or deleted lines, reports the
// rest as one replaced block, which would turn a replace_all over a long
// file into a diff of most of it.

// patchDiffContext is the number of context lines around each change.
const patchDiffContext = 3

// Bounds on the diff a patch result carries. Rendering a diff costs a few
// dozen bytes a line of the old text on top of the texts, and a
// replace_all over a large file changes every line, so files past these
// sizes get a note instead of a diff, and the whole diff is cut at
// patchDiffMaxOutput.
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
		d = patchUnifiedDiff(oldText, newText, from, to, regions(), room)
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
func (w *patchDiffWriter) result(r result) result {
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
// fall back to diffing the whole texts). A missing final newline is marked
// the way diff does. With limit >= 0 it stops adding changes once they
// alone are longer than limit bytes, so the diff is longer than limit too
// and the caller cuts it. That also bounds the rendering, which counts the
// lines before each change from the start of the text: about a second for
// 60,000 separate one-line changes.
func patchUnifiedDiff(oldText, newText, from, to string, regions []patchRegion, limit int) string {
	if oldText == newText {
		return ""
	}
	windows, ok := patchWindows(oldText, newText, regions)
	if !ok {
		windows = []patchWindow{{old: oldText, new: newText}}
	}
	var edits []udiff.Edit
	size := 0
	for _, w := range windows {
		for _, e := range udiff.Lines(w.old, w.new) {
			e.Start += w.at
			e.End += w.at
			edits = append(edits, e)
			size += e.End - e.Start + len(e.New)
		}
		if limit >= 0 && size > limit {
			break
		}
	}
	d, err := udiff.ToUnified(from, to, oldText, edits, patchDiffContext)
	if err != nil {
		return "" // cannot happen: the edits are sorted and line-aligned
	}
	return d
}

// patchWindow is the part of the old text at byte offset at, and the new
// text that replaced it.
type patchWindow struct {
	at       int
	old, new string
}

// patchWindows turns regions into windows of the texts: it clamps and
// sorts them, joins those that overlap or touch, and checks that the texts
// around them are equal. ok is false when the regions are unusable.
func patchWindows(oldText, newText string, regions []patchRegion) (windows []patchWindow, ok bool) {
	if len(regions) == 0 {
		return nil, false
	}
	ao, bo := patchLineStarts(oldText), patchLineStarts(newText)
	na, nb := len(ao)-1, len(bo)-1
	rs := slices.Clone(regions)
	for i, r := range rs {
		r.a0, r.a1 = max(0, min(r.a0, na)), max(0, min(r.a1, na))
		r.b0, r.b1 = max(0, min(r.b0, nb)), max(0, min(r.b1, nb))
		if r.a1 < r.a0 || r.b1 < r.b0 {
			return nil, false
		}
		rs[i] = r
	}
	slices.SortStableFunc(rs, func(x, y patchRegion) int { return cmp.Compare(x.a0, y.a0) })

	var merged []patchRegion
	for _, r := range rs {
		if n := len(merged); n > 0 && r.a0 <= merged[n-1].a1 {
			m := &merged[n-1]
			m.a1, m.b0, m.b1 = max(m.a1, r.a1), min(m.b0, r.b0), max(m.b1, r.b1)
			continue
		}
		merged = append(merged, r)
	}

	// Every gap (before, between and after the regions) must be the same
	// text on both sides.
	pa, pb := 0, 0
	for _, r := range merged {
		if r.b0 < pb || oldText[ao[pa]:ao[r.a0]] != newText[bo[pb]:bo[r.b0]] {
			return nil, false
		}
		windows = append(windows, patchWindow{at: ao[r.a0], old: oldText[ao[r.a0]:ao[r.a1]], new: newText[bo[r.b0]:bo[r.b1]]})
		pa, pb = r.a1, r.b1
	}
	if oldText[ao[pa]:] != newText[bo[pb]:] {
		return nil, false
	}
	return windows, true
}

// patchLineStarts returns the byte offset of each line of s, then len(s);
// a last line without a newline counts.
func patchLineStarts(s string) []int {
	starts := make([]int, 1, strings.Count(s, "\n")+2)
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			if i < len(s) {
				starts = append(starts, len(s))
			}
			return starts
		}
		i += j + 1
		starts = append(starts, i)
	}
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
		aPos = s.end
		bLine += strings.Count(updated[bPos:ns], "\n")
		r.b0 = bLine
		bLine += strings.Count(updated[ns:ne], "\n")
		bPos = ne
		// The line the text after the span starts on changed too, unless
		// it starts a line in both texts.
		r.a1, r.b1 = aLine, bLine
		if !patchAtLineStart(content, s.end) || !patchAtLineStart(updated, ne) {
			r.a1++
			r.b1++
		}
		regs = append(regs, r)
		delta += len(s.repl) - (s.end - s.start)
	}
	if lastLine {
		na, nb := strings.Count(content, "\n"), strings.Count(updated, "\n")
		regs = append(regs, patchRegion{a0: na - 1, a1: na, b0: nb - 1, b1: nb})
	}
	return regs
}

// patchAtLineStart reports whether offset i of s starts a line.
func patchAtLineStart(s string, i int) bool {
	return i == 0 || s[i-1] == '\n'
}
