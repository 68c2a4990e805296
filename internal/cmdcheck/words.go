package cmdcheck

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// field is one word of a command as the shell will see it once quotes are
// removed: r'm, "rm", \rm and $'\x72m' are all the field rm.
type field struct {
	// s is the text. A part only known at run time ($X, $(...), $((...)))
	// is kept as it was written, so that rules see "$X", never a guess.
	s string
	// lit: every part of s is known before the command runs, and s has
	// no unquoted glob (*, ?, [) that the shell would expand.
	lit bool
	// runtime: a part of s is only known at run time ($X, $(...)), as
	// opposed to a glob, whose literal prefix is known.
	runtime bool
	// word is the word s came from (several fields share it when $IFS
	// splits it); nil for fields joined into one (eval a b, env -S a b),
	// which keep theirs in joined.
	word   *syntax.Word
	joined []*syntax.Word
}

// words are the words f was read from.
func (f field) words() []*syntax.Word {
	if f.word != nil {
		return []*syntax.Word{f.word}
	}
	return f.joined
}

// maxBraceFields bounds what one word's brace expansion ({a,b}, {1..9})
// may turn into; a larger one stays a single non-literal field.
const maxBraceFields = 64

// fields turns the words of a command into the fields the shell runs,
// expanding braces ({rm,-rf,x} is three fields) and splitting on an
// unquoted $IFS (rm${IFS}-rf is two).
func (s *scan) fields(words []*syntax.Word) []field {
	var out []field
	for _, w := range words {
		out = append(out, s.wordFields(w)...)
	}
	return out
}

func (s *scan) wordFields(w *syntax.Word) []field {
	if !hasBraces(w) {
		return s.split(w)
	}
	// SplitBraces rewrites the word in place; work on a copy so the
	// tree (and the source offsets of its parts) stays as parsed.
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	if !syntax.SplitBraces(cp) {
		return s.split(w)
	}
	var out []field
	for bw, err := range expand.BracesSeq(nil, cp) {
		if err != nil || len(out) == maxBraceFields {
			return []field{{s: s.text(w), runtime: true, word: w}}
		}
		for _, f := range s.split(bw) {
			f.word = w
			out = append(out, f)
		}
	}
	return out
}

// hasBraces reports whether an unquoted part of w could be a brace
// expansion (cheap pre-check before the library splits it).
func hasBraces(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") && strings.Contains(l.Value, "}") {
			return true
		}
	}
	return false
}

// wordBuilder accumulates the fields of one word.
type wordBuilder struct {
	s       *scan
	word    *syntax.Word
	out     []field
	cur     strings.Builder
	lit     bool
	runtime bool
	started bool // a (possibly empty) quoted part was seen: "" is a field
}

func (s *scan) split(w *syntax.Word) []field {
	b := &wordBuilder{s: s, word: w, lit: true}
	for _, p := range w.Parts {
		b.part(p, false)
	}
	b.flush()
	return b.out
}

// literalText is w with its quotes removed (no field splitting), and
// whether all of it is known before the command runs.
func (s *scan) literalText(w *syntax.Word) field {
	b := &wordBuilder{s: s, word: w, lit: true}
	for _, p := range w.Parts {
		b.part(p, true)
	}
	return field{s: b.cur.String(), lit: b.lit, runtime: b.runtime, word: w}
}

func (b *wordBuilder) write(s string) {
	b.cur.WriteString(s)
	b.started = true
}

// dynamic writes a part only known at run time, as it was written.
func (b *wordBuilder) dynamic(n syntax.Node) {
	b.write(b.s.text(n))
	b.lit, b.runtime = false, true
}

func (b *wordBuilder) flush() {
	if b.started {
		b.out = append(b.out, field{s: b.cur.String(), lit: b.lit, runtime: b.runtime, word: b.word})
	}
	b.cur.Reset()
	b.lit, b.runtime, b.started = true, false, false
}

func (b *wordBuilder) part(p syntax.WordPart, quoted bool) {
	switch p := p.(type) {
	case *syntax.Lit:
		if quoted {
			b.write(unescapeQuoted(p.Value))
			return
		}
		v, glob := unescape(p.Value)
		b.write(v)
		if glob {
			b.lit = false
		}
	case *syntax.SglQuoted:
		if p.Dollar {
			b.write(ansiC(p.Value))
		} else {
			b.write(p.Value)
		}
	case *syntax.DblQuoted:
		b.started = true
		for _, q := range p.Parts {
			b.part(q, true)
		}
	case *syntax.ParamExp:
		b.param(p, quoted)
	case *syntax.ExtGlob:
		// A pattern like @(a|b): the shell picks the file names.
		b.dynamic(p)
	default: // command, process and arithmetic substitutions
		b.dynamic(p)
	}
}

// param handles $NAME: an unquoted $IFS separates fields (rm${IFS}-rf) and
// $HOME is the home directory (~), which rules know; any other parameter is
// only known at run time.
func (b *wordBuilder) param(p *syntax.ParamExp, quoted bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Names != 0 {
		b.dynamic(p)
		return
	}
	switch p.Param.Value {
	case "IFS":
		if !quoted {
			b.flush()
			return
		}
		b.write(" ")
	case "HOME":
		if p.Exp != nil || p.Slice != nil || p.Repl != nil || len(p.Modifiers) > 0 {
			b.dynamic(p)
			return
		}
		b.write("~")
	default:
		b.dynamic(p)
	}
}

// text is the source text of n.
func (s *scan) text(n syntax.Node) string {
	from, to := int(n.Pos().Offset()), int(n.End().Offset())
	if from < 0 || to > len(s.src) || from > to {
		return ""
	}
	return s.src[from:to]
}

// unescape removes the backslashes of an unquoted literal (\rm is rm) and
// reports whether it has an unescaped glob character.
func unescape(v string) (string, bool) {
	if !strings.ContainsAny(v, `\*?[`) {
		return v, false
	}
	var b strings.Builder
	glob := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case c == '*' || c == '?' || c == '[' && strings.IndexByte(v[i:], ']') > 0:
			// A lone [ is the test command, not a pattern.
			glob = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), glob
}

// unescapeQuoted removes the backslashes that escape a character inside
// double quotes or an unquoted here-document ($ ` " \).
func unescapeQuoted(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

var ansiEscapes = map[byte]byte{'a': '\a', 'b': '\b', 'e': 0x1b, 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// ansiC decodes the body of a $'...' string.
func ansiC(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		i++
		e := v[i]
		if r, ok := ansiEscapes[e]; ok {
			b.WriteByte(r)
			continue
		}
		switch e {
		case 'x', 'u', 'U':
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			n := 0
			for n < digits && i+1+n < len(v) && isHex(v[i+1+n]) {
				n++
			}
			val, _ := strconv.ParseUint(v[i+1:i+1+n], 16, 32)
			i += n
			if e == 'x' {
				b.WriteByte(byte(val))
			} else if utf8.ValidRune(rune(val)) {
				b.WriteRune(rune(val))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, k := int(e-'0'), 1
			for k < 3 && i+1 < len(v) && v[i+1] >= '0' && v[i+1] <= '7' {
				i++
				n = n*8 + int(v[i]-'0')
				k++
			}
			b.WriteByte(byte(n))
		case 'c':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i] & 0x1f)
			}
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
