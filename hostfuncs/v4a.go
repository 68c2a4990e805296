package hostfuncs

import (
	"fmt"
	"regexp"
	"strings"
)

// V4A is the multi-file patch format agents write for patch(mode="patch"):
//
//	*** Begin Patch
//	*** Add File: path
//	+line
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: new/path
//	@@ def anchor():
//	 context
//	-removed
//	+added
//	*** End of File
//	*** End Patch
//
// This file holds the parser and the in-memory applier of one Update
// section; patch.go resolves paths, reads files and writes the results.

const (
	v4aBeginMarker  = "*** Begin Patch"
	v4aEndMarker    = "*** End Patch"
	v4aAddPrefix    = "*** Add File:"
	v4aDeletePrefix = "*** Delete File:"
	v4aUpdatePrefix = "*** Update File:"
	v4aMovePrefix   = "*** Move to:"
	v4aEOFMarker    = "*** End of File"
)

// v4aOpKind is what a file section does.
type v4aOpKind int

const (
	v4aOpAdd v4aOpKind = iota
	v4aOpDelete
	v4aOpUpdate
)

// v4aFileOp is one file section of a patch.
type v4aFileOp struct {
	Kind    v4aOpKind
	Path    string
	MoveTo  string    // Update only; "" when the file stays put
	Content string    // Add only: the new file's text
	Hunks   []v4aHunk // Update only
	Line    int       // 1-based line of the section header in the patch
}

// v4aHunk is one change inside an Update section.
type v4aHunk struct {
	// Anchors are the texts after the hunk's "@@" markers (several
	// consecutive "@@ x" lines narrow the search step by step).
	Anchors []string
	Lines   []v4aLine
	// EOF is set by "*** End of File": the hunk must match at the end.
	EOF  bool
	Line int // 1-based line of the hunk's first line in the patch
}

// v4aLine is one hunk line: Op is ' ', '-' or '+'.
type v4aLine struct {
	Op   byte
	Text string
	// blank marks a context line that was an empty patch line (no ' '
	// prefix); trailing ones at the end of a section are dropped as
	// separators.
	blank bool
}

