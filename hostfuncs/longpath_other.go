//go:build !windows

package hostfuncs

// longPathName is p: only Windows has short names.
func longPathName(p string) string { return p }
