package hostfuncs

import "strings"

// Windows path spellings that name the same file as a plainer path (see
// realPathIn). They are string functions, so that they are tested on every
// platform; only a Windows host applies them.

// winStripDevicePrefix turns a Win32 device path (\\?\C:\x, \\.\C:\x,
// \??\C:\x, \\?\UNC\host\share\x) into the drive or UNC path it names
// (C:\x, \\host\share\x). Other paths are returned as they are.
func winStripDevicePrefix(p string) string {
	if len(p) < 4 || !isWinSep(p[0]) || !isWinSep(p[3]) {
		return p
	}
	switch {
	case isWinSep(p[1]) && (p[2] == '?' || p[2] == '.'), p[1] == '?' && p[2] == '?':
	default:
		return p
	}
	rest := p[4:]
	if len(rest) >= 2 && rest[1] == ':' && isASCIILetter(rest[0]) {
		return rest
	}
	if len(rest) >= 4 && strings.EqualFold(rest[:3], "UNC") && isWinSep(rest[3]) {
		return `\\` + rest[4:]
	}
	return p
}

// winName is the file name Win32 opens for the path component name: an
// NTFS stream suffix (":stream", "::$DATA") names a stream of that file,
// and trailing dots and spaces are dropped ("x." is "x"). "." and ".."
// are returned as they are; "" means the component names its parent.
func winName(name string) string {
	if name == "." || name == ".." {
		return name
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	return strings.TrimRight(name, ". ")
}

func isWinSep(c byte) bool { return c == '\\' || c == '/' }

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