// v4aUnifiedHeader matches a unified-diff hunk header ("@@ -1,3 +1,4 @@
// tail"), which some agents write in place of a bare "@@".
var v4aUnifiedHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$`)

// v4aIsSectionHeader reports whether line starts a new file section or
// ends the patch.
func v4aIsSectionHeader(line string) bool {
	t := strings.TrimRight(line, " \t")
	return strings.HasPrefix(t, v4aAddPrefix) || strings.HasPrefix(t, v4aDeletePrefix) ||
		strings.HasPrefix(t, v4aUpdatePrefix) || t == v4aEndMarker
}

// v4aParse parses V4A patch text. It never panics; malformed input gives an
// error naming the offending line.
func v4aParse(text string) ([]v4aFileOp, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")

	// Locate "*** Begin Patch" (first non-blank line) and "*** End Patch"
	// (last non-blank line).
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return nil, messagef("Invalid patch: the patch is empty; expected %q ... %q", v4aBeginMarker, v4aEndMarker)
	}
	if strings.TrimSpace(lines[first]) != v4aBeginMarker {
		return nil, messagef("Invalid patch: the first line must be %q, got %q", v4aBeginMarker, v4aClip(lines[first]))
	}
	last := len(lines) - 1
	for last > first && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	if last == first || strings.TrimSpace(lines[last]) != v4aEndMarker {
		return nil, messagef("Invalid patch: missing %q as the last line", v4aEndMarker)
	}

	p := v4aParser{lines: lines, i: first + 1, end: last}
	ops, err := p.parse()
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, messagef("Invalid patch: no file sections between %q and %q", v4aBeginMarker, v4aEndMarker)
	}
	return ops, nil
}

type v4aParser struct {
	lines []string
	i     int // next line to read
	end   int // index of the "*** End Patch" line
}

func (p *v4aParser) errorf(idx int, format string, args ...any) error {
	return messagef("Invalid patch line %d: %s", idx+1, fmt.Sprintf(format, args...))
}

func (p *v4aParser) parse() ([]v4aFileOp, error) {
	var ops []v4aFileOp
	for p.i < p.end {
		raw := p.lines[p.i]
		line := strings.TrimRight(raw, " \t")
		switch {
		case line == "":
			p.i++
		case strings.HasPrefix(line, v4aAddPrefix):
			op, err := p.parseAdd(line)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		case strings.HasPrefix(line, v4aDeletePrefix):
			path, err := p.headerPath(line, v4aDeletePrefix)
			if err != nil {
				return nil, err
			}
			ops = append(ops, v4aFileOp{Kind: v4aOpDelete, Path: path, Line: p.i + 1})
			p.i++
		case strings.HasPrefix(line, v4aUpdatePrefix):
			op, err := p.parseUpdate(line)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		case line == v4aBeginMarker:
			return nil, p.errorf(p.i, "unexpected second %q", v4aBeginMarker)
		case line == v4aEndMarker:
			return nil, p.errorf(p.i, "%q must be the last line of the patch", v4aEndMarker)
		case strings.HasPrefix(line, "***"):
			return nil, p.errorf(p.i, "unknown header %q (expected %q, %q or %q)",
				v4aClip(line), v4aAddPrefix+" <path>", v4aUpdatePrefix+" <path>", v4aDeletePrefix+" <path>")
		default:
			return nil, p.errorf(p.i, "expected a file header (%q, %q or %q), got %q",
				v4aAddPrefix+" <path>", v4aUpdatePrefix+" <path>", v4aDeletePrefix+" <path>", v4aClip(raw))
		}
	}
	return ops, nil
}

func (p *v4aParser) headerPath(line, prefix string) (string, error) {
	path := strings.TrimSpace(strings.TrimPrefix(line, prefix))
	if path == "" {
		return "", p.errorf(p.i, "%q needs a path", strings.TrimSuffix(prefix, ":"))
	}
	return path, nil
}

func (p *v4aParser) parseAdd(header string) (v4aFileOp, error) {
	path, err := p.headerPath(header, v4aAddPrefix)
	if err != nil {
		return v4aFileOp{}, err
	}
	op := v4aFileOp{Kind: v4aOpAdd, Path: path, Line: p.i + 1}
	p.i++
	var body []string
	blanks := 0 // pending empty patch lines, kept only if more '+' lines follow
	for p.i < p.end && !v4aIsSectionHeader(p.lines[p.i]) {
		raw := p.lines[p.i]
		switch {
		case raw == "" || strings.TrimSpace(raw) == "":
			blanks++
		case raw[0] == '+':
			for ; blanks > 0; blanks-- {
				body = append(body, "")
			}
			body = append(body, raw[1:])
		default:
			return v4aFileOp{}, p.errorf(p.i, "in %q for %s every line must start with '+', got %q",
				v4aAddPrefix, path, v4aClip(raw))
		}
		p.i++
	}
	if len(body) > 0 {
		op.Content = strings.Join(body, "\n") + "\n"
	}
	return op, nil
}

func (p *v4aParser) parseUpdate(header string) (v4aFileOp, error) {
	path, err := p.headerPath(header, v4aUpdatePrefix)
	if err != nil {
		return v4aFileOp{}, err
	}
	op := v4aFileOp{Kind: v4aOpUpdate, Path: path, Line: p.i + 1}
	p.i++
	j := p.i
	for j < p.end && strings.TrimSpace(p.lines[j]) == "" {
		j++
	}
	if j < p.end && strings.HasPrefix(strings.TrimRight(p.lines[j], " \t"), v4aMovePrefix) {
		p.i = j
		to, err := p.headerPath(strings.TrimRight(p.lines[p.i], " \t"), v4aMovePrefix)
		if err != nil {
			return v4aFileOp{}, err
		}
		op.MoveTo = to
		p.i++
	}

	var cur *v4aHunk
	flush := func() {
		if cur != nil {
			cur.Lines = v4aTrimBlankTail(cur.Lines)
			if len(cur.Lines) > 0 {
				op.Hunks = append(op.Hunks, *cur)
			}
			cur = nil
		}
	}
	for p.i < p.end && !v4aIsSectionHeader(p.lines[p.i]) {
		raw := p.lines[p.i]
		trimmed := strings.TrimRight(raw, " \t")
		switch {
		case strings.HasPrefix(trimmed, "@@"):
			anchor := v4aAnchorText(trimmed)
			if cur != nil && len(cur.Lines) > 0 {
				flush()
			}
			if cur == nil {
				cur = &v4aHunk{Line: p.i + 1}
			}
			if anchor != "" {
				cur.Anchors = append(cur.Anchors, anchor)
			}
		case trimmed == v4aEOFMarker:
			if cur == nil || len(cur.Lines) == 0 {
				return v4aFileOp{}, p.errorf(p.i, "%q must follow the lines of a hunk", v4aEOFMarker)
			}
			cur.EOF = true
			flush()
		case strings.HasPrefix(trimmed, v4aMovePrefix):
			return v4aFileOp{}, p.errorf(p.i, "%q must come right after %q", v4aMovePrefix, v4aUpdatePrefix+" "+path)
		case strings.HasPrefix(trimmed, "***"):
			return v4aFileOp{}, p.errorf(p.i, "unknown header %q in the section for %s", v4aClip(trimmed), path)
		case raw == "":
			if cur == nil {
				cur = &v4aHunk{Line: p.i + 1}
			}
			cur.Lines = append(cur.Lines, v4aLine{Op: ' ', blank: true})
		case raw[0] == ' ' || raw[0] == '-' || raw[0] == '+':
			if cur == nil {
				cur = &v4aHunk{Line: p.i + 1}
			}
			cur.Lines = append(cur.Lines, v4aLine{Op: raw[0], Text: raw[1:]})
		default:
			return v4aFileOp{}, p.errorf(p.i, "in the section for %s, hunk lines must start with ' ' (context), '-' (remove) or '+' (add), got %q",
				path, v4aClip(raw))
		}
		p.i++
	}
	if cur != nil && len(cur.Lines) == 0 && len(cur.Anchors) > 0 {
		return v4aFileOp{}, p.errorf(cur.Line-1, "hunk for %s has an @@ line but no lines", path)
	}
	flush()
	if len(op.Hunks) == 0 && op.MoveTo == "" {
		return v4aFileOp{}, messagef("Invalid patch line %d: %q has no hunks", op.Line, v4aUpdatePrefix+" "+path)
	}
	return op, nil
}

// v4aAnchorText returns the context text of an "@@" line: "" for a bare
// "@@", the tail of a unified-diff header, or the text after "@@".
func v4aAnchorText(line string) string {
	if m := v4aUnifiedHeader.FindStringSubmatch(line); m != nil {
		return strings.TrimSpace(m[1])
	}
	a := strings.TrimSpace(strings.TrimPrefix(line, "@@"))
	if strings.HasSuffix(a, " @@") {
		a = strings.TrimSpace(strings.TrimSuffix(a, " @@"))
	}
	if a == "@@" {
		a = ""
	}
	return a
}

// v4aTrimBlankTail drops the empty patch lines ending a hunk: they separate
// sections rather than match blank lines of the file.
func v4aTrimBlankTail(lines []v4aLine) []v4aLine {
	for len(lines) > 0 && lines[len(lines)-1].blank {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// v4aClip shortens s for an error message.
func v4aClip(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// v4aFile is a text file split into lines for hunk application. Each line
// keeps a trailing "\r" when it had one, so mixed line endings survive.
type v4aFile struct {
	lines   []string
	finalNL bool // the text ends with a newline (true for an empty file)
	crlf    bool // CRLF dominates: added lines get "\r"
}

func v4aSplit(text string) v4aFile {
	f := v4aFile{finalNL: true}
	if text == "" {
		return f
	}
	crlf := strings.Count(text, "\r\n")
	f.crlf = crlf > 0 && crlf >= strings.Count(text, "\n")-crlf
	f.finalNL = strings.HasSuffix(text, "\n")
	body := strings.TrimSuffix(text, "\n")
	f.lines = strings.Split(body, "\n")
	return f
}

func (f v4aFile) join() string {
	if len(f.lines) == 0 {
		return ""
	}
	lines := f.lines
	if !f.finalNL && f.crlf {
		lines = append([]string(nil), lines...)
		lines[len(lines)-1] = strings.TrimSuffix(lines[len(lines)-1], "\r")
	}
	s := strings.Join(lines, "\n")
	if f.finalNL {
		s += "\n"
	}
	return s
}

// v4aMatchLevel is how loosely a hunk matched the file.
type v4aMatchLevel int

const (
	v4aExact       v4aMatchLevel = iota // identical apart from a CR before the newline
	v4aTrailingWS                       // trailing whitespace differs
	v4aLeadingWS                        // indentation differs too
	v4aMatchLevels                      // number of levels
)

// v4aLinesEqual compares a file line with a patch line at level.
func v4aLinesEqual(fileLine, patchLine string, level v4aMatchLevel) bool {
	fileLine = strings.TrimSuffix(fileLine, "\r")
	patchLine = strings.TrimSuffix(patchLine, "\r")
	switch level {
	case v4aExact:
		return fileLine == patchLine
	case v4aTrailingWS:
		return strings.TrimRight(fileLine, " \t\f\v\r") == strings.TrimRight(patchLine, " \t\f\v\r")
	default:
		return strings.TrimSpace(fileLine) == strings.TrimSpace(patchLine)
	}
}

// v4aFind returns the first index >= start where want matches lines at the
// loosest level needed (trying stricter levels first), or -1. With atEOF the
// match must end at the last line (falling back to any position).
func v4aFind(lines, want []string, start int, atEOF bool) (int, v4aMatchLevel) {
	if start < 0 {
		start = 0
	}
	for level := v4aExact; level < v4aMatchLevels; level++ {
		if atEOF {
			if i := len(lines) - len(want); i >= start && v4aMatchAt(lines, want, i, level) {
				return i, level
			}
		}
		for i := start; i+len(want) <= len(lines); i++ {
			if v4aMatchAt(lines, want, i, level) {
				return i, level
			}
		}
	}
	return -1, v4aExact
}

func v4aMatchAt(lines, want []string, i int, level v4aMatchLevel) bool {
	for j, w := range want {
		if !v4aLinesEqual(lines[i+j], w, level) {
			return false
		}
	}
	return true
}

// v4aFindAnchor finds the line an "@@ anchor" names at or after start:
// equal, then equal ignoring surrounding whitespace, then containing it.
func v4aFindAnchor(lines []string, anchor string, start int) int {
	for level := v4aExact; level < v4aMatchLevels; level++ {
		for i := max(start, 0); i < len(lines); i++ {
			if v4aLinesEqual(lines[i], anchor, level) {
				return i
			}
		}
	}
	a := strings.TrimSpace(anchor)
	for i := max(start, 0); i < len(lines); i++ {
		if strings.Contains(lines[i], a) {
			return i
		}
	}
	return -1
}

// v4aApplyHunks applies an Update section's hunks to text and returns the
// new text. Hunks are located in order, each searching forward from where
// the previous one ended. display names the file in errors.
func v4aApplyHunks(text string, hunks []v4aHunk, display string) (string, []patchRegion, error) {
	f := v4aSplit(text)
	type repl struct {
		at, n int
		with  []string
	}
	var repls []repl
	cursor := 0
	for hi, h := range hunks {
		start, anchorAt := cursor, -1
		for _, a := range h.Anchors {
			idx := v4aFindAnchor(f.lines, a, start)
			if idx < 0 {
				return "", nil, messagef("Could not apply hunk %d of %d (patch line %d) to %s: anchor %q not found%s. No files were modified.",
					hi+1, len(hunks), h.Line, display, v4aClip(a), v4aAfterLine(start))
			}
			start, anchorAt = idx+1, idx
		}
		var want []string
		for _, l := range h.Lines {
			if l.Op != '+' {
				want = append(want, l.Text)
			}
		}
		if len(want) > 0 && anchorAt >= 0 {
			// The hunk may repeat the anchor line as its first context line.
			start = anchorAt
		}
		var at int
		level := v4aExact
		switch {
		case len(want) == 0 && h.EOF:
			at = len(f.lines)
		case len(want) == 0:
			at = start
		default:
			at, level = v4aFind(f.lines, want, start, h.EOF)
			if at < 0 {
				return "", nil, messagef("Could not apply hunk %d of %d (patch line %d) to %s: its context and removed lines were not found%s. The hunk expects:\n%s\nNo files were modified.",
					hi+1, len(hunks), h.Line, display, v4aAfterLine(start), v4aHunkExcerpt(h))
			}
		}
		eol := ""
		if f.crlf {
			eol = "\r"
		}
		delta := patchIndentDelta{}
		if level == v4aLeadingWS {
			delta = v4aHunkIndentDelta(h, f.lines[at:])
		}
		var with []string
		k := at
		for _, l := range h.Lines {
			switch l.Op {
			case '+':
				with = append(with, delta.apply(l.Text)+eol)
			case '-':
				k++
			default:
				with = append(with, f.lines[k]) // keep the file's own context line
				k++
			}
		}
		repls = append(repls, repl{at: at, n: len(want), with: with})
		cursor = at + len(want)
	}

	out := make([]string, 0, len(f.lines))
	regions := make([]patchRegion, 0, len(repls)+1)
	prev := 0
	for _, r := range repls {
		out = append(out, f.lines[prev:r.at]...)
		regions = append(regions, patchRegion{a0: r.at, a1: r.at + r.n, b0: len(out), b1: len(out) + len(r.with)})
		out = append(out, r.with...)
		prev = r.at + r.n
	}
	out = append(out, f.lines[prev:]...)
	// The last line's newline handling may differ; let the diff look there.
	regions = append(regions, patchRegion{a0: len(f.lines) - 1, a1: len(f.lines), b0: len(out) - 1, b1: len(out)})
	f.lines = out
	return f.join(), regions, nil
}

// v4aHunkIndentDelta derives the re-indentation for a hunk matched with
// indentation drift: from the first non-blank old line to the file line it
// matched.
func v4aHunkIndentDelta(h v4aHunk, matched []string) patchIndentDelta {
	k := 0
	for _, l := range h.Lines {
		if l.Op == '+' {
			continue
		}
		if strings.TrimSpace(l.Text) != "" && k < len(matched) {
			return patchIndentDelta{from: patchLeadingWS(l.Text), to: patchLeadingWS(strings.TrimSuffix(matched[k], "\r"))}
		}
		k++
	}
	return patchIndentDelta{}
}

func v4aAfterLine(start int) string {
	if start <= 0 {
		return ""
	}
	return fmt.Sprintf(" after line %d", start)
}

// v4aHunkExcerpt shows a hunk's first lines, prefixed as in the patch.
func v4aHunkExcerpt(h v4aHunk) string {
	const maxLines = 6
	var b strings.Builder
	for _, a := range h.Anchors {
		b.WriteString("@@ " + v4aClip(a) + "\n")
	}
	for i, l := range h.Lines {
		if i == maxLines {
			fmt.Fprintf(&b, "... (%d more lines)\n", len(h.Lines)-maxLines)
			break
		}
		b.WriteByte(l.Op)
		b.WriteString(v4aClip(l.Text))
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}
