// Package humanpath quotes file paths for people to read: in messages,
// errors and logs. Go's %q escapes every backslash, so a Windows path
// shown with it reads "C:\\Users\\me\\x" and cannot be pasted back; Quote
// keeps the platform's own spelling.
package humanpath

import (
	"runtime"
	"strconv"
	"strings"
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
