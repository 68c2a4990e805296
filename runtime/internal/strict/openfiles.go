package strict

import (
	"context"
	"io/fs"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// maxOpenFiles is the most files (and directories) a guest holds open at
// once, over all its mounts: a native python's usual limit (Linux's default
// soft RLIMIT_NOFILE).
//
// wazero's descriptor table has no limit of its own, and every descriptor
// costs the host: one of the executor's own file descriptors for a file of
// the staging dir, which is shared by every run and session of the process
// (a guest holding 20,000 of them made every other session of a serve fail
// with "too many open files"), and host memory for a file of the read-only
// standard library mounts, outside the guest's memory cap (about 250 bytes
// each: 13 million in a 5-minute run, 3 GB, and more across a kernel's
// cells).
const maxOpenFiles = 1024

// openFiles counts the files one instance holds open, against maxOpenFiles.
// An open past the limit fails with EMFILE in the guest (see limit and
// tooManyAsEMFILE).
type openFiles struct {
	n    atomic.Int64
	max  int64
	full atomic.Bool // an open was refused: path_open reports EMFILE
}

func newOpenFiles(max int64) *openFiles { return &openFiles{max: max} }

// limit returns fsys with its opens counted against o.
func (o *openFiles) limit(fsys experimentalsys.FS) experimentalsys.FS {
	return &limitedFS{FS: fsys, open: o}
}

// take reserves one open file; false when the instance holds max already.
func (o *openFiles) take() bool {
	if o.n.Add(1) > o.max {
		o.n.Add(-1)
		o.full.Store(true)
		return false
	}
	return true
}

// limitedFS is a mount whose opens are counted against an instance's
// openFiles; every other operation is the mount's own.
type limitedFS struct {
	experimentalsys.FS
	open *openFiles
}

// OpenFile implements experimentalsys.FS.
func (l *limitedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if !l.open.take() {
		return nil, experimentalsys.EIO // EMFILE in the guest: see tooManyAsEMFILE
	}
	f, errno := l.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		l.open.n.Add(-1)
		return nil, errno
	}
	return &countedFile{File: f, open: l.open}, 0
}

// countedFile is an open file of a limitedFS: closing it gives its place
// back, once.
type countedFile struct {
	experimentalsys.File
	open   *openFiles
	closed atomic.Bool
}

// Close implements experimentalsys.File.
func (f *countedFile) Close() experimentalsys.Errno {
	if !f.closed.Swap(true) {
		f.open.n.Add(-1)
	}
	return f.File.Close()
}

type openFilesKey struct{}

// withOpenFiles returns ctx carrying o, for path_open to report a refused
// open as EMFILE.
func withOpenFiles(ctx context.Context, o *openFiles) context.Context {
	return context.WithValue(ctx, openFilesKey{}, o)
}

// wasiErrnoMFile is WASI preview 1's EMFILE (Python: OSError(errno.EMFILE,
// "Too many open files")).
const wasiErrnoMFile = 33

// tooManyAsEMFILE wraps path_open: wazero's file-system interface has no
// EMFILE (an unknown errno becomes EIO), so limitedFS returns EIO and
// marks the instance's openFiles, and this turns that EIO into EMFILE.
func tooManyAsEMFILE(fn api.GoModuleFunction) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		o, _ := ctx.Value(openFilesKey{}).(*openFiles)
		if o == nil {
			fn.Call(ctx, mod, stack)
			return
		}
		o.full.Store(false)
		fn.Call(ctx, mod, stack)
		if o.full.Swap(false) && stack[0] == wasiErrnoIO {
			stack[0] = wasiErrnoMFile
		}
	})
}
