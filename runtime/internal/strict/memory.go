package strict

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// The guest's linear memory lives in one address range reserved up front
// for the whole cap and made accessible as the guest grows, instead of in a
// Go slice.
//
// wazero's default linear memory is a Go slice that memory.grow extends
// with append: every grow past the slice's capacity allocates a larger
// slice and copies the old contents, and the old one stays resident until
// the garbage collector and then the scavenger return it. A guest growing
// to a 512 MiB cap a little at a time (a growing list) drove the host to
// 1.4-1.7 GB. With a reservation, growth costs what the guest touches: the
// base address never moves, nothing is copied, and the pages go back to
// the system as soon as the instance is closed.
//
// # Notes
//
//   - Where reserving fails (a 32-bit host, an address-space rlimit) or the
//     platform has no reservation (see memory_other.go), the instance falls
//     back to a Go slice that grows as wazero's default does.
//   - The reservation is released only once the instance can no longer run:
//     wazero calls Free when the module is closed, which can happen on
//     another goroutine (Runtime.Close) while the guest still runs; unmapping
//     then would crash the process on the guest's next access, so Free
//     defers the release to the end of [Engine.start].
//
// # Running out, and reporting it
//
// A guest that fills its memory must still get its traceback into the
// result. When it simply ran into the cap, that failed: the MemoryError
// propagated, but the traceback objects, the import of the traceback module
// (inflated from the zipped standard library) and the report need memory
// too, and each failed with a further MemoryError, so the result showed
// chained MemoryErrors without the script's frames, or the runner's own.
//
// So the cap is soft: the allocation that takes the guest past it fails
// (the script gets its MemoryError), and then the guest may grow into a
// grace zone of graceBytes beyond the cap, enough to report it; the cap
// plus the zone is the hard limit, and the host's bound. This allocator
// decides every growth (the runtimes' own page limit is wasm32's 4 GiB, so
// that no request is refused before it is asked).
//
// The zone must open only once the allocation has failed for good, or the
// guest would carry on into it and run out again at the hard limit, with
// nothing left. The requests come from wasi-libc's dlmalloc, and through
// it from CPython's small-object allocator, and both retry: dlmalloc tries
// to extend its heap in place and, when that fails, asks again for a new
// segment (after one failure it never tries in place again); CPython's
// allocator, when a new 256 KiB arena cannot be had, falls back to a plain
// malloc of the object, which may still fit in what is left.
// So past the soft cap every request fails, and the zone opens after a
// failed request that is neither the first in-place attempt nor an arena
// (a segment of arenaRequest bytes): nothing retries that one, and the
// guest is raising its MemoryError. A request past the hard limit fails
// without opening the zone: nothing could hold it, and the guest is not
// necessarily short of memory. A kernel closes the zone again before each
// cell, the soft cap then being the cap or the memory the guest already
// has, whichever is more, so each cell's first exhaustion gets what is
// left of the zone. Two cases are not covered: a script that catches its
// MemoryError and keeps allocating uses the zone up, and its next one may
// lose its traceback; and a single object of 256 to 320 KiB asks for the
// same growth as an arena, so when that is what runs out the zone opens
// one request late and the report may show a second MemoryError after the
// script's traceback.

// GuestMemoryInGoHeap reports that guest memory lives in the Go heap on
// this platform (no reservation: see memory_other.go), so a Go memory limit
// must leave room for it.
const GuestMemoryInGoHeap = !canReserve

// liveReservations counts the reserved ranges not yet released, for tests
// (no mapping may outlive its instance).
var liveReservations atomic.Int64

// graceBytes is how far past its cap a guest that ran out may grow, to
// report it (see "Running out, and reporting it" above). Reporting a
// MemoryError after filling the heap with small objects grows the guest
// by about 2 MiB (the traceback module's imports, and their inflate
// buffers); 4 MiB leaves room for a script's own except clause.
const graceBytes = 4 << 20

// arenaRequest is the growth dlmalloc asks for to hold one of CPython's
// 256 KiB small-object arenas as a new segment: the arena and dlmalloc's
// overhead, rounded up to its 64 KiB granularity.
const arenaRequest = 320 << 10

// runtimeMemoryPages is the page limit the runtimes are given: all of
// wasm32's, so that every memory.grow reaches the allocator, which
// enforces the cap (see instanceMemory.allow).
const runtimeMemoryPages = 1 << 16

// maxMemory is wasm32's 4 GiB.
const maxMemory = runtimeMemoryPages * wasmPage

// wasmPage is the size of a WebAssembly page.
const wasmPage = 64 << 10

// instanceMemory is the memory allocator of one instance (one start call).
// It owns the ranges it reserved and releases them at done, or at Free if
// that comes after done. It enforces the instance's memory cap.
type instanceMemory struct {
	mu       sync.Mutex
	ended    bool // done was called: the instance no longer runs
	reserved []*reservation

	limit uint64 // the cap in bytes
	hard  uint64 // the cap plus the grace zone: no growth past it
	soft  uint64 // growth past it fails while the zone is closed
	grace bool   // the zone is open
	size  uint64 // the linear memory's size
	// inPlace: no growth has failed yet, so dlmalloc's next failing
	// request is an attempt to extend its heap in place, and it retries.
	inPlace bool

	// scratch, when not nil, backs the start of the linear memory while
	// the module is instantiated (see datascratch.go); onScratch: it does,
	// and restore must map the snapshot over it before the guest runs.
	scratch   *dataScratch
	onScratch bool
}

