package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrPoolClosed is returned by KernelPool.Get after Close.
var ErrPoolClosed = errors.New("the kernel pool is closed")

// Back-off between failed background starts.
const (
	poolRetryMin = 500 * time.Millisecond
	poolRetryMax = 30 * time.Second
)

// poolRefillDelay is how long a refill waits after Get took a kernel, so
// the call that took it does not start in competition with the next
// interpreter's start (on a 2-core machine that doubled the first call's
// latency).
const poolRefillDelay = 200 * time.Millisecond

// KernelPool keeps kernels started ahead of need, so a session's first
// call skips the interpreter's start (strict kernels, and project kernels
// for the executor's default working dir). Kernels are started in the
// background one at a time (so refilling takes at most one core from the
// calls running meanwhile), a moment after Get took one, all with the
// pool's start function. It is safe for concurrent use.
type KernelPool struct {
	start func(context.Context) (Kernel, error)
	// final reports a start error after which nothing is started again
	// (the engine was closed).
	final func(error) bool
	size  int

	ctx    context.Context // ends at Close: stops a start in progress
	cancel context.CancelFunc
	wake   chan struct{} // a Get took a kernel: refill
	done   chan struct{} // the filler has returned

	mu      sync.Mutex
	idle    []Kernel
	closed  bool
	lastErr error
}

// NewKernelPool returns a pool that keeps size kernels started by start
// ready (size <= 0 keeps none: Get then always starts one); after a start
// error for which final reports true, it stops refilling. Close it to
// release the ready kernels.
func NewKernelPool(size int, start func(context.Context) (Kernel, error), final func(error) bool) *KernelPool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &KernelPool{
		start:  start,
		final:  final,
		size:   max(size, 0),
		ctx:    ctx,
		cancel: cancel,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	go p.fill()
	return p
}

// Get returns a ready kernel from the pool (fromPool true) and starts a
// replacement in the background, or, when none is ready, starts one now
// (under ctx). The caller owns the kernel and must Close it.
func (p *KernelPool) Get(ctx context.Context) (k Kernel, fromPool bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, ErrPoolClosed
	}
	var dead []Kernel
	for len(p.idle) > 0 && k == nil {
		c := p.idle[0]
		p.idle[0] = nil
		p.idle = p.idle[1:]
		if c.Alive() {
			k = c
		} else {
			dead = append(dead, c)
		}
	}
	p.mu.Unlock()
	p.refill()
	for _, c := range dead {
		c.Close()
	}
	if k != nil {
		return k, true, nil
	}
	k, err = p.start(ctx)
	return k, false, err
}

// Idle reports how many kernels are ready.
func (p *KernelPool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Err returns the error of the last failed background start, or nil.
func (p *KernelPool) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// Close stops refilling and closes the ready kernels (kernels handed out
// by Get are their caller's). It is idempotent.
func (p *KernelPool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	p.cancel()
	var wg sync.WaitGroup
	for _, k := range idle {
		wg.Go(func() { k.Close() })
	}
	wg.Wait()
	<-p.done
}

func (p *KernelPool) refill() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// fill keeps the pool at its size, one start at a time.
func (p *KernelPool) fill() {
	defer close(p.done)
	backoff := poolRetryMin
	for {
		p.mu.Lock()
		need := !p.closed && len(p.idle) < p.size
		p.mu.Unlock()
		if !need {
			select {
			case <-p.wake:
				if !p.sleep(poolRefillDelay) {
					return
				}
				continue
			case <-p.ctx.Done():
				return
			}
		}
		k, err := p.start(p.ctx)
		if err != nil {
			if p.ctx.Err() != nil || p.final(err) {
				return
			}
			p.mu.Lock()
			p.lastErr = err
			p.mu.Unlock()
			if !p.sleep(backoff) {
				return
			}
			backoff = min(2*backoff, poolRetryMax)
			continue
		}
		backoff = poolRetryMin
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			k.Close()
			return
		}
		p.idle = append(p.idle, k)
		p.lastErr = nil
		p.mu.Unlock()
	}
}

// sleep waits for d, or until Close: it reports whether the pool is still
// open.
func (p *KernelPool) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}
