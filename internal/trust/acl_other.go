//go:build unix && !linux

package trust

// extendedACL reports false: only Linux's POSIX ACLs are read (elsewhere,
// the mode bits are what is checked).
func extendedACL(string) bool { return false }
