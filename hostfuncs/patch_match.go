package hostfuncs

import (
	"strings"
)

// Matching for patch(mode="replace"): the exact text first, then
// progressively more tolerant comparisons, stopping at the first level that
// finds anything.

// patchMatchKind says how old_string was found.
type patchMatchKind int

const (
	patchMatchNone        patchMatchKind = iota
	patchMatchExact                      // byte-for-byte
	patchMatchLineEndings                // equal once CRLF is read as LF
	patchMatchTrailingWS                 // whole lines equal ignoring trailing whitespace
	patchMatchIndent                     // whole lines equal ignoring surrounding whitespace
)

// patchSpan is one match in the raw file content: bytes [start, end) are
// replaced by repl.
type patchSpan struct {
	start, end int
	repl       string
}

// patchUsesCRLF reports whether CRLF is content's dominant line ending.
func patchUsesCRLF(content string) bool {
	crlf := strings.Count(content, "\r\n")
	return crlf > 0 && crlf >= strings.Count(content, "\n")-crlf
}

// patchToLF turns CRLF line endings into LF.
func patchToLF(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// patchToEOL writes s (any line endings) with the file's line ending.
func patchToEOL(s string, crlf bool) string {
	s = patchToLF(s)
	if crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// patchMatches is what patchFindMatches found.
type patchMatches struct {
	kind patchMatchKind
	// count is the number of matches at that level; spans holds them all
	// unless there are more than keep or the result would be too large.
	count int
	spans []patchSpan
	// size is the size of the content with the matches replaced (0 when
	// there are more than keep). Over patchMaxBytes, it may be a lower
	// bound: atLeast says so, and spans may stop short.
	size    int
	atLeast bool
}

// patchCollector gathers matches up to a limit, so that a file of a
// million one-byte matches costs a count, not a million spans.
type patchCollector struct {
	keep int
	m    patchMatches
}

// add records the match [start, end); repl is only called for a match
// that is kept.
func (c *patchCollector) add(start, end int, repl func() string) {
	c.m.count++
	if c.m.count > c.keep || c.m.size > patchMaxBytes {
		return
	}
	r := repl()
	c.m.size += len(r) - (end - start)
	c.m.spans = append(c.m.spans, patchSpan{start: start, end: end, repl: r})
}

// patchFindMatches finds old in content at the strictest level that matches
// anything and returns the matches with their replacement text, already in
// the file's line-ending style and, for indentation-tolerant matches,
// re-indented. It keeps at most keep spans, and stops keeping them once
// the result would exceed patchMaxBytes; it allocates nothing per match
// beyond those, so the caller can refuse a patch before building it.
func patchFindMatches(content, old, new string, keep int) patchMatches {
	crlf := patchUsesCRLF(content)
	newEOL := patchToEOL(new, crlf)
	// collect counts the matches of a level first, then gathers them only
	// when there are at most keep: more would be refused anyway.
	collect := func(kind patchMatchKind, find func(c *patchCollector)) (patchMatches, bool) {
		count := patchCollector{keep: 0}
		find(&count)
		if n := count.m.count; n == 0 || n > keep {
			return patchMatches{kind: kind, count: n}, n > 0
		}
		c := patchCollector{keep: keep, m: patchMatches{kind: kind, size: len(content)}}
		find(&c)
		c.m.atLeast = len(c.m.spans) < c.m.count
		return c.m, true
	}

	// 1. Exact: counted first, so a huge number of matches or a huge
	// result is known before any span is allocated.
	if n := strings.Count(content, old); n > 0 {
		size := len(content) + n*(len(newEOL)-len(old))
		if n > keep || size > patchMaxBytes {
			if n > keep {
				size = 0
			}
			return patchMatches{kind: patchMatchExact, count: n, size: size}
		}
		m, _ := collect(patchMatchExact, func(c *patchCollector) { patchFindExact(content, old, newEOL, c) })
		return m
	}

	// 2. Line endings only.
	if strings.Contains(content, "\r") || strings.Contains(old, "\r") {
		if m, ok := collect(patchMatchLineEndings, func(c *patchCollector) { patchFindIgnoringCR(content, old, newEOL, c) }); ok {
			return m
		}
	}

	// 3 and 4. Whole lines, ignoring trailing then surrounding whitespace.
	for _, kind := range []patchMatchKind{patchMatchTrailingWS, patchMatchIndent} {
		if m, ok := collect(kind, func(c *patchCollector) { patchFindLines(content, old, new, crlf, kind, c) }); ok {
			return m
		}
	}
	return patchMatches{kind: patchMatchNone, size: len(content)}
}

func patchFindExact(content, old, repl string, c *patchCollector) {
	if old == "" {
		return
	}
	for off := 0; off <= len(content); {
		i := strings.Index(content[off:], old)
		if i < 0 {
			break
		}
		start := off + i
		c.add(start, start+len(old), func() string { return repl })
		off = start + len(old)
	}
}

// patchFindIgnoringCR matches old against content with CRLF read as LF on
// both sides, mapping the matches back to raw offsets.
func patchFindIgnoringCR(content, old, repl string, c *patchCollector) {
	normOld := patchToLF(old)
	if normOld == "" {
		return
	}
	norm := patchToLF(content)
	first := len(c.m.spans)
	patchFindExact(norm, normOld, repl, c)
	// Map normalized offsets (increasing) back to raw ones in one pass:
	// a normalized "\n" from "\r\n" stands at the raw '\r'.
	raw, at := 0, 0
	toRaw := func(n int) int {
		for ; at < n; at++ {
			if content[raw] == '\r' && raw+1 < len(content) && content[raw+1] == '\n' {
				raw++
			}
			raw++
		}
		return raw
	}
	size := len(content)
	for i := first; i < len(c.m.spans); i++ {
		s := &c.m.spans[i]
		s.start = toRaw(s.start)
		s.end = toRaw(s.end)
		size += len(s.repl) - (s.end - s.start)
	}
	if len(c.m.spans) == c.m.count {
		// Exact now; when collection stopped short, the estimate that
		// stopped it stands.
		c.m.size = size
	}
}

// patchNextLine returns the line of content starting at start: the offset
// of its terminator ("\r\n" or "\n", or EOF) and the offset after it.
func patchNextLine(content string, start int) (contentEnd, end int) {
	nl := strings.IndexByte(content[start:], '\n')
	if nl < 0 {
		return len(content), len(content)
	}
	contentEnd, end = start+nl, start+nl+1
	if contentEnd > start && content[contentEnd-1] == '\r' {
		contentEnd--
	}
	return contentEnd, end
}

// patchFindLines matches old as a run of whole lines at a tolerant level.
// The replacement spans the matched lines' text (and the last line's
// terminator when old ends with a newline). Lines are walked in place: a
// file of millions of short lines costs no per-line memory.
func patchFindLines(content, old, new string, crlf bool, kind patchMatchKind, c *patchCollector) {
	normOld := patchToLF(old)
	oldTrail := strings.HasSuffix(normOld, "\n")
	oldLines := strings.Split(strings.TrimSuffix(normOld, "\n"), "\n")
	normNew := patchToLF(new)

	eq := func(a, b string) bool {
		return strings.TrimRight(a, " \t\r\f\v") == strings.TrimRight(b, " \t\r\f\v")
	}
	if kind == patchMatchIndent {
		eq = func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) }
	}

	n := len(oldLines)
	matched := make([]string, n) // the file lines of the current candidate
	for start := 0; start < len(content); {
		pos, ok := start, true
		var lastEnd, lastContentEnd int
		for j := 0; j < n; j++ {
			if pos >= len(content) {
				ok = false
				break
			}
			ce, e := patchNextLine(content, pos)
			if matched[j] = content[pos:ce]; !eq(matched[j], oldLines[j]) {
				ok = false
				break
			}
			lastContentEnd, lastEnd, pos = ce, e, e
		}
		if !ok {
			_, start = patchNextLine(content, start)
			continue
		}
		end := lastContentEnd
		text := normNew
		if oldTrail {
			end = lastEnd
			if lastEnd == lastContentEnd { // last line of a file without a final newline
				text = strings.TrimSuffix(text, "\n")
			}
		}
		c.add(start, end, func() string {
			if kind == patchMatchIndent {
				text = patchIndentDeltaFor(oldLines, matched).applyAll(text)
			}
			return patchToEOL(text, crlf)
		})
		start = lastEnd
	}
}

