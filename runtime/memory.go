package runtime

import (
	"context"
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
//     defers the release to the end of [Strict.start].

// GuestMemoryInGoHeap reports that guest memory lives in the Go heap on
// this platform (no reservation: see memory_other.go), so a Go memory limit
// must leave room for it.
const GuestMemoryInGoHeap = !canReserve

// liveReservations counts the reserved ranges not yet released, for tests
// (no mapping may outlive its instance).
var liveReservations atomic.Int64

// instanceMemory is the memory allocator of one instance (one start call).
// It owns the ranges it reserved and releases them at done, or at Free if
// that comes after done.
type instanceMemory struct {
	mu       sync.Mutex
	ended    bool // done was called: the instance no longer runs
	reserved []*reservation
}

// withInstanceMemory returns ctx carrying a fresh allocator for one
// instance, or ctx unchanged where the platform has no reservation. Call
// done on the result once the instance has stopped running.
func withInstanceMemory(ctx context.Context) (context.Context, *instanceMemory) {
	m := &instanceMemory{}
	if !canReserve {
		return ctx, m
	}
	return experimental.WithMemoryAllocator(ctx, m), m
}

// Allocate implements experimental.MemoryAllocator: it reserves max bytes.
func (m *instanceMemory) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max > 0 && max <= math.MaxInt {
		if r, err := reserve(max); err == nil {
			liveReservations.Add(1)
			m.mu.Lock()
			m.reserved = append(m.reserved, r)
			m.mu.Unlock()
			return &reservedMemory{owner: m, r: r}
		}
	}
	return &sliceMemory{buf: make([]byte, 0, capacity)}
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
	if size > uint64(len(l.r.mem)) {
		return nil
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
type sliceMemory struct{ buf []byte }

// Reallocate implements experimental.LinearMemory.
func (s *sliceMemory) Reallocate(size uint64) []byte {
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
