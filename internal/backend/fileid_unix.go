//go:build unix

package backend

import (
	"io/fs"
	"os"
	"syscall"
)

// localIDOf reads the identity from a local stat.
func localIDOf(fi fs.FileInfo) (FileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, false
	}
	return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Nlink: uint64(st.Nlink)}, true
}

// OpenedID returns the identity of the open local file f: the file read is
// the file judged.
func OpenedID(f *os.File) (FileID, bool) {
	fi, err := f.Stat()
	if err != nil {
		return FileID{}, false
	}
	return localIDOf(fi)
}

// localFileID is the identity of the file name opens.
func localFileID(name string) (FileID, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return FileID{}, err
	}
	if id, ok := localIDOf(fi); ok {
		return id, nil
	}
	return FileID{}, &fs.PathError{Op: "fileid", Path: name, Err: syscall.ENOTSUP}
}
