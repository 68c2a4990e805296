//go:build !windows

package backend

// LocalRunsCmd reports whether a terminal() command on this host runs
// with cmd.exe: never off Windows, where it runs with sh -c.
func LocalRunsCmd() bool { return false }
