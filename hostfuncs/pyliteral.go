package hostfuncs

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyStr returns s as a Python string literal, for the tool calls a message
// tells a model to make (read_file("...")). A Windows path is a raw string
// (r"C:\Users\me\x.md", as a person would write it) when a raw string can
// hold it; otherwise s is a "..." literal with Python's escapes, and a
// byte that is not UTF-8 is the lone surrogate Python's surrogateescape
// decodes it to. Go's %q is not that: its \x escapes are bytes, Python's
// code points.
func pyStr(s string) string {
	if strings.Contains(s, `\`) && !strings.HasSuffix(s, `\`) && !strings.ContainsFunc(s, func(r rune) bool {
		return r == '"' || r == utf8.RuneError || !unicode.IsPrint(r)
	}) && utf8.ValidString(s) {
		return `r"` + s + `"`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\udc%02x`, s[i])
			i++
			continue
		}
		i += n
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
