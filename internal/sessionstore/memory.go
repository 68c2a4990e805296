package sessionstore

import (
	"sync"
	"time"
)

// Memory is a store in the process's memory: the images of kernels copied
// by a fork when no session store is set. It is safe for concurrent use;
// its leases are the process's own.
type Memory struct {
	mu     sync.Mutex
	images map[string]map[string]memImage // by session, then kernel
	leases map[string]Lease
	asked  map[string]map[string]bool // by owner: sessions asked of it
}

type memImage struct {
	data    []byte
	written time.Time
}

// Put implements Store.
func (m *Memory) Put(session, kernel string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(session, kernel, memImage{data, time.Now()})
	return nil
}

func (m *Memory) putLocked(session, kernel string, im memImage) {
	if m.images == nil {
		m.images = map[string]map[string]memImage{}
	}
	if m.images[session] == nil {
		m.images[session] = map[string]memImage{}
	}
	m.images[session][kernel] = im
}

// Take implements Store.
func (m *Memory) Take(session, kernel string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	im, ok := m.images[session][kernel]
	if !ok {
		return nil, ErrNotFound
	}
	delete(m.images[session], kernel)
	return im.data, nil
}

// Delete implements Store.
func (m *Memory) Delete(session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.images, session)
	return nil
}

// Copy implements Store.
func (m *Memory) Copy(from, to string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for kernel, im := range m.images[from] {
		m.putLocked(to, kernel, memImage{im.data, time.Now()})
	}
	return len(m.images[from]), nil
}

// PutBase does nothing: images in memory resume in the process that made
// them, on its own snapshot.
func (m *Memory) PutBase(string, []byte) error { return nil }

// Base reports that a memory store keeps no snapshot.
func (m *Memory) Base(string) ([]byte, error) { return nil, ErrNotFound }

// SessionBytes implements Store.
func (m *Memory) SessionBytes(session, kernel string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, im := range m.images[session] {
		if k != kernel {
			n += int64(len(im.data))
		}
	}
	return n, nil
}

// Acquire implements Store.
func (m *Memory) Acquire(session, owner string, until time.Time, replace string) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if held, ok := m.leases[session]; ok && held.Owner != owner && held.Owner != replace && time.Now().Before(held.Until) {
		return held, leasedError(session, held)
	}
	if m.leases == nil {
		m.leases = map[string]Lease{}
	}
	m.leases[session] = Lease{Owner: owner, Until: until}
	return m.leases[session], nil
}

// Release implements Store.
func (m *Memory) Release(session, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases[session].Owner == owner {
		delete(m.leases, session)
	}
	return nil
}

// AskHandoff implements Store.
func (m *Memory) AskHandoff(holder, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.asked == nil {
		m.asked = map[string]map[string]bool{}
	}
	if m.asked[holder] == nil {
		m.asked[holder] = map[string]bool{}
	}
	m.asked[holder][session] = true
	return nil
}

// Asked implements Store.
func (m *Memory) Asked(owner string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sessions []string
	for s := range m.asked[owner] {
		sessions = append(sessions, s)
	}
	delete(m.asked, owner)
	return sessions, nil
}

// Sweep implements Store.
func (m *Memory) Sweep(before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for s, kernels := range m.images {
		for k, im := range kernels {
			if im.written.Before(before) {
				delete(kernels, k)
				n++
			}
		}
		if len(kernels) == 0 {
			delete(m.images, s)
		}
	}
	for s, l := range m.leases {
		if l.Until.Before(before) {
			delete(m.leases, s)
		}
	}
	return n, nil
}

// Usage implements Store.
func (m *Memory) Usage() (n int, bytes int64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, kernels := range m.images {
		for _, im := range kernels {
			n++
			bytes += int64(len(im.data))
		}
	}
	return n, bytes, nil
}

var (
	_ Store = (*Memory)(nil)
	_ Store = (*Dir)(nil)
)
