package engine

import (
	_ "embed"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
)

// KernelName is the file name of the kernel loop module staged beside the
// generated hermes_tools module.
const KernelName = "_hermes_kernel.py"

// KernelEntry is the -c program that starts a kernel's loop: `python -c
// KernelEntry`. Project mode runs `python -u DIR/_hermes_kernel.py`.
const KernelEntry = "import _hermes_kernel; _hermes_kernel.main()"

// KernelStart is the -c program that starts a kernel run in steps (strict
// mode): it sets the loop up and returns; the host then has the
// interpreter run _hermes_kernel.step() once per cell (see
// [Dispatcher.Take]).
const KernelStart = "import _hermes_kernel; _hermes_kernel.start()"

// Kernel is a live interpreter that runs cells in one persistent
// namespace (docs/behaviour.md §7). It implements [Engine] so that [Execute] applies the
// same limits and builds the same result as for a one-shot run: Run runs
// job.Code as the next cell, routes its output to job.Stdout and
// job.Stderr and its tool calls to job.Broker. job.Env and job.Workdir
// are ignored: they were frozen when the kernel started. When ctx ends
// before the cell does, the kernel is killed (its state is lost) and Run
// returns once it is gone. A cell that calls sys.exit ends the kernel.
type Kernel interface {
	Engine
	// Alive reports whether the kernel can run another cell.
	Alive() bool
	// Close kills the kernel and releases everything it holds. It is
	// idempotent and safe to call while a cell runs (the cell then ends as
	// if interrupted).
	Close() error
}

// KernelSpec is what a kernel is started with; it stays fixed for the
// kernel's life.
type KernelSpec struct {
	// Env is the interpreter's final environment: scrubbed, plus the
	// injected variables (engines add their transport variables).
	Env []string
	// Workdir is the session working dir (project mode's cwd).
	Workdir string
	// MemoryLimitMB caps a strict kernel's memory.
	MemoryLimitMB int
	// DiskLimitMB caps what a strict kernel stores in its private dir, over
	// all its cells; zero or less means no cap.
	DiskLimitMB int
	// ProcessLimits cap a project kernel's processes, over all its cells.
	ProcessLimits ProcessLimits
}

// KernelSource is the kernel loop, in both modes. It asks the host for a
// cell ({"op": "next"}, which also says the previous cell is done), runs
// it in the kernel's __main__ namespace, reports an uncaught exception the
// way the runner does, and asks for the next one. The host answers
// {"op": "cell", "n", "code", "nonce"} or {"op": "close"}. A cell that
// raises SystemExit ends the process with its exit code. In project mode
// the cell's end is also marked in the output streams: after flushing, the
// loop writes the cell's nonce (a random string the host looks for) to
// file descriptors 1 and 2, so the host knows when the cell's output,
// including what its subprocesses wrote, has all arrived.
//
//go:embed python/kernel.py
var KernelSource string

// Dispatcher is the host side of a kernel's cell loop, shared by both
// engines: it answers the kernel's requests on its tool channel, handing
// out cells and passing tool calls to the running cell's broker. It is
// safe for concurrent use.
type Dispatcher struct {
	ready     chan struct{}
	readyOnce sync.Once
	cells     chan *dispatchCell
	closed    chan struct{}
	closeOnce sync.Once

	mu  sync.Mutex
	cur *dispatchCell
	// held is the cell Take took for the next step (nil: none).
	held *dispatchCell
	n    int
}

type dispatchCell struct {
	ctx    context.Context
	n      int
	code   string
	nonce  string
	broker *Broker
	done   chan struct{}
	// control, for Probe, Reseed and Reopen, is the step's request instead
	// of a cell (nil: a cell); open and offsets are the kernel's answer to
	// a probe, reopenErr to a reopen.
	control   map[string]any
	open      []int
	offsets   []int64
	reopenErr string
}

// NewDispatcher returns a dispatcher with no cell.
func NewDispatcher() *Dispatcher {
	return &Dispatcher{ready: make(chan struct{}), cells: make(chan *dispatchCell), closed: make(chan struct{})}
}

// Ready is closed when the kernel first asks for a cell: it has started
// and imported everything.
func (d *Dispatcher) Ready() <-chan struct{} { return d.ready }

