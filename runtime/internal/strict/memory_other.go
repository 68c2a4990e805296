//go:build !linux && !darwin && !windows

package strict

import "errors"

// canReserve is false here: instances use wazero's default memory, a Go
// slice (see memory.go).
const canReserve = false

// reservation is unused on this platform.
type reservation struct {
	mem       []byte
	committed uint64
	released  bool
}

func reserve(uint64) (*reservation, error) {
	return nil, errors.ErrUnsupported
}

func (r *reservation) commit(uint64) error { return errors.ErrUnsupported }

func (r *reservation) release() {}
