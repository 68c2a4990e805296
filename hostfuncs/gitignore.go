package hostfuncs

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ignoreRule is one pattern line of a .gitignore file.
type ignoreRule struct {
	// glob is the pattern in doublestar syntax (braces escaped, since
	// gitignore has no alternation).
	glob string
	// negate re-includes what earlier rules excluded ("!pattern").
	negate bool
	// dirOnly matches directories only (a trailing "/").
	dirOnly bool
	// anchored patterns contain a slash and match the path relative to the
	// .gitignore's directory; the others match a base name at any depth.
	anchored bool
	// insideOnly is set for a trailing "/**" to the glob of the directory
	// itself, which the rule must not match (only what is inside it).
	insideOnly string
}

// gitignore holds the rules of one .gitignore file. base is the directory
// holding it, as a slash-separated path relative to the matcher's top
// directory ("" for the top itself).
type gitignore struct {
	base  string
	rules []ignoreRule
}

// parseGitignore parses the content of a .gitignore file located at base.
// It follows gitignore(5): blank lines and "#" comments are skipped,
// trailing unescaped spaces are trimmed, "!" negates, a trailing "/" matches
// directories only, a slash at the start or in the middle anchors the
// pattern to base, and "*", "?", "[...]" and "**" are wildcards. Invalid
// patterns are ignored.
func parseGitignore(base string, data []byte) *gitignore {
	g := &gitignore{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text()); ok {
			g.rules = append(g.rules, r)
		}
	}
	return g
}

// parseIgnoreLine parses one .gitignore line.
func parseIgnoreLine(line string) (ignoreRule, bool) {
	var r ignoreRule
	line = strings.TrimSuffix(line, "\r")
	line = strings.TrimPrefix(line, "\uFEFF")
	// Trailing spaces are dropped unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	if line == "" || strings.HasPrefix(line, "#") {
		return r, false
	}
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return r, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			return r, false
		}
	}
	if r.anchored && strings.HasSuffix(line, "/**") {
		r.insideOnly = escapeBraces(strings.TrimSuffix(line, "/**"))
	}
	r.glob = escapeBraces(line)
	if !doublestar.ValidatePattern(r.glob) {
		return r, false
	}
	return r, true
}

// escapeBraces backslash-escapes "{" and "}", which doublestar would read as
// alternation but gitignore treats literally.
func escapeBraces(s string) string {
	if !strings.ContainsAny(s, "{}") {
		return s
	}
	var b strings.Builder
	escaped := false
	for _, c := range s {
		if !escaped && (c == '{' || c == '}') {
			b.WriteByte('\\')
		}
		escaped = !escaped && c == '\\'
		b.WriteRune(c)
	}
	return b.String()
}

// match reports whether a rule of g matches p (slash-separated, relative
// to the top directory) and, if so, whether the last matching rule ignores
// it.
func (g *gitignore) match(p string, isDir bool) (matched, ignored bool) {
	rel := p
	if g.base != "" {
		if !strings.HasPrefix(p, g.base+"/") {
			return false, false
		}
		rel = p[len(g.base)+1:]
	}
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	for i := len(g.rules) - 1; i >= 0; i-- {
		r := &g.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		var ok bool
		if r.anchored {
			ok = doublestar.MatchUnvalidated(r.glob, rel) && (r.insideOnly == "" || !doublestar.MatchUnvalidated(r.insideOnly, rel))
		} else {
			ok = doublestar.MatchUnvalidated(r.glob, name)
		}
		if ok {
			return true, !r.negate
		}
	}
	return false, false
}

// ignoreStack is the chain of .gitignore files that apply inside one
// directory, shallowest first.
type ignoreStack []*gitignore

// push returns the stack with g added on top, never sharing the backing
// array with s.
func (s ignoreStack) push(g *gitignore) ignoreStack {
	if g == nil || len(g.rules) == 0 {
		return s
	}
	out := make(ignoreStack, len(s), len(s)+1)
	copy(out, s)
	return append(out, g)
}

// match reports whether p itself is ignored: the deepest .gitignore with a
// matching rule decides, and within a file the last matching rule wins. It
// does not look at p's parent directories: the walk never enters an
// ignored directory (git cannot re-include a file inside one).
func (s ignoreStack) match(p string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		if m, ign := s[i].match(p, isDir); m {
			return ign
		}
	}
	return false
}