// Cells is how many cells the dispatcher has handed out (the last one's
// number).
func (d *Dispatcher) Cells() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// SetCells numbers the next cell n+1: a resumed kernel goes on from the
// suspended one's count. Call it before the first Send.
func (d *Dispatcher) SetCells(n int) {
	d.mu.Lock()
	d.n = n
	d.mu.Unlock()
}

// MarkReady marks the kernel ready without its asking for a cell: a kernel
// run in steps is ready once its start has returned.
func (d *Dispatcher) MarkReady() { d.readyOnce.Do(func() { close(d.ready) }) }

// Take waits for the next cell (Send) and holds it for the kernel's next
// request; it returns false once the dispatcher is closed or ctx is done.
// A kernel run in steps calls it between cells, outside the interpreter,
// and then runs one step, whose request for a cell gets the one held.
func (d *Dispatcher) Take(ctx context.Context) bool {
	select {
	case c := <-d.cells:
		d.mu.Lock()
		d.held = c
		d.mu.Unlock()
		return true
	case <-d.closed:
	case <-ctx.Done():
	}
	return false
}

// Probe asks a kernel run in steps, between cells, which descriptors from
// first up it holds open (files, database connections, directory
// iterators): a step runs no cell but answers {"op": "fds", "open": [...]}.
// It waits for the running cell to end like Send (the caller holds the
// kernel's turn), and returns ErrKernelClosed after Close.
func (d *Dispatcher) Probe(ctx context.Context, first int) (open []int, offsets []int64, err error) {
	c, err := d.control(ctx, map[string]any{"op": "fds", "first": first})
	if err != nil {
		return nil, nil, err
	}
	if len(c.offsets) != len(c.open) {
		return nil, nil, errors.New("the kernel's answer about its open descriptors is malformed")
	}
	return c.open, c.offsets, nil
}

// Reopen has a kernel run in steps, between cells, reopen the files it
// held open when it was suspended ({"op": "reopen", "files": files}, each
// {"fd", "path", "flags": "r", "w", "rw", "a" or "ra", "offset"}), each at
// its old descriptor number. It returns the kernel's error when one did
// not reopen.
func (d *Dispatcher) Reopen(ctx context.Context, files []map[string]any) error {
	c, err := d.control(ctx, map[string]any{"op": "reopen", "files": files})
	if err != nil {
		return err
	}
	if c.reopenErr != "" {
		return errors.New(c.reopenErr)
	}
	return nil
}

// Reseed has a kernel run in steps, between cells, seed its random module
// afresh (a resumed copy of another kernel: {"op": "reseed"}).
func (d *Dispatcher) Reseed(ctx context.Context) error {
	_, err := d.control(ctx, map[string]any{"op": "reseed"})
	return err
}