// patchIndentDelta re-indents text written for one indentation (from) to
// another (to).
type patchIndentDelta struct {
	from, to string
}

// patchIndentDeltaFor compares the first non-blank line of old with the
// file line it matched.
func patchIndentDeltaFor(oldLines, matched []string) patchIndentDelta {
	for j, l := range oldLines {
		if strings.TrimSpace(l) != "" && j < len(matched) {
			return patchIndentDelta{from: patchLeadingWS(l), to: patchLeadingWS(matched[j])}
		}
	}
	return patchIndentDelta{}
}

// patchLeadingWS returns s's leading spaces and tabs.
func patchLeadingWS(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

func (d patchIndentDelta) applyAll(text string) string {
	if d.from == d.to {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = d.apply(l)
	}
	return strings.Join(lines, "\n")
}

// apply re-indents one line. Converting between spaces and tabs (when the
// two indents are pure and their widths divide) re-expresses every level;
// otherwise the indent prefix is swapped, added or trimmed.
func (d patchIndentDelta) apply(line string) string {
	if d.from == d.to || strings.TrimSpace(line) == "" {
		return line
	}
	ws := patchLeadingWS(line)
	rest := line[len(ws):]
	onlyOf := func(s string, c rune) bool { return s != "" && strings.Trim(s, string(c)) == "" }
	switch {
	case onlyOf(d.from, ' ') && onlyOf(d.to, '\t') && len(d.from)%len(d.to) == 0 && strings.Trim(ws, " ") == "":
		per := len(d.from) / len(d.to) // spaces per tab
		return strings.Repeat("\t", len(ws)/per) + strings.Repeat(" ", len(ws)%per) + rest
	case onlyOf(d.from, '\t') && onlyOf(d.to, ' ') && len(d.to)%len(d.from) == 0 && strings.Trim(ws, "\t") == "":
		per := len(d.to) / len(d.from) // spaces per tab
		return strings.Repeat(" ", len(ws)*per) + rest
	case strings.HasPrefix(ws, d.from):
		return d.to + line[len(d.from):]
	case len(d.to) > len(d.from):
		return d.to[:len(d.to)-len(d.from)] + line
	default:
		cut := min(len(d.from)-len(d.to), len(ws))
		return ws[cut:] + rest
	}
}

// patchClosestLine finds the file line most like old's first non-blank
// line, for a "not found" hint. ok is false when nothing is close.
func patchClosestLine(content, old string) (lineNo int, text string, ok bool) {
	var want string
	for _, l := range strings.Split(patchToLF(old), "\n") {
		if strings.TrimSpace(l) != "" {
			want = strings.TrimSpace(l)
			break
		}
	}
	if want == "" {
		return 0, "", false
	}
	const maxLines, maxLen = 20000, 1000
	best := 0.0
	for i, start := 0, 0; i < maxLines && start < len(content); i++ {
		ce, end := patchNextLine(content, start)
		line := content[start:ce]
		start = end
		t := strings.TrimSpace(line)
		if t == "" || len(t) > maxLen {
			continue
		}
		if s := patchSimilarity(want, t); s > best {
			best, lineNo, text = s, i+1, line
		}
	}
	return lineNo, text, best >= 0.6
}

// patchSimilarity is the Dice coefficient of the byte bigrams of a and b.
func patchSimilarity(a, b string) float64 {
	if a == b {
		return 1
	}
	if len(a) < 2 || len(b) < 2 {
		return 0
	}
	counts := make(map[string]int, len(a))
	for i := 0; i+1 < len(a); i++ {
		counts[a[i:i+2]]++
	}
	common := 0
	for i := 0; i+1 < len(b); i++ {
		if counts[b[i:i+2]] > 0 {
			counts[b[i:i+2]]--
			common++
		}
	}
	return 2 * float64(common) / float64(len(a)-1+len(b)-1)
}
