package backend

import "io/fs"

// FileID tells files apart across their names. A hard link is the same
// file under a second name, with no "real" path to resolve, so the file
// tools compare identities to see that two names are one file
// (hostfuncs/hardlink.go).
type FileID struct {
	// Dev and Ino are the device and inode numbers; on Windows the volume
	// serial number and the file index.
	Dev, Ino uint64
	// Nlink is how many names (hard links) the file has.
	Nlink uint64
}

// IDOf returns the identity that fi, as an FS's Stat, Lstat or ReadDir
// returns it, carries: a local file's on Linux and macOS (from its
// stat), a remote target's (from its agent). ok is false when fi carries
// none: on Windows telling a file's identity takes opening it
// ([FS].FileID, [OpenedID]).
func IDOf(fi fs.FileInfo) (id FileID, ok bool) {
	if fi == nil {
		return FileID{}, false
	}
	if id, ok := fi.Sys().(*FileID); ok {
		return *id, true
	}
	return localIDOf(fi)
}
