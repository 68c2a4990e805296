//go:build windows

package backend

import (
	"io/fs"
	"os"
	"syscall"
)

// localIDOf: a Windows stat carries no identity (NTFS has hard links too;
// the identity is the volume serial number and file index, which only a
// handle tells).
func localIDOf(fs.FileInfo) (FileID, bool) { return FileID{}, false }

// OpenedID returns the identity of the open local file f, asked of its
// handle (GetFileInformationByHandle, as runtime/internal/strict does).
func OpenedID(f *os.File) (FileID, bool) {
	var d syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &d); err != nil {
		return FileID{}, false
	}
	return FileID{
		Dev:   uint64(d.VolumeSerialNumber),
		Ino:   uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow),
		Nlink: uint64(d.NumberOfLinks),
	}, true
}

// localFileID opens name (os.Open: long paths and directories too) and asks
// its handle.
func localFileID(name string) (FileID, error) {
	f, err := os.Open(name)
	if err != nil {
		return FileID{}, err
	}
	defer f.Close()
	if id, ok := OpenedID(f); ok {
		return id, nil
	}
	return FileID{}, &fs.PathError{Op: "fileid", Path: name, Err: syscall.EWINDOWS}
}
