package nativeengine

import (
	"bytes"
	"strings"
	"sync"
)

// syncBuffer is a job or cell output writer that can be read while the run goes on
// and tells when a string first appears.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	watch   string
	matched chan struct{}
}

func newSyncBuffer(watch string) *syncBuffer {
	return &syncBuffer{watch: watch, matched: make(chan struct{})}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.watch != "" && strings.Contains(b.buf.String(), b.watch) {
		select {
		case <-b.matched:
		default:
			close(b.matched)
		}
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