// newInstanceMemory returns a fresh allocator for one instance whose memory
// is capped at limit bytes (0: wasm32's 4 GiB). [Engine.start] instantiates
// under it and calls done once the instance has stopped.
func newInstanceMemory(limit uint64) *instanceMemory {
	if limit == 0 || limit > maxMemory {
		limit = maxMemory
	}
	hard := min(limit+graceBytes, maxMemory)
	return &instanceMemory{limit: limit, hard: hard, soft: limit, inPlace: true}
}

// allow reports whether the guest's memory may grow to size bytes (see
// "Running out, and reporting it" above).
func (m *instanceMemory) allow(size uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size <= m.soft || (m.grace && size <= m.hard) {
		m.size = max(m.size, size)
		return true
	}
	retried := m.inPlace || size-m.size == arenaRequest
	m.inPlace = false
	if !retried && size <= m.hard {
		m.grace = true // this allocation has failed for good
	}
	return false
}

// rearm closes the grace zone again, with the soft cap at the cap or at the
// memory the guest already has, whichever is more. A kernel calls it before
// each cell.
func (m *instanceMemory) rearm() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.soft = max(m.limit, m.size)
	m.grace = false
}

// Allocate implements experimental.MemoryAllocator: it reserves max bytes,
// or up to the hard limit if that is less.
func (m *instanceMemory) Allocate(capacity, max uint64) experimental.LinearMemory {
	max = min(max, m.hard)
	if max > 0 && max <= math.MaxInt {
		if r, err := reserve(max); err == nil {
			liveReservations.Add(1)
			m.mu.Lock()
			m.reserved = append(m.reserved, r)
			m.mu.Unlock()
			return &reservedMemory{owner: m, r: r}
		}
	}
	return &sliceMemory{owner: m, buf: make([]byte, 0, capacity)}
}

// setScratch gives the instance, before it is instantiated, the scratch
// for its data segments (nil: none).
func (m *instanceMemory) setScratch(s *dataScratch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scratch = s
}

// takeScratch returns the scratch for a linear memory whose first size
// bytes are being made accessible, once, or nil.
func (m *instanceMemory) takeScratch(size uint64) *dataScratch {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scratch
	if s == nil || s.size > size || len(m.reserved) != 1 {
		return nil
	}
	m.scratch = nil
	m.onScratch = true
	scratchInstances.Add(1)
	return s
}

// scratched reports whether the linear memory starts on the scratch.
func (m *instanceMemory) scratched() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.onScratch
}

// linear returns the reservation of the instance's linear memory, or nil
// when it has none (a platform without reservations, or a failed one).
func (m *instanceMemory) linear() *reservation {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reserved) != 1 || m.reserved[0].released {
		return nil
	}
	return m.reserved[0]
}

// free is wazero's Free of r: it releases r now unless the instance may
// still run (done releases it then).
func (m *instanceMemory) free(r *reservation) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		m.release(r)
	}
}

// done marks the instance as stopped and releases every range it reserved,
// whether or not wazero freed it (an instantiation that failed after the
// memory was built never is).
func (m *instanceMemory) done() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended = true
	for _, r := range m.reserved {
		m.release(r)
	}
}

// release unmaps r once; m.mu is held.
func (m *instanceMemory) release(r *reservation) {
	if r.released {
		return
	}
	r.released = true
	r.release()
	liveReservations.Add(-1)
}

// reservedMemory is a linear memory in a reservation.
type reservedMemory struct {
	owner *instanceMemory
	r     *reservation
}

// Reallocate implements experimental.LinearMemory: it makes the first size
// bytes accessible (wasm memory never shrinks, and size is a multiple of
// the 64 KiB wasm page, itself a multiple of every host page size). It
// returns nil, which fails the guest's memory.grow, when the system cannot
// commit more.
func (l *reservedMemory) Reallocate(size uint64) []byte {
	if !l.owner.allow(size) || size > uint64(len(l.r.mem)) {
		return nil
	}
	if l.r.committed == 0 {
		// The first size bytes: the data segments' part on the scratch
		// (failing, the range may be unmapped: commit fails too).
		if sc := l.owner.takeScratch(size); sc != nil && l.r.mapScratch(sc) == nil {
			l.r.committed = sc.size
		}
	}
	if size > l.r.committed {
		if err := l.r.commit(size); err != nil {
			return nil
		}
		l.r.committed = size
	}
	return l.r.mem[:size:size]
}

// Free implements experimental.LinearMemory.
func (l *reservedMemory) Free() { l.owner.free(l.r) }

// sliceMemory is the fallback: a Go slice grown the way wazero's default
// memory is.
type sliceMemory struct {
	owner *instanceMemory
	buf   []byte
}

// Reallocate implements experimental.LinearMemory.
func (s *sliceMemory) Reallocate(size uint64) []byte {
	if !s.owner.allow(size) {
		return nil
	}
	if n := int(size); n <= cap(s.buf) {
		s.buf = s.buf[:n]
	} else {
		s.buf = append(s.buf, make([]byte, n-len(s.buf))...)
	}
	return s.buf
}

// Free implements experimental.LinearMemory: the garbage collector frees
// the slice.
func (s *sliceMemory) Free() { s.buf = nil }
