// Package humanpath quotes file paths for people to read: in messages,
// errors and logs. Go's %q escapes every backslash, so a Windows path
// shown with it reads "C:\\Users\\me\\x" and cannot be pasted back; Quote
// keeps the platform's own spelling. PyLiteral writes a path as the Python
// string a model pastes into a tool call.
package humanpath

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote returns p in double quotes as a person would type it. On Windows,
// where a path cannot hold a double quote, backslashes stay single; a
// control character (which no real path there holds) falls back to Go
// quoting, as does every path elsewhere, where a name may hold quotes or
// newlines.
func Quote(p string) string {
	return quote(p, runtime.GOOS)
}

func quote(p, goos string) string {
	if goos == "windows" && !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' }) {
		return `"` + p + `"`
	}
	return strconv.Quote(p)
}

// PyLiteral returns s as a Python string literal, for the tool calls a
// message tells a model to make (read_file(...)). A Windows path is a raw string
// (r"C:\Users\me\x.md", as a person would write it) when a raw string can
// hold it; otherwise s is a "..." literal with Python's escapes, and a
// byte that is not UTF-8 is the lone surrogate Python's surrogateescape
// decodes it to. Go's %q is not that: its \x escapes are bytes, Python's
// code points.
func PyLiteral(s string) string {
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
