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

// patchLineSpan is one line of the raw content.
type patchLineSpan struct {
	start      int    // offset of the line's first byte
	contentEnd int    // offset of its terminator ("\r\n" or "\n"), or of EOF
	end        int    // offset after the terminator
	text       string // the line without its terminator
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

// patchFindMatches finds old in content at the strictest level that matches
// anything and returns the matches with their replacement text, already in
// the file's line-ending style and, for indentation-tolerant matches,
// re-indented.
func patchFindMatches(content, old, new string) ([]patchSpan, patchMatchKind) {
	crlf := patchUsesCRLF(content)

	// 1. Exact.
	if spans := patchFindExact(content, old, patchToEOL(new, crlf)); len(spans) > 0 {
		return spans, patchMatchExact
	}

	// 2. Line endings only.
	if strings.Contains(content, "\r") || strings.Contains(old, "\r") {
		if spans := patchFindIgnoringCR(content, old, patchToEOL(new, crlf)); len(spans) > 0 {
			return spans, patchMatchLineEndings
		}
	}

	// 3 and 4. Whole lines, ignoring trailing then surrounding whitespace.
	lines := patchSplitLines(content)
	if spans := patchFindLines(lines, old, new, crlf, patchMatchTrailingWS); len(spans) > 0 {
		return spans, patchMatchTrailingWS
	}
	if spans := patchFindLines(lines, old, new, crlf, patchMatchIndent); len(spans) > 0 {
		return spans, patchMatchIndent
	}
	return nil, patchMatchNone
}

func patchFindExact(content, old, repl string) []patchSpan {
	var spans []patchSpan
	for off := 0; off <= len(content); {
		i := strings.Index(content[off:], old)
		if i < 0 {
			break
		}
		start := off + i
		spans = append(spans, patchSpan{start: start, end: start + len(old), repl: repl})
		off = start + len(old)
	}
	return spans
}

// patchFindIgnoringCR matches old against content with CRLF read as LF on
// both sides, mapping the matches back to raw offsets.
func patchFindIgnoringCR(content, old, repl string) []patchSpan {
	var norm strings.Builder
	pos := make([]int, 0, len(content)+1) // raw offset of each normalized byte
	for i := 0; i < len(content); i++ {
		if content[i] == '\r' && i+1 < len(content) && content[i+1] == '\n' {
			pos = append(pos, i)
			norm.WriteByte('\n')
			i++
			continue
		}
		pos = append(pos, i)
		norm.WriteByte(content[i])
	}
	pos = append(pos, len(content))
	normOld := patchToLF(old)
	if normOld == "" {
		return nil
	}
	spans := patchFindExact(norm.String(), normOld, repl)
	for i := range spans {
		spans[i].start, spans[i].end = pos[spans[i].start], pos[spans[i].end]
	}
	return spans
}

// patchSplitLines splits raw content into lines. A final terminator does
// not start another (empty) line.
func patchSplitLines(content string) []patchLineSpan {
	var lines []patchLineSpan
	for start := 0; start < len(content); {
		nl := strings.IndexByte(content[start:], '\n')
		var l patchLineSpan
		l.start = start
		if nl < 0 {
			l.contentEnd, l.end = len(content), len(content)
		} else {
			l.contentEnd, l.end = start+nl, start+nl+1
			if l.contentEnd > start && content[l.contentEnd-1] == '\r' {
				l.contentEnd--
			}
		}
		l.text = content[l.start:l.contentEnd]
		lines = append(lines, l)
		start = l.end
	}
	return lines
}

// patchFindLines matches old as a run of whole lines at a tolerant level.
// The replacement spans the matched lines' text (and the last line's
// terminator when old ends with a newline).
func patchFindLines(lines []patchLineSpan, old, new string, crlf bool, kind patchMatchKind) []patchSpan {
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

	var spans []patchSpan
	n := len(oldLines)
	for i := 0; i+n <= len(lines); {
		ok := true
		for j := 0; j < n; j++ {
			if !eq(lines[i+j].text, oldLines[j]) {
				ok = false
				break
			}
		}
		if !ok {
			i++
			continue
		}
		last := lines[i+n-1]
		span := patchSpan{start: lines[i].start, end: last.contentEnd}
		text := normNew
		if oldTrail {
			span.end = last.end
			if last.end == last.contentEnd { // last line of a file without a final newline
				text = strings.TrimSuffix(text, "\n")
			}
		}
		if kind == patchMatchIndent {
			text = patchIndentDeltaFor(oldLines, lines[i:i+n]).applyAll(text)
		}
		span.repl = patchToEOL(text, crlf)
		spans = append(spans, span)
		i += n
	}
	return spans
}

// patchIndentDelta re-indents text written for one indentation (from) to
// another (to).
type patchIndentDelta struct {
	from, to string
}

// patchIndentDeltaFor compares the first non-blank line of old with the
// file line it matched.
func patchIndentDeltaFor(oldLines []string, matched []patchLineSpan) patchIndentDelta {
	for j, l := range oldLines {
		if strings.TrimSpace(l) != "" && j < len(matched) {
			return patchIndentDelta{from: patchLeadingWS(l), to: patchLeadingWS(matched[j].text)}
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
	for i, l := range patchSplitLines(content) {
		if i == maxLines {
			break
		}
		t := strings.TrimSpace(l.text)
		if t == "" || len(t) > maxLen {
			continue
		}
		if s := patchSimilarity(want, t); s > best {
			best, lineNo, text = s, i+1, l.text
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
