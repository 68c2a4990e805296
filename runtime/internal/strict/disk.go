package strict

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// diskBudget caps what a guest stores in its staging dir
// (code_execution.disk_limit_mb). One budget serves an instance's whole
// life: a one-shot run, or every cell of a kernel.
//
// Usage has two parts, in the same bytes:
//
//   - Data: the total size of the regular files under the dir, each inode
//     counted once: what was there when the budget was made (the staged
//     files), plus every write, ftruncate or fallocate that makes a file
//     larger, minus what a truncation frees, and minus what a file takes
//     when its last link is removed (unlink, or rename over it). A file
//     unlinked while the guest still has it open stays counted until its
//     last descriptor is closed, as the disk space does. Growth is counted
//     in apparent sizes: a hole left by a write past the end counts as
//     written, so a sparse file cannot hide from the budget; what is given
//     back is what the disk gets back (see freed), so removing a sparse
//     file frees no more than its blocks.
//   - Entries: every name in the tree (file, directory, hard link) costs
//     entryCost, about what a file system spends on it (an inode or block
//     plus the name), from mkdir, an open that creates, link or a rename to
//     a longer name until rmdir, unlink or a rename over it. Without this a
//     guest could fill the host's disk with directories or empty files that
//     hold no data.
//
// A write that would go past the limit writes what fits (a short write);
// the next one fails with ENOSPC, and so do an ftruncate or fallocate, and
// a mkdir, create, link or rename, that would. wazero's file-system
// interface has no ENOSPC (an unknown errno becomes EIO), so the jail
// returns EIO and marks the budget full, and the WASI functions that can
// take room (see wasiWrapped) turn that EIO into ENOSPC (WASI errno 51;
// Python raises OSError(errno.ENOSPC, "No space left on device")).
//
// # Notes
//
//   - Entries are charged by name, not by inode: a hard link costs an entry
//     (its data counts once). A directory's own size as the host reports it
//     is not counted; its entries' names are.
//   - In the sandboxed project mode (Engine.Project) the working dir and
//     the private tmp share the staging dir's budget, made before them: what
//     the run adds to the working dir counts, what was there does not (a
//     file it deletes frees what it held, so the count is the run's net
//     growth of the disk).
type diskBudget struct {
	limit int64

	mu   sync.Mutex
	used int64
	open map[fileID]int // open descriptors per file, for unlink-while-open
	// doomed are open files whose last link was removed, with the bytes of
	// holes they had then (see freed): their size less those is released
	// at their last close. Kept here rather than read from the link count
	// at close, which Windows leaves at 1 while a deleted file is still
	// open (delete pending).
	doomed map[fileID]int64

	// full is set when a write was refused for lack of room, and taken by
	// the WASI function that made it (see wasiWrapped).
	full atomic.Bool
}

// fileID identifies a file: device and inode. The zero value means
// unknown (a platform without inode numbers); such a file is released
// when it is unlinked, open or not.
type fileID struct{ dev, ino uint64 }

func statID(st sys.Stat_t) fileID {
	if st.Ino == 0 {
		return fileID{} // unknown (see identify)
	}
	return fileID{st.Dev, st.Ino}
}

// entryBlock is the fixed part of an entry's cost: a block, what a
// directory takes on common file systems (ext4, xfs, APFS, NTFS); an empty
// file (an inode, 256 bytes on ext4) is charged generously.
const entryBlock = 4096

// entryCost is what the directory entry name costs the budget.
func entryCost(name string) int64 { return entryBlock + int64(len(name)) }

// newDiskBudget returns a budget of limitMB MiB over dir, counting what dir
// holds now (its files' data and every entry under it), or nil when
// limitMB is zero or less (no cap).
func newDiskBudget(dir string, limitMB int) (*diskBudget, error) {
	if limitMB <= 0 {
		return nil, nil
	}
	b := &diskBudget{limit: int64(limitMB) << 20, open: map[fileID]int{}, doomed: map[fileID]int64{}}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("measuring the staging dir: %w", err)
	}
	defer root.Close()
	seen := map[fileID]bool{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." {
			b.used += entryCost(d.Name())
		}
		if !d.Type().IsRegular() {
			return nil
		}
		// rootStat, not d.Info(): on Windows only it has the file's
		// identity, to count each file once however many links it has.
		st, err := rootStat(root, p, false)
		if err != nil {
			return err
		}
		if id := statID(st); id != (fileID{}) {
			if seen[id] {
				return nil // another link to a file already counted
			}
			seen[id] = true
		}
		b.used += st.Size
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("measuring the staging dir: %w", err)
	}
	return b, nil
}

