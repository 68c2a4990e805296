package nativeengine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// closeWait is how long Close gives an idle kernel to leave its loop and
// exit before its tree is killed.
const closeWait = time.Second

// markWait bounds the wait for a cell's end marks once the kernel has
// reported the cell done: a cell that closed or redirected fd 1 or 2 never
// writes its mark there.
const markWait = 2 * time.Second

// startupOutputLimit bounds the stderr kept from a kernel's start, for the
// error when it dies before it is ready.
const startupOutputLimit = 64 << 10

// kernelSources are the files of a kernel's private dir, built once.
var kernelSources = sync.OnceValue(func() map[string][]byte {
	files := maps.Clone(stagedSources())
	files[engine.KernelName] = []byte(engine.KernelSource)
	return files
})

// StartKernel starts a project-mode session kernel: a python child that
// runs cells in one namespace until it is closed (see engine.Kernel). Like
// Run, it stages the generated hermes_tools module, the runner and the
// kernel loop in a private dir (0700), serves the kernel's requests on a
// token-checked RPC server (with an engine.Dispatcher as the handler) and
// starts `python -u DIR/_hermes_kernel.py` in spec.Workdir with spec.Env,
// in a process tree of its own. It returns once the kernel asks for its
// first cell, or an error (with what the child wrote to stderr) when the
// child exits first or ctx ends; ctx bounds only the start.
func (e *Engine) StartKernel(ctx context.Context, spec engine.KernelSpec) (engine.Kernel, error) {
	k := &kernel{
		grace:  e.grace(),
		disp:   engine.NewDispatcher(),
		stdout: &outputRouter{},
		stderr: &outputRouter{},
		pumped: make(chan struct{}),
	}
	var c proc
	if e.remote() {
		rc, srv, err := startRemote(ctx, e.Backend, e.remotePython(), kernelSources(), []string{engine.KernelName}, "", spec.Env, handlerFunc(k.disp.Serve))
		if err != nil {
			return nil, err
		}
		k.srv, c = srv, rc
	} else {
		lc, err := e.startLocalKernel(ctx, k, spec)
		if err != nil {
			return nil, err
		}
		c = lc
	}
	return k.started(ctx, c)
}

// startLocalKernel stages the kernel's files and starts python here.
func (e *Engine) startLocalKernel(ctx context.Context, k *kernel, spec engine.KernelSpec) (*child, error) {
	if e.Python == "" {
		return nil, errors.New("no python interpreter given to the project-mode engine")
	}
	dir, err := stagePrivateDir(e.TempDir, "hermes-kernel-", kernelSources())
	if err != nil {
		return nil, err
	}
	k.dir = dir
	// The server lives as long as the kernel, not as long as ctx.
	srv, err := listenRPC(context.WithoutCancel(ctx), e.transport(), dir, handlerFunc(k.disp.Serve))
	if err != nil {
		k.teardown()
		return nil, err
	}
	k.srv = srv
	// -u: unbuffered, so a cell's output arrives as it prints. Started as
	// a file, the loop finds our hermes_tools before the session dir's.
	c, err := startChild(e.Python, []string{"-u", filepath.Join(dir, engine.KernelName)}, spec.Workdir, childEnv(spec.Env, dir, srv), e.grace(), e.startOptions(spec.Workdir, spec.ProcessLimits))
	if err != nil {
		k.teardown()
		return nil, err
	}
	return c, nil
}

// started waits until the kernel c runs asks for its first cell.
func (k *kernel) started(ctx context.Context, c proc) (engine.Kernel, error) {
	k.child = c
	startup := &limitedBuffer{max: startupOutputLimit}
	k.stderr.begin(startup, nil)
	var pumps sync.WaitGroup
	stdout, stderr := c.outputs()
	for _, p := range []struct {
		r *outputRouter
		f io.Reader
	}{{k.stdout, stdout}, {k.stderr, stderr}} {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			p.r.pump(p.f)
		}()
	}
	go func() { pumps.Wait(); close(k.pumped) }()

	select {
	case <-k.disp.Ready():
		k.stderr.end()
		return k, nil
	case <-c.done():
		k.teardown()
		return nil, fmt.Errorf("python exited before the kernel was ready (%s)%s", describeExit(c.result()), startup.tail())
	case <-ctx.Done():
		k.teardown()
		return nil, fmt.Errorf("starting the kernel: %w%s", context.Cause(ctx), startup.tail())
	}
}

// describeExit says how a child ended, for an error message.
func describeExit(o engine.Outcome) string {
	if o.Crash != "" {
		return strings.TrimSuffix(o.Crash, ".")
	}
	return fmt.Sprintf("exit code %d", o.ExitCode)
}

