package hostfuncs

import (
	"path/filepath"
	"strings"
	"syscall"
)

// longPathName expands the 8.3 short names (PROGRA~1) in the absolute path
// p with GetLongPathName, on the longest part of p that exists; the rest
// is kept as it is.
func longPathName(p string) string {
	rest := ""
	for dir := p; ; {
		if long, ok := getLongPathName(dir); ok {
			if rest == "" {
				return long
			}
			return strings.TrimRight(long, `\`) + rest
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = p[len(strings.TrimRight(parent, `\`)):]
		dir = parent
	}
}

func getLongPathName(p string) (string, bool) {
	u, err := syscall.UTF16PtrFromString(p)
	if err != nil {
		return "", false
	}
	buf := make([]uint16, syscall.MAX_PATH)
	for {
		n, err := syscall.GetLongPathName(u, &buf[0], uint32(len(buf)))
		if err != nil || n == 0 {
			return "", false
		}
		if int(n) < len(buf) {
			return syscall.UTF16ToString(buf[:n]), true
		}
		buf = make([]uint16, n)
	}
}
