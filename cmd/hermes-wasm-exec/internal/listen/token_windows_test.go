//go:build windows

package listen

import "testing"

// requireOwnerOnly: Windows has no modes; the generated file's DACL is
// checked by the command's tests (requirePrivateFile) on a real Windows.
func requireOwnerOnly(*testing.T, string, string) {}
