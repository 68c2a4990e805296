//go:build linux || darwin

package strict

import "golang.org/x/sys/unix"

// canReserve reports that this platform reserves guest memory (see
// memory.go).
const canReserve = true

// reservation is an address range mapped inaccessible (PROT_NONE) for the
// whole cap, with no swap or commit charge reserved for it
// (MAP_NORESERVE); commit opens its start to reads and writes as the guest
// grows. Untouched pages cost nothing, and munmap returns every page.
type reservation struct {
	mem       []byte // the whole range; only [:committed] is accessible
	committed uint64
	released  bool
}

func reserve(size uint64) (*reservation, error) {
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return &reservation{mem: mem}, nil
}

// commit makes [committed, size) readable and writable: O(size-committed)
// page-table work, no copy, and the pages stay zero until written.
func (r *reservation) commit(size uint64) error {
	return unix.Mprotect(r.mem[r.committed:size], unix.PROT_READ|unix.PROT_WRITE)
}

func (r *reservation) release() {
	_ = unix.Munmap(r.mem)
	r.mem = nil
}