// control hands the kernel's next step msg instead of a cell and waits for
// the step to end.
func (d *Dispatcher) control(ctx context.Context, msg map[string]any) (*dispatchCell, error) {
	c := &dispatchCell{ctx: ctx, control: msg, done: make(chan struct{})}
	select {
	case d.cells <- c:
	case <-d.closed:
		return nil, ErrKernelClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case <-c.done:
		return c, nil
	case <-d.closed:
		return nil, ErrKernelClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Finish reports the running cell done: a kernel run in steps calls it
// when its step has returned.
func (d *Dispatcher) Finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil {
		close(d.cur.done)
		d.cur = nil
	}
}

// ErrKernelClosed is returned by Send after Close.
var ErrKernelClosed = errors.New("the kernel is closed")

// Send hands code to the kernel as its next cell, with its tool calls
// served by broker (under ctx) and nonce as its output end mark ("" for
// none). It waits until the kernel takes the cell, and returns the cell's
// number and a channel closed when the kernel reports it done.
func (d *Dispatcher) Send(ctx context.Context, code, nonce string, broker *Broker) (int, <-chan struct{}, error) {
	d.mu.Lock()
	d.n++
	c := &dispatchCell{ctx: ctx, n: d.n, code: code, nonce: nonce, broker: broker, done: make(chan struct{})}
	d.mu.Unlock()
	select {
	case d.cells <- c:
		return c.n, c.done, nil
	case <-d.closed:
		d.unnumber(c)
		return 0, nil, ErrKernelClosed
	case <-ctx.Done():
		d.unnumber(c)
		return 0, nil, context.Cause(ctx)
	}
}

// unnumber gives back the number of a cell the kernel never took.
func (d *Dispatcher) unnumber(c *dispatchCell) {
	d.mu.Lock()
	if d.n == c.n {
		d.n--
	}
	d.mu.Unlock()
}

// Close makes the kernel's pending and future requests for a cell answer
// {"op": "close"}, which ends its loop. It is idempotent.
func (d *Dispatcher) Close() { d.closeOnce.Do(func() { close(d.closed) }) }

// Serve answers one request line from the kernel (the tool channel's
// handler): "next" finishes the running cell and blocks until the next
// cell or Close; anything else goes to the running cell's broker. token,
// when non-nil, must match the request's.
func (d *Dispatcher) Serve(ctx context.Context, line []byte, token []byte) []byte {
	// Decoded once: tool calls go on to the broker as they are.
	var req *wireRequest
	if token == nil && isNextLine(line) {
		req = &wireRequest{Op: "next"} // what decodeRequest makes of it
	} else {
		var errResp []byte
		if req, errResp = decodeRequest(line, token); errResp != nil {
			return errResp
		}
	}
	if req.Op == "next" {
		d.mu.Lock()
		if d.cur != nil {
			close(d.cur.done)
			d.cur = nil
		}
		if c := d.held; c != nil {
			d.held, d.cur = nil, c
			d.mu.Unlock()
			if c.control != nil {
				return encodeResponse(c.control)
			}
			return cellResponse(c)
		}
		d.mu.Unlock()
		d.readyOnce.Do(func() { close(d.ready) })
		select {
		case c := <-d.cells:
			d.mu.Lock()
			d.cur = c
			d.mu.Unlock()
			return cellResponse(c)
		case <-d.closed:
		case <-ctx.Done():
		}
		return encodeResponse(map[string]any{"op": "close"})
	}
	d.mu.Lock()
	c := d.cur
	if req.Op == "fds" && c != nil && c.control != nil {
		c.open, c.offsets = req.Open, req.Offsets
		d.mu.Unlock()
		return encodeResponse(map[string]any{})
	}
	if req.Op == "reopened" && c != nil && c.control != nil {
		c.reopenErr = req.Error
		d.mu.Unlock()
		return encodeResponse(map[string]any{})
	}
	d.mu.Unlock()
	if c == nil {
		return encodeResponse(map[string]any{"error": "No call is running in this kernel: tools can be called only while a call runs (a thread left running by an earlier call cannot use them)."})
	}
	// The call ends with the cell, or with the channel (ctx).
	callCtx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	return c.broker.handle(callCtx, req)
}

// isNextLine reports whether line is exactly the kernel loop's request
// for a cell, as its encoder writes it: {"op":"next","done":null} or
// {"op":"next","done":{"n":N}}, then a newline. Such a line decodes to
// {Op: "next"} (the host does not use done); Serve skips decoding it.
// Anything else, however close, is decoded.
func isNextLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"op":"next","done":`))
	if !ok {
		return false
	}
	rest, ok = bytes.CutSuffix(rest, []byte("}\n"))
	if !ok {
		return false
	}
	if string(rest) == "null" {
		return true
	}
	digits, ok := bytes.CutPrefix(rest, []byte(`{"n":`))
	if !ok {
		return false
	}
	digits, ok = bytes.CutSuffix(digits, []byte("}"))
	if !ok || len(digits) == 0 || len(digits) > 18 {
		return false
	}
	for _, b := range digits {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// cellResponse is encodeResponse of c's {"op": "cell", ...} answer,
// written out: the same bytes, without a map to build and sort.
func cellResponse(c *dispatchCell) []byte {
	// A string always encodes (invalid UTF-8 as U+FFFD, as in a map).
	code, _ := json.Marshal(c.code)
	nonce, _ := json.Marshal(c.nonce)
	out := make([]byte, 0, len(code)+len(nonce)+48)
	out = append(out, `{"code":`...)
	out = append(out, code...)
	out = append(out, `,"n":`...)
	out = strconv.AppendInt(out, int64(c.n), 10)
	out = append(out, `,"nonce":`...)
	out = append(out, nonce...)
	out = append(out, `,"op":"cell"}`+"\n"...)
	return out
}
