//go:build !unix && !windows

package backend

import (
	"errors"
	"io/fs"
	"os"
)

func localIDOf(fs.FileInfo) (FileID, bool) { return FileID{}, false }

// OpenedID: no file identity on this platform.
func OpenedID(*os.File) (FileID, bool) { return FileID{}, false }

func localFileID(name string) (FileID, error) {
	return FileID{}, &fs.PathError{Op: "fileid", Path: name, Err: errors.ErrUnsupported}
}