// kernel is a project-mode session kernel (engine.Kernel).
type kernel struct {
	dir    string
	grace  time.Duration
	disp   *engine.Dispatcher
	srv    *Server
	child  proc
	stdout *outputRouter
	stderr *outputRouter
	// pumped is closed when both output readers have ended.
	pumped chan struct{}

	// run serializes cells.
	run sync.Mutex
	mu  sync.Mutex
	// closing is set by Close and by the teardown: no further cell.
	closing bool
	// cancelCell cancels the running cell's context (nil between cells).
	cancelCell context.CancelCauseFunc

	teardownOnce sync.Once
}

// errClosedDuringCell is the cause a cell's context gets from Close.
var errClosedDuringCell = errors.New("the kernel was closed while this call was running")

// Alive implements engine.Kernel.
func (k *kernel) Alive() bool {
	k.mu.Lock()
	closing := k.closing
	k.mu.Unlock()
	if closing {
		return false
	}
	select {
	case <-k.child.done():
		return false
	default:
		return true
	}
}

// Run implements engine.Engine: job.Code runs as the kernel's next cell
// (job.Env and job.Workdir are ignored, see engine.Kernel). It returns
// when the kernel has reported the cell done and the cell's end marks
// have come through stdout and stderr (at most markWait after done); when
// the child exits during the cell (sys.exit) with its exit status; when
// ctx ends, after the whole tree was stopped as Engine.Run stops it (the
// kernel is then dead). A dead or closed kernel gives engine.ErrKernelClosed.
// A cell that raised ends with the exit report's code (1), as a one-shot
// run does; a ctx that is already done runs nothing and keeps the kernel;
// a ctx that ends after the cell is done (while its end marks are awaited)
// keeps it too.
func (k *kernel) Run(ctx context.Context, job *engine.Job) (engine.Outcome, error) {
	k.run.Lock()
	defer k.run.Unlock()
	// The limits are the kernel's, over all its cells: what this cell
	// did is what changed while it ran.
	before := k.child.limitEvents()
	o, err := k.runCell(ctx, job)
	return withLimits(o, k.child.limitEvents().Sub(before)), err
}

// runCell is Run, with k.run held.
func (k *kernel) runCell(ctx context.Context, job *engine.Job) (engine.Outcome, error) {
	if !k.Alive() {
		k.teardown()
		return engine.Outcome{}, engine.ErrKernelClosed
	}
	if ctx.Err() != nil {
		// The cell never started; the kernel and its state are intact.
		return engine.Outcome{ExitCode: -1, Crash: "The call was stopped before it started."}, nil
	}
	cellCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	k.mu.Lock()
	if k.closing {
		k.mu.Unlock()
		return engine.Outcome{}, engine.ErrKernelClosed
	}
	k.cancelCell = cancel
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.cancelCell = nil
		k.mu.Unlock()
	}()

	mark := newCellMark()
	outSeen := k.stdout.begin(job.Stdout, mark)
	errSeen := k.stderr.begin(job.Stderr, mark)
	// After the teardown (which drains the pipes into the cell's writers)
	// and before Run returns, the writers are let go.
	defer k.stdout.end()
	defer k.stderr.end()

	_, done, err := k.disp.Send(cellCtx, job.Code, string(mark), job.Broker)
	if err != nil {
		if errors.Is(err, engine.ErrKernelClosed) || !k.Alive() {
			k.teardown()
			return engine.Outcome{}, engine.ErrKernelClosed
		}
		// ctx ended before the kernel took the cell.
		return engine.Outcome{ExitCode: -1, Crash: "The call was stopped before it started."}, nil
	}

	select {
	case <-done:
	case <-k.child.done():
		// sys.exit, os._exit, a crash: the kernel is gone.
		k.teardown()
		return k.child.result(), nil
	case <-cellCtx.Done():
		k.disp.Close()
		if errors.Is(context.Cause(cellCtx), errClosedDuringCell) {
			// As if interrupted, with Close's shorter patience.
			k.child.stop(min(k.grace, closeWait))
			k.teardown()
			return engine.Outcome{ExitCode: -1, Crash: "The kernel was closed while this call was running."}, nil
		}
		k.child.stop(k.grace)
		k.teardown()
		o := k.child.result()
		if o.Crash == "" {
			o = engine.Outcome{ExitCode: -1, Crash: fmt.Sprintf("Python was stopped and exited with code %d.", o.ExitCode)}
		}
		return o, nil
	}

	// The cell is done; what it printed is complete once both marks are in.
	t := time.NewTimer(markWait)
	defer t.Stop()
wait:
	for _, seen := range []<-chan struct{}{outSeen, errSeen} {
		select {
		case <-seen:
		case <-t.C:
			break wait
		case <-ctx.Done():
			break wait
		case <-k.child.done():
			// Ended right after the cell (a thread of it): what is left in
			// the pipes still belongs to the cell.
			k.teardown()
			break wait
		}
	}
	o := engine.Outcome{}
	if r := job.Broker.Report(); r != nil && r.Kind == "exception" {
		// As in a one-shot run, an uncaught exception is exit status 1.
		o.ExitCode = r.Code
	}
	return o, nil
}