// grow reserves room for a file of size size to reach end. It returns the
// end it may reach: end itself, or less (down to size) when the budget
// runs out. Give back what was not used with shrink.
func (b *diskBudget) grow(size, end int64) int64 {
	if end <= size {
		return end
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	room := max(b.limit-b.used, 0)
	end = min(end, size+room)
	b.used += end - size
	return end
}

// take reserves n bytes, all or nothing: false (with nothing taken) when
// they do not fit.
func (b *diskBudget) take(n int64) bool {
	if n <= 0 {
		b.shrink(-n)
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// shrink releases n bytes.
func (b *diskBudget) shrink(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// Used returns the bytes counted now.
func (b *diskBudget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// refuse marks the budget full and returns the errno a refused write
// returns (see wasiWrapped).
func (b *diskBudget) refuse() experimentalsys.Errno {
	b.full.Store(true)
	return experimentalsys.EIO
}

// freed is what removing size bytes of a file frees on disk: size, or
// its blocks alloc when fewer (a sparse file; alloc -1: unknown). Writes
// are charged by apparent size, holes included, and releases go by what
// the disk gets back: deleting a 10 GB sparse file the working dir held
// (a VM image, taking a few KB) released 10 GB, and the script then wrote
// 10 GB through the sandboxed project mode under a 2 MiB limit. A sparse
// file the run made itself stays charged for its holes.
func freed(size, alloc int64) int64 {
	if alloc >= 0 && alloc < size {
		return alloc
	}
	return size
}

// removed is called after the last link of a file with stat st, taking
// alloc bytes on disk (-1: unknown), was removed (unlink or rename over
// it): what it frees (see freed) is released, now or, while the guest has
// it open, at its last close.
func (b *diskBudget) removed(st sys.Stat_t, alloc int64) {
	if st.Mode&fs.ModeType != 0 || st.Nlink > 1 {
		return // not a regular file, or other links keep its data
	}
	id := statID(st)
	gone := freed(st.Size, alloc)
	b.mu.Lock()
	defer b.mu.Unlock()
	if id != (fileID{}) && b.open[id] > 0 {
		b.doomed[id] = st.Size - gone // released by the last close, but for its holes
		return
	}
	b.used -= gone
}

// opened wraps f, a file the guest opened, so its growth is counted.
// alloc, when not nil, tells the disk space the file takes now (-1:
// unknown), for what a truncation frees.
func (b *diskBudget) opened(f experimentalsys.File, alloc func(fileID) int64) experimentalsys.File {
	st, errno := f.Stat()
	if errno != 0 || st.Mode&fs.ModeType != 0 {
		return f // a directory (or unknown): nothing to count
	}
	id := statID(st)
	if id != (fileID{}) {
		b.mu.Lock()
		b.open[id]++
		b.mu.Unlock()
	}
	return &budgetFile{File: f, b: b, id: id, alloc: alloc}
}

// budgetFile is a regular file the guest opened, with its growth counted
// against a budget.
type budgetFile struct {
	experimentalsys.File
	b     *diskBudget
	id    fileID
	alloc func(fileID) int64 // the disk space it takes (see opened); nil: unknown
}

// allocated is the disk space the file takes now, or -1 when unknown.
func (f *budgetFile) allocated() int64 {
	if f.alloc == nil {
		return -1
	}
	return f.alloc(f.id)
}

// Write implements experimentalsys.File.
func (f *budgetFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return f.File.Write(buf)
	}
	st, errno := f.File.Stat()
	if errno != 0 {
		return 0, errno
	}
	pos := st.Size
	if !f.File.IsAppend() {
		if pos, errno = f.File.Seek(0, io.SeekCurrent); errno != 0 {
			return 0, errno
		}
	}
	return f.write(st.Size, pos, buf, f.File.Write)
}

// Pwrite implements experimentalsys.File.
func (f *budgetFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if len(buf) == 0 || off < 0 {
		return f.File.Pwrite(buf, off)
	}
	st, errno := f.File.Stat()
	if errno != 0 {
		return 0, errno
	}
	return f.write(st.Size, off, buf, func(p []byte) (int, experimentalsys.Errno) { return f.File.Pwrite(p, off) })
}

// write writes buf at pos of a file of size size with do, within the
// budget: what fits, or ENOSPC when nothing does.
func (f *budgetFile) write(size, pos int64, buf []byte, do func([]byte) (int, experimentalsys.Errno)) (int, experimentalsys.Errno) {
	want := pos + int64(len(buf))
	end := f.b.grow(size, want)
	if end <= pos {
		f.b.shrink(end - size)
		return 0, f.b.refuse()
	}
	n, errno := do(buf[:end-pos])
	// Give back what the write did not use.
	f.b.shrink(end - max(pos+int64(n), size))
	return n, errno
}

// Truncate implements experimentalsys.File: growing takes from the budget
// (all or nothing), shrinking gives back.
func (f *budgetFile) Truncate(n int64) experimentalsys.Errno {
	if n < 0 {
		return experimentalsys.EINVAL
	}
	st, errno := f.File.Stat()
	if errno != 0 {
		return errno
	}
	if n > st.Size {
		if end := f.b.grow(st.Size, n); end < n {
			f.b.shrink(end - st.Size)
			return f.b.refuse()
		}
		if errno := f.File.Truncate(n); errno != 0 {
			f.b.shrink(n - st.Size)
			return errno
		}
		return 0
	}
	before := f.allocated()
	if errno := f.File.Truncate(n); errno != 0 {
		return errno
	}
	gone := st.Size - n
	if after := f.allocated(); before >= 0 && after >= 0 {
		gone = min(gone, max(before-after, 0)) // a hole cut frees nothing (see freed)
	}
	f.b.shrink(gone)
	return 0
}

// Close implements experimentalsys.File: the last close of a file whose
// links are all gone releases its size.
func (f *budgetFile) Close() experimentalsys.Errno {
	if f.id != (fileID{}) {
		st, errno := f.File.Stat()
		f.b.mu.Lock()
		f.b.open[f.id]--
		if f.b.open[f.id] <= 0 {
			delete(f.b.open, f.id)
			if holes, ok := f.b.doomed[f.id]; ok {
				delete(f.b.doomed, f.id)
				if errno == 0 {
					f.b.used -= max(st.Size-holes, 0)
				}
			}
		}
		f.b.mu.Unlock()
	}
	return f.File.Close()
}

type diskBudgetKey struct{}

// withDiskBudget returns ctx carrying b, for the WASI functions that turn a
// refused write into ENOSPC.
func withDiskBudget(ctx context.Context, b *diskBudget) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, diskBudgetKey{}, b)
}

// WASI errno values (the preview 1 enumeration, which wasi-libc uses as
// its errno).
const (
	wasiErrnoIO    = 29
	wasiErrnoNoSpc = 51
)

// wasiWrapped are the WASI functions through which a guest takes room:
// making a file larger, or making a directory entry. Their EIO after a
// refusal becomes ENOSPC. Each has a single result, its errno.
var wasiWrapped = map[string]bool{
	"fd_write": true, "fd_pwrite": true, "fd_filestat_set_size": true, "fd_allocate": true,
	"path_create_directory": true, "path_open": true, "path_link": true, "path_rename": true,
}

// instantiateWASI instantiates wazero's WASI preview 1 functions as the
// module wasi_snapshot_preview1, with those in wasiWrapped reporting a
// disk-budget refusal as ENOSPC (see diskBudget).
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	// Compiled, not instantiated: only the definitions (and their Go
	// functions) are used, under the same name.
	orig, err := wasi_snapshot_preview1.NewBuilder(rt).Compile(ctx)
	if err != nil {
		return err
	}
	defer orig.Close(ctx)
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	for name, def := range orig.ExportedFunctions() {
		fn, ok := def.GoFunction().(api.GoModuleFunction)
		if !ok {
			return fmt.Errorf("WASI function %s is not a Go module function", name)
		}
		if wasiWrapped[name] {
			fn = noSpaceAsENOSPC(fn)
		}
		if name == "path_open" {
			fn = tooManyAsEMFILE(fn) // see openfiles.go
		}
		if name == "clock_time_get" || name == "clock_res_get" {
			fn = cpuClocksAsMonotonic(fn)
		}
		switch name { // see fdtable.go
		case "path_open":
			fn = trackPathOpen(fn)
		case "fd_close":
			fn = trackClose(fn)
		case "fd_renumber":
			fn = trackRenumber(fn)
			wasiRenumber.Store(&fn)
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(fn, def.ParamTypes(), def.ResultTypes()).
			WithParameterNames(def.ParamNames()...).
			WithResultNames(def.ResultNames()...).
			Export(name)
	}
	_, err = b.Instantiate(ctx)
	return err
}

// WASI clock ids (preview 1).
const (
	wasiClockMonotonic      = 1
	wasiClockProcessCPUTime = 2
	wasiClockThreadCPUTime  = 3
)

// cpuClocksAsMonotonic wraps clock_time_get or clock_res_get (whose first
// parameter is the clock id) so that the process and thread CPU-time
// clocks read the instance's monotonic clock, which starts at the
// interpreter's start (see snapshot.clock). wazero implements neither, and
// without them CPython's time.process_time fell back to libc's times(),
// whose nanoseconds it divided by 100 ticks a second: 10^7 times too
// large. The guest's own clock() counts the same way (WASI has no CPU
// clock), so process_time includes time the script spends waiting.
func cpuClocksAsMonotonic(fn api.GoModuleFunction) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		if id := uint32(stack[0]); id == wasiClockProcessCPUTime || id == wasiClockThreadCPUTime {
			stack[0] = wasiClockMonotonic
		}
		fn.Call(ctx, mod, stack)
	})
}

// noSpaceAsENOSPC wraps a WASI function whose single result is its errno.
func noSpaceAsENOSPC(fn api.GoModuleFunction) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		b, _ := ctx.Value(diskBudgetKey{}).(*diskBudget)
		if b == nil {
			fn.Call(ctx, mod, stack)
			return
		}
		b.full.Store(false)
		fn.Call(ctx, mod, stack)
		if b.full.Swap(false) && stack[0] == wasiErrnoIO {
			stack[0] = wasiErrnoNoSpc
		}
	})
}
