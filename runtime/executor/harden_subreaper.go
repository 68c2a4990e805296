package executor

import (
	"errors"

	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

// enableSubreaper turns on proctree's adoption and killing of orphans
// (Linux). Where the system has no subreaper there is nothing to turn on:
// that is no error (the job object or the process group is all there is).
func enableSubreaper() error {
	if err := proctree.EnableSubreaper(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}
