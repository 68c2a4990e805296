package strict

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// closeGrace is how long Close lets an idle kernel's loop end by itself
// (the interpreter's own shutdown) before the instance is closed.
const closeGrace = 2 * time.Second

// maxStartStderr bounds the stderr kept while a kernel starts, for the
// error when it fails to.
const maxStartStderr = 16 << 10

// StartKernel starts a strict-mode session kernel: a live interpreter
// instance that runs cells in one persistent namespace (see
// [engine.Kernel]). Its guest root is a private staging dir holding the
// generated modules, or, with project, the sandboxed project mode's root
// over spec.Workdir (see [Engine.Project]). It returns once
// the interpreter has started and asked for its first cell; if the
// instance exits first, the error carries its stderr. When ctx ends first
// the instance is stopped and ctx's cause returned. ctx only bounds the
// start: the kernel lives until Close, a cell's sys.exit, or a cell's
// context ending.
func (s *Engine) StartKernel(ctx context.Context, spec engine.KernelSpec, project *ProjectOptions) (engine.Kernel, error) {
	return s.startKernel(ctx, spec, project, nil, nil)
}

// startKernel is StartKernel, or with img ResumeKernel (base finds the
// snapshot img was made against when it is not the engine's).
func (s *Engine) startKernel(ctx context.Context, spec engine.KernelSpec, project *ProjectOptions, img *Image, base BaseFunc) (engine.Kernel, error) {
	c, err := s.get(ctx, spec.MemoryLimitMB)
	if err != nil {
		return nil, err
	}
	var resumeBase *snapshot
	if img != nil {
		if resumeBase, err = s.resumeBase(c, img, base); err != nil {
			return nil, err
		}
	}
	var root *projectRoot
	if project != nil {
		if spec.Workdir == "" {
			return nil, errors.New("starting a sandboxed project-mode kernel: no working dir")
		}
		root = &projectRoot{dir: spec.Workdir, opts: *project}
	}
	// The kernel's life is its own, not the caller's; values still pass.
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := engine.NewDispatcher()
	var restored []ImageFile
	if img != nil {
		restored = img.Files
		d.SetCells(img.Cells)
	}
	box, err := s.newSandbox(kctx, c, sandboxSpec{
		modules:  stagedNames,
		restored: restored,
		project:  root,
		env:      spec.Env,
		serve:    func(ctx context.Context, line []byte) []byte { return d.Serve(ctx, line, nil) },

		diskLimitMB: spec.DiskLimitMB,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	k := &strictKernel{
		d:       d,
		cancel:  cancel,
		staging: box.staging,
		left:    box.left,
		box:     box,
		mem:     newInstanceMemory(c.limit),
		turn:    make(chan struct{}, 1),
		exited:  make(chan struct{}),
	}
	k.sums.wasm, k.sums.stdlib = c.wasmSum, c.stdlibSum
	startErr := &boundedBuffer{max: maxStartStderr}
	k.stderr.set(startErr, 0)
	// From the snapshot the kernel runs in steps (and can be suspended);
	// started in full, its loop runs in the interpreter (hermes_main).
	opts := instanceOptions{cellStop: k.runningCellStop, mem: k.mem, snapshot: box.snapshotOK, resume: img, resumeBase: resumeBase, started: k.started}
	entry := engine.KernelEntry
	if img != nil || s.startsFromSnapshot(c, box) {
		opts.steps, entry = k.steps, engine.KernelStart
	}
	mc := box.moduleConfig(&k.stdout, &k.stderr).
		WithArgs(box.args("-c", entry)...)
	go func() {
		err := s.startWith(box.ctx, c, mc, opts)
		// What the instance wrote last reaches the running cell's writers
		// (or the start error) before anyone sees it gone.
		k.stdout.flush()
		k.stderr.flush()
		k.end = outcome(err)
		if errors.Is(err, errStopped) && s.isClosed() {
			k.end = engine.Outcome{ExitCode: -1, Crash: "the interpreter was stopped: the strict engine was closed"}
		}
		if k.left != nil {
			// What the last call left (earlier ones reported theirs) goes
			// with the staging dir now.
			k.endLeft = k.left.scan(true)
		}
		d.Close()
		box.close()
		k.dead.Store(true)
		close(k.exited)
	}()

	select {
	case <-d.Ready():
		k.stderr.discard()
		// An exit racing Ready: the kernel is not usable.
		select {
		case <-k.exited:
			return nil, startFailure(k.end, startErr)
		default:
		}
		return k, nil
	case <-k.exited:
		return nil, startFailure(k.end, startErr)
	case <-ctx.Done():
		k.kill()
		return nil, context.Cause(ctx)
	}
}

// steps runs the kernel's cells once its start has returned: it waits,
// outside the interpreter, for the next cell (Dispatcher.Take), has the
// interpreter run it (hermes_step) and reports it done when that returns.
// Between cells no call into the module is in progress. When the kernel
// is closed the interpreter is finalised (hermes_end): its atexit
// functions run, as at the end of a one-shot run.
func (k *strictKernel) steps(ctx context.Context, mod api.Module) error {
	step, end := mod.ExportedFunction("hermes_step"), mod.ExportedFunction("hermes_end")
	k.mu.Lock()
	k.mod = mod
	k.mu.Unlock()
	k.d.MarkReady()
	for k.d.Take(ctx) {
		res, err := step.Call(ctx)
		if err != nil {
			// The instance is gone (exit, crash, stopped): Run learns it
			// from exited, not from a cell reported done.
			return err
		}
		k.d.Finish()
		if res[0] == 0 {
			break // the step found the dispatcher closed
		}
	}
	if ctx.Err() != nil {
		// Killed, or suspended: not finalised.
		return errStopped
	}
	_, err := end.Call(ctx)
	return err
}

// startFailure describes a kernel that exited before it was ready.
func startFailure(end engine.Outcome, stderr *boundedBuffer) error {
	what := end.Crash
	if what == "" {
		what = fmt.Sprintf("exit code %d", end.ExitCode)
	}
	msg := "the kernel exited while starting (" + what + ")"
	if text := strings.TrimSpace(stderr.String()); text != "" {
		msg += ": " + text
	}
	return errors.New(msg)
}

// strictKernel is a live interpreter instance looping over cells.
type strictKernel struct {
	d       *engine.Dispatcher
	cancel  context.CancelFunc
	staging string // removed once the instance is gone
	// left finds the files calls leave in the staging dir (nil over a
	// working dir); endLeft are those found when the instance ended, read
	// after exited.
	left *leftScan
	// box is the kernel's sandbox, for the refusals of its file system.
	box     *sandbox
	endLeft *engine.LeftFiles
	// mem is the instance's memory: its grace zone is armed again before
	// each cell (see memory.go).
	mem *instanceMemory

	// stdout and stderr are the instance's output: the running cell's
	// writers, and discarded between cells.
	stdout, stderr guestOutput
	// cellStop is closed when the running cell's context ends (nil between
	// cells): the guest's sleep returns early on it.
	cellStop atomic.Pointer[<-chan struct{}]

	turn    chan struct{} // held by the running cell: one at a time
	inCell  atomic.Bool   // a cell is running
	closing atomic.Bool
	dead    atomic.Bool // the instance has exited
	once    sync.Once

	exited chan struct{}  // closed once the instance is gone and cleaned up
	end    engine.Outcome // how the instance ended; read after exited

	// For a suspension (suspend.go): the instance's module once its
	// cells run, the snapshot it started from (nil: in full) and its
	// monotonic clock, guarded by mu; and the interpreter's sums.
	mu    sync.Mutex
	mod   api.Module
	base  *snapshot
	clock sys.Nanotime
	sums  struct{ wasm, stdlib string }
}

// started records the snapshot the instance starts from and its clock.
func (k *strictKernel) started(snap *snapshot, clock sys.Nanotime) {
	k.mu.Lock()
	k.base, k.clock = snap, clock
	k.mu.Unlock()
}

var _ engine.Kernel = (*strictKernel)(nil)

// runningCellStop is the running cell's stop channel (nil between cells):
// a sleep in the cell ends, and the instance with it, when it is closed.
func (k *strictKernel) runningCellStop() <-chan struct{} {
	if p := k.cellStop.Load(); p != nil {
		return *p
	}
	return nil
}

// Alive implements engine.Kernel.
func (k *strictKernel) Alive() bool { return !k.dead.Load() && !k.closing.Load() }

// Outcomes of a cell that did not end by itself (the wording of the
// project-mode kernel's where the case is the same).
var (
	// stopped: its context ended while it ran (as outcome() says it).
	stopped = engine.Outcome{ExitCode: -1, Crash: "the interpreter was stopped"}
	// notStarted: its context ended before it started.
	notStarted = engine.Outcome{ExitCode: -1, Crash: "The call was stopped before it started."}
	// closedDuring: Close stopped it.
	closedDuring = engine.Outcome{ExitCode: -1, Crash: "The kernel was closed while this call was running."}
)

// Run implements engine.Engine: it runs job.Code as the kernel's next
// cell, one at a time, with its output going to job.Stdout and job.Stderr
// and its tool calls to job.Broker. job.Env and job.Workdir are ignored
// (fixed at start). A cell that raised ends with the exit report's code
// (1), as a one-shot run does. When ctx ends while the cell runs, the
// kernel is killed and Run returns once it is gone; when ctx ends before
// the cell started (waiting for another cell), the kernel is left as it
// was.
func (k *strictKernel) Run(ctx context.Context, job *engine.Job) (engine.Outcome, error) {
	select {
	case k.turn <- struct{}{}:
		defer func() { <-k.turn }()
	case <-ctx.Done():
		// Still waiting for another cell: this one never started.
		if !k.Alive() {
			return engine.Outcome{}, engine.ErrKernelClosed
		}
		return notStarted, nil
	}
	if !k.Alive() {
		return engine.Outcome{}, engine.ErrKernelClosed
	}
	if ctx.Err() != nil {
		// Never sent: the kernel and its state are untouched.
		return notStarted, nil
	}
	stop := ctx.Done()
	k.cellStop.Store(&stop)
	k.mem.rearm()
	k.stdout.set(job.Stdout, job.FlushAfter)
	k.stderr.set(job.Stderr, job.FlushAfter)
	k.inCell.Store(true)
	defer func() {
		k.inCell.Store(false)
		// The guest is now blocked waiting for a cell, or gone: it writes
		// nothing until the next one.
		k.stdout.discard()
		k.stderr.discard()
		k.cellStop.Store(nil)
	}()
	if k.closing.Load() {
		// Close began before the cell was marked as running and may be
		// waiting for an idle loop to end: the cell must not start.
		return engine.Outcome{}, engine.ErrKernelClosed
	}

	_, done, err := k.d.Send(ctx, job.Code, "", job.Broker)
	if err != nil {
		if errors.Is(err, engine.ErrKernelClosed) {
			return engine.Outcome{}, err
		}
		return notStarted, nil // ctx ended before the kernel took the cell
	}
	select {
	case <-done:
		return k.cellOutcome(job), nil
	case <-k.exited:
		return k.exitOutcome(), nil
	case <-ctx.Done():
		select {
		case <-done:
			return k.cellOutcome(job), nil
		case <-k.exited:
			return k.exitOutcome(), nil
		default:
		}
		k.kill()
		o := stopped
		o.Left = k.endLeft
		return o, nil
	}
}

// cellOutcome is the outcome of a cell the kernel reported done, with the
// files it left in the staging dir, which stays until the kernel ends.
func (k *strictKernel) cellOutcome(job *engine.Job) engine.Outcome {
	var o engine.Outcome
	if r := job.Broker.Report(); r != nil && r.Kind == "exception" {
		o.ExitCode = r.Code
	}
	if k.left != nil {
		if o.Left = k.left.scan(true); o.Left != nil {
			o.Left.Kernel = true
		}
	}
	o.Refused, o.RefusedTotal = k.box.refusals()
	o.Missing = k.box.missing.take()
	return o
}

// exitOutcome is the outcome of a cell during which the instance ended,
// with the files it left in the staging dir, now gone.
func (k *strictKernel) exitOutcome() engine.Outcome {
	o := k.end
	if k.closing.Load() && k.end.ExitCode == stopped.ExitCode && k.end.Crash == stopped.Crash {
		o = closedDuring
	}
	o.Left = k.endLeft
	o.Refused, o.RefusedTotal = k.box.refusals()
	o.Missing = k.box.missing.take()
	return o
}

// kill closes the instance (at its next function call or loop back-edge)
// and waits until it is gone.
func (k *strictKernel) kill() {
	k.dead.Store(true)
	k.cancel()
	<-k.exited
}

// Close implements engine.Kernel: an idle kernel's loop is told to end
// (the interpreter shuts down by itself); a running cell is stopped. It
// returns once the instance is gone and its staging dir removed.
func (k *strictKernel) Close() error {
	k.once.Do(func() {
		k.closing.Store(true)
		k.d.Close()
		if !k.inCell.Load() {
			t := time.NewTimer(closeGrace)
			select {
			case <-k.exited:
			case <-t.C:
			}
			t.Stop()
		}
		k.cancel()
	})
	<-k.exited
	return nil
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
