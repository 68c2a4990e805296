package runtime

import (
	"bytes"
	"io"
	"io/fs"
	"time"
)

// stdlibMount is the guest dir holding the standard library zip: the
// interpreter was configured with prefix /usr/local, so
// /usr/local/lib/python311.zip is on its default sys.path.
const stdlibMount = "/usr/local/lib"

// oneFileFS is a read-only fs.FS holding one file in its root. wazero
// mounts an fs.FS read-only, so the guest can read the standard library
// but never change it, and nothing of the host's file system is involved.
type oneFileFS struct {
	name string
	data []byte
}

func (f oneFileFS) Open(name string) (fs.File, error) {
	switch name {
	case ".":
		return &oneFileDir{fsys: f}, nil
	case f.name:
		return &oneFile{info: f.info(), Reader: bytes.NewReader(f.data)}, nil
	}
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (f oneFileFS) info() fileInfo {
	return fileInfo{name: f.name, size: int64(len(f.data)), mode: 0o444}
}

// oneFile is an open oneFileFS file: Read, ReadAt and Seek over the bytes.
type oneFile struct {
	info fileInfo
	*bytes.Reader
}

func (f *oneFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *oneFile) Close() error               { return nil }

// oneFileDir is the root dir of a oneFileFS.
type oneFileDir struct {
	fsys oneFileFS
	done bool
}

func (d *oneFileDir) Stat() (fs.FileInfo, error) {
	return fileInfo{name: ".", mode: fs.ModeDir | 0o555}, nil
}
func (d *oneFileDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: fs.ErrInvalid}
}
func (d *oneFileDir) Close() error { return nil }

func (d *oneFileDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.done {
		if n > 0 {
			return nil, io.EOF
		}
		return nil, nil
	}
	d.done = true
	return []fs.DirEntry{fs.FileInfoToDirEntry(d.fsys.info())}, nil
}

type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }
