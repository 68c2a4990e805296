package strict

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// canReserve reports that this platform reserves guest memory (see
// memory.go).
const canReserve = true

// reservation is an address range reserved for the whole cap
// (MEM_RESERVE: address space only, no commit charge); commit commits its
// start (MEM_COMMIT) as the guest grows, and VirtualFree returns it all.
type reservation struct {
	base      uintptr
	mem       []byte // the whole range; only [:committed] is accessible
	committed uint64
	released  bool
}

func reserve(size uint64) (*reservation, error) {
	base, err := windows.VirtualAlloc(0, uintptr(size), windows.MEM_RESERVE, windows.PAGE_NOACCESS)
	if err != nil {
		return nil, err
	}
	// The range is not Go memory: the garbage collector ignores pointers
	// into it, and it never moves.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&base))
	return &reservation{base: base, mem: unsafe.Slice((*byte)(p), int(size))}, nil
}

// commit commits [committed, size): the pages read as zero and take memory
// only when first touched.
func (r *reservation) commit(size uint64) error {
	_, err := windows.VirtualAlloc(r.base+uintptr(r.committed), uintptr(size-r.committed), windows.MEM_COMMIT, windows.PAGE_READWRITE)
	return err
}

func (r *reservation) release() {
	_ = windows.VirtualFree(r.base, 0, windows.MEM_RELEASE)
	r.mem = nil
}
