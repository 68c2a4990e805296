package strict

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// stdlibMount is the guest dir holding the standard library zip: the
// interpreter was configured with prefix /usr/local, so
// /usr/local/lib/python313.zip is on its default sys.path.
const stdlibMount = "/usr/local/lib"

// zoneinfoMount is the guest dir holding the time zone files, where a
// Linux system has them: the interpreter's C library reads TZ's zone there
// (musl's time zone code, which the recipe links back into wasi-libc: see
// pyodide-assets/cpython/wasi-libc-tz.patch), and it is the first
// directory of zoneinfo's TZPATH.
const zoneinfoMount = "/usr/share/zoneinfo"

// zoneinfoDir is where the standard library zip holds the time zone files:
// the package tzdata (the PyPI package's layout), which zoneinfo also
// falls back to.
const zoneinfoDir = "tzdata/zoneinfo"

// maxZoneFile bounds what one zone file read holds in memory (the largest
// zone file is under 4 KiB; tzdata.zi, the source, about 110 KiB).
const maxZoneFile = 1 << 20

// stdlibFS is the standard library: the zip, as a file system of that one
// file (mounted at stdlibMount), and the time zone files inside it (mounted
// at zoneinfoMount). Both are read-only.
type stdlibFS struct {
	oneFileFS
	zones fs.FS
}

// newStdlibFS returns the standard library fs for the zip named name.
func newStdlibFS(name string, data []byte) (stdlibFS, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return stdlibFS{}, fmt.Errorf("reading the standard library zip %s: %w", name, err)
	}
	sub, err := fs.Sub(zr, zoneinfoDir)
	if err != nil {
		return stdlibFS{}, fmt.Errorf("reading the standard library zip %s: %w", name, err)
	}
	if _, err := fs.Stat(sub, "UTC"); err != nil {
		return stdlibFS{}, fmt.Errorf("the standard library zip %s has no time zone data (%s/UTC): %w; it is older than this version's pinned build (pyodide-assets/dist)", name, zoneinfoDir, err)
	}
	return stdlibFS{oneFileFS: oneFileFS{name: name, data: data}, zones: &zoneFS{sub: sub}}, nil
}

// mount adds the standard library's mounts with mount, their opens counted
// against the instance's open files.
func (s stdlibFS) mount(mount func(fs experimentalsys.FS, guest string), open *openFiles) {
	mount(open.limit(&sysfs.AdaptFS{FS: s.oneFileFS}), stdlibMount)
	mount(open.limit(&sysfs.AdaptFS{FS: s.zones}), zoneinfoMount)
}

// zoneFS is the zip's time zone directory. A file is decompressed whole
// the first time it is opened, so the guest can seek in it (zoneinfo does;
// a zip entry's reader cannot seek), and kept: every later open reads the
// same bytes. Decompressing on every open let a guest hold a copy of the
// largest file (tzdata.zi, 112 KiB) in host memory per open descriptor,
// outside its memory cap (os.open in a loop: 5 GB of host memory under a
// 512 MB cap). Kept, the zone files cost at most their total size (under
// 1 MiB) once per process, however often they are opened.
type zoneFS struct {
	sub fs.FS

	mu    sync.Mutex
	files map[string][]byte // decompressed, by name
}

func (z *zoneFS) Open(name string) (fs.File, error) {
	f, err := z.sub.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil || info.IsDir() {
		if err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	defer f.Close()
	b, err := z.contents(name, f)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	fi := fileInfo{name: info.Name(), size: int64(len(b)), mode: 0o444}
	return &oneFile{info: fi, Reader: bytes.NewReader(b)}, nil
}

// contents returns the decompressed bytes of the zone file name, open as f,
// decompressing it only the first time.
func (z *zoneFS) contents(name string, f fs.File) ([]byte, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if b, ok := z.files[name]; ok {
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxZoneFile+1))
	if err == nil && len(b) > maxZoneFile {
		err = fmt.Errorf("larger than %d bytes", maxZoneFile)
	}
	if err != nil {
		return nil, err
	}
	if z.files == nil {
		z.files = make(map[string][]byte)
	}
	z.files[name] = b
	return b, nil
}

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
