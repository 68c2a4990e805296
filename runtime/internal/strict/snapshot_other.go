//go:build !linux

package strict

import (
	"errors"
	"os"
)

// newSharedImage is Linux's (memfd); elsewhere restore copies the image.
func newSharedImage(*snapshot) *os.File { return nil }

func (r *reservation) mapImage(*os.File, int) error { return errors.ErrUnsupported }

// newDataScratch is Linux's (memfd; see datascratch.go).
func newDataScratch(uint64) *dataScratch { return nil }

func (r *reservation) mapScratch(*dataScratch) error { return errors.ErrUnsupported }
