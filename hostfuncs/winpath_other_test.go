//go:build !windows

package hostfuncs

import "testing"

// shortPathName is p: only Windows has short names.
func shortPathName(_ *testing.T, p string) string { return p }