// Close implements engine.Kernel: the loop is told to end, the child gets
// closeWait to exit, then its whole tree is killed; the server and the
// private dir go. A running cell ends as if interrupted.
func (k *kernel) Close() error {
	k.mu.Lock()
	k.closing = true
	cancel := k.cancelCell
	k.mu.Unlock()
	if cancel != nil {
		cancel(errClosedDuringCell)
	}
	k.disp.Close()
	t := time.NewTimer(closeWait)
	select {
	case <-k.child.done():
	case <-t.C:
	}
	t.Stop()
	k.teardown()
	return nil
}

// teardown kills what is left of the kernel and releases everything it
// holds; concurrent callers all return once it is done. It copes with a
// kernel that was not fully started.
func (k *kernel) teardown() {
	k.teardownOnce.Do(func() {
		k.mu.Lock()
		k.closing = true
		cancel := k.cancelCell
		k.mu.Unlock()
		if cancel != nil {
			// Tool calls still running for the cell end with it.
			cancel(engine.ErrKernelClosed)
		}
		k.disp.Close()
		if k.child != nil {
			k.child.kill()
			k.child.drain(k.pumped, drainTimeout)
			k.child.release()
		}
		if k.srv != nil {
			k.srv.Close()
		}
		if k.dir != "" {
			os.RemoveAll(k.dir)
		}
	})
}

// newCellMark returns a fresh end mark for a cell: a string no output
// contains by chance, written by the loop to fd 1 and 2 after the cell.
func newCellMark() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return []byte("\x1ehermes-end-" + hex.EncodeToString(b) + "\x1e")
}

// outputRouter hands one of the kernel's output streams to the running
// cell: the bytes before the cell's end mark go to its writer, the mark
// itself never, and everything between cells is discarded.
type outputRouter struct {
	mu   sync.Mutex
	w    io.Writer // the cell's writer; nil discards
	mark []byte    // the cell's end mark; nil passes everything to w
	held []byte    // a tail that may be the start of mark
	seen chan struct{}
	eof  bool
	// dropped counts the bytes that belonged to no cell.
	dropped int
}

// begin routes the stream to w until mark (nil: until end). The returned
// channel is closed when mark has come through, or at the stream's end.
func (r *outputRouter) begin(w io.Writer, mark []byte) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w, r.mark, r.held = w, mark, nil
	r.seen = make(chan struct{})
	if r.eof {
		close(r.seen)
		r.seen = nil
		return closedChan
	}
	return r.seen
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// end stops routing: nothing more is written to the cell's writer.
func (r *outputRouter) end() {
	r.mu.Lock()
	r.w, r.mark, r.held = nil, nil, nil
	r.mu.Unlock()
}

// pump reads f until it ends.
func (r *outputRouter) pump(f io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			r.feed(buf[:n])
		}
		if err != nil {
			r.finish()
			return
		}
	}
}

// feed routes one chunk read from the stream.
func (r *outputRouter) feed(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		r.dropped += len(p)
		return
	}
	if r.mark == nil {
		r.w.Write(p)
		return
	}
	data := p
	if len(r.held) > 0 {
		data = append(r.held, p...)
		r.held = nil
	}
	if i := bytes.Index(data, r.mark); i >= 0 {
		if i > 0 {
			r.w.Write(data[:i])
		}
		// The rest was written after the cell ended, before the next one
		// started: it belongs to no cell.
		r.dropped += len(data) - i - len(r.mark)
		r.w, r.mark = nil, nil
		r.markSeen()
		return
	}
	keep := partialMark(data, r.mark)
	if n := len(data) - keep; n > 0 {
		r.w.Write(data[:n])
	}
	if keep > 0 {
		r.held = bytes.Clone(data[len(data)-keep:])
	}
}

// finish records the stream's end: no mark can come any more.
func (r *outputRouter) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil && len(r.held) > 0 {
		r.w.Write(r.held)
	}
	r.held = nil
	r.eof = true
	r.markSeen()
}

func (r *outputRouter) markSeen() {
	if r.seen != nil {
		close(r.seen)
		r.seen = nil
	}
}

// partialMark is the length of the longest tail of data that is a proper
// prefix of mark (the rest of the mark may be in the next chunk).
func partialMark(data, mark []byte) int {
	from := max(0, len(data)-len(mark)+1)
	for i := from; i < len(data); i++ {
		if data[i] == mark[0] && bytes.HasPrefix(mark, data[i:]) {
			return len(data) - i
		}
	}
	return 0
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
	cut bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.max - len(b.buf); n > room {
		b.cut = true
		p = p[:max(room, 0)]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// tail is ": <what was written>" for an error message, or "".
func (b *limitedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	if s == "" {
		return ""
	}
	if b.cut {
		s += "\n[...]"
	}
	return ": " + s
}
