package strict

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newSharedImage puts s's image in a sealed memfd (its zero pages as
// holes, which take no memory), which restore then maps copy-on-write over
// each instance's memory: the pages an instance only reads are the same
// physical pages in every instance of the process. Nil when the kernel
// has no memfd.
func newSharedImage(s *snapshot) *os.File {
	fd, err := unix.MemfdCreate("hermes-wasm-exec-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "hermes-wasm-exec-snapshot")
	ok := f.Truncate(int64(len(s.image))) == nil
	for i, zero := range s.zero {
		if ok && !zero {
			_, err := f.WriteAt(s.image[i*wasmPage:(i+1)*wasmPage], int64(i)*wasmPage)
			ok = err == nil
		}
	}
	// Sealed: no one (a bug here included) can change the image under
	// the instances that map it.
	if ok {
		_, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL)
		ok = err == nil
	}
	if !ok {
		f.Close()
		return nil
	}
	return f
}

// mapImage replaces the first size bytes of r (committed already) with a
// private, copy-on-write mapping of f.
func (r *reservation) mapImage(f *os.File, size int) error {
	_, err := unix.MmapPtr(int(f.Fd()), 0, unsafe.Pointer(&r.mem[0]), uintptr(size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	return err
}

// newDataScratch returns a scratch of size bytes (see datascratch.go), or
// nil when the kernel has no memfd. Its pages are allocated by the first
// mapping that populates them, and kept.
func newDataScratch(size uint64) *dataScratch {
	fd, err := unix.MemfdCreate("hermes-wasm-exec-data-scratch", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "hermes-wasm-exec-data-scratch")
	if f.Truncate(int64(size)) != nil {
		f.Close()
		return nil
	}
	return &dataScratch{f: f, size: size}
}

// mapScratch makes the first s.size bytes of r (not committed yet) a
// shared mapping of s, its pages mapped up front.
func (r *reservation) mapScratch(s *dataScratch) error {
	_, err := unix.MmapPtr(int(s.f.Fd()), 0, unsafe.Pointer(&r.mem[0]), uintptr(s.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED|unix.MAP_POPULATE)
	return err
}
