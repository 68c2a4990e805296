// Package strict is the strict-mode engine: CPython compiled to WASI,
// running inside wazero. Each run gets a fresh module instance with real
// clocks, a memory cap (reserved up front, see memory.go), its staging dir
// as the only file system (a jail, see jailFS, with a disk budget, see
// diskBudget), the standard library mounted read-only, and the tool channel, a
// host function (see hostcall.go). There is no network and no process: WASI
// preview 1 offers neither, and the host grants nothing else.
//
// The engine compiles the interpreter once per process, lazily, through an
// on-disk compilation cache, so later processes load machine code instead of
// compiling again.
package strict

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/trust"
	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

// Options configures an [Engine].
type Options struct {
	// CacheDir holds wazero's compilation cache. Empty disables the disk
	// cache: every process then compiles the interpreter again (seconds).
	CacheDir string
	// TempDir is the parent of the per-run staging dirs; empty means
	// os.TempDir().
	TempDir string
	// Progress receives one line when the interpreter is compiled without
	// a warm cache (nil: os.Stderr).
	Progress io.Writer
	// Interpreter returns the wasm module; nil means the embedded,
	// verified one (pyodideassets.Interpreter).
	Interpreter func() ([]byte, error)
	// Packages are dirs of pure-Python packages (code_execution.wasm_packages)
	// mounted read-only at /.hermes-packages/N (N their index here) in every
	// instance, strict and sandboxed project mode alike, and put on
	// sys.path after the script's own dir. A dir that cannot be opened is
	// left out.
	Packages []string
	// SmallImages compresses suspended kernels' images with zstd (about
	// 40% smaller, about 3x the time) instead of s2
	// (code_execution.session_store_compression: small).
	SmallImages bool
	// Stdlib returns the standard library zip mounted at
	// /usr/local/lib/python313.zip; nil means the embedded, verified one
	// (pyodideassets.Stdlib).
	Stdlib func() ([]byte, error)
	// interpreterSHA256 and stdlibSHA256 are the hex sha256 of what
	// Interpreter and Stdlib return, when known without hashing again.
	interpreterSHA256, stdlibSHA256 string
	// noSnapshot starts every instance in full, noSharedSnapshot restores
	// by copying on Linux too, and preinit replaces preinitCode (tests).
	noSnapshot, noSharedSnapshot bool
	preinit                      string
}

// Engine is the strict-mode engine. It is safe for concurrent use; each
// Run gets its own instance.
type Engine struct {
	opts Options

	mu       sync.Mutex
	compiled map[uint32]*compiled // by memory limit in pages
	cache    wazero.CompilationCache
	closed   bool
	// closing is canceled by Close: it stops every running instance, and
	// Close waits for running (instances in start) before closing runtimes.
	closing     context.Context
	stopRunning context.CancelFunc
	running     sync.WaitGroup
	// preparing counts calls in get (compiling the interpreter, making
	// its snapshot): Close waits for them before it closes the runtimes
	// and the compilation cache they use.
	preparing sync.WaitGroup

	// snap is the interpreter snapshot instances start from (nil: none;
	// see snapshot.go), set once by ensureSnapshot.
	snapOnce sync.Once
	snap     atomic.Pointer[snapshot]
	// base is the last snapshot a resume loaded from a store (another
	// process's): the next image made against it resumes without
	// decoding it again.
	baseMu sync.Mutex
	base   *snapshot
	// snapFile delivers the snapshot file's contents, read while the
	// first module compiles (nil: no cache dir; see readSnapshotFile);
	// ensureSnapshot takes it.
	snapReadOnce sync.Once
	snapFile     chan snapshotRead

	// diskCache is the cache dir the engine uses: Options.CacheDir, or ""
	// when it may hold what another user wrote (see cacheDir).
	diskCacheOnce sync.Once
	diskCache     string
}

// compiled is one runtime (a memory limit) and its compiled interpreter.
type compiled struct {
	once   sync.Once
	rt     wazero.Runtime
	mod    wazero.CompiledModule
	stdlib stdlibFS // the standard library zip and its zone files, mounted read-only
	err    error

	limit uint64 // the memory cap in bytes (its instances' allocators enforce it)

	wasmSum, stdlibSum string // hex sha256 of the module and of the standard library zip

	// dataEnd is how far the module's data segments reach (0: unknown);
	// scratch is the module's data scratch (see datascratch.go).
	dataEnd     uint64
	scratchOnce sync.Once
	scratch     *dataScratch

	pycKey  string // names the bytecode of the staged sources
	pycOnce sync.Once
	pyc     map[string][]byte // see bytecode.go
}

// New returns a strict engine. Nothing is compiled until the first
// Run or Warm.
func New(opts Options) *Engine {
	if opts.Progress == nil {
		opts.Progress = os.Stderr
	}
	if opts.Interpreter == nil {
		opts.Interpreter = pyodideassets.Interpreter
		opts.interpreterSHA256 = pyodideassets.SHA256 // Interpreter verifies it
	}
	if opts.Stdlib == nil {
		opts.Stdlib = pyodideassets.Stdlib
		opts.stdlibSHA256 = pyodideassets.StdlibSHA256 // Stdlib verifies it
	}
	closing, stop := context.WithCancel(context.Background())
	return &Engine{opts: opts, compiled: map[uint32]*compiled{}, closing: closing, stopRunning: stop}
}

// Warm compiles (or loads from the cache) the interpreter for the given
// memory limit, and loads or makes its snapshot, so the next Run pays
// only for instantiation.
func (s *Engine) Warm(ctx context.Context, memoryLimitMB int) error {
	_, err := s.get(ctx, memoryLimitMB)
	return err
}

func pages(memoryLimitMB int) uint32 {
	if memoryLimitMB <= 0 {
		memoryLimitMB = config.DefaultMemoryLimitMB
	}
	return uint32(min(memoryLimitMB, 4096)) * 16 // 64 KiB pages
}

func (s *Engine) get(ctx context.Context, memoryLimitMB int) (*compiled, error) {
	p := pages(memoryLimitMB)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	c := s.compiled[p]
	if c == nil {
		c = &compiled{}
		s.compiled[p] = c
	}
	s.preparing.Add(1)
	defer s.preparing.Done()
	s.mu.Unlock()
	c.once.Do(func() { c.err = s.compile(context.WithoutCancel(ctx), p, c) })
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		// Close ran while this compiled; it may have missed the runtime.
		if c.rt != nil {
			c.rt.Close(context.WithoutCancel(ctx))
		}
		return nil, ErrClosed
	}
	if c.err == nil {
		s.ensureSnapshot(context.WithoutCancel(ctx), c)
	}
	if c.err != nil {
		// Forget the failure so a later call (after $HERMES_WASM_INTERPRETER is fixed, say)
		// tries again.
		s.mu.Lock()
		if s.compiled[p] == c {
			delete(s.compiled, p)
		}
		s.mu.Unlock()
	}
	return c, c.err
}

// isClosed reports whether Close has been called.
func (s *Engine) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("strict engine is closed")

// compile fills c: the runtime, the compiled interpreter and its standard
// library.
func (s *Engine) compile(ctx context.Context, memPages uint32, c *compiled) error {
	wasm, err := s.opts.Interpreter()
	if err != nil {
		return err
	}
	stdlib, err := s.opts.Stdlib()
	if err != nil {
		return err
	}
	if c.stdlib, err = newStdlibFS(pyodideassets.StdlibName, stdlib); err != nil {
		return err
	}
	wasmSum := s.opts.interpreterSHA256
	if wasmSum == "" {
		sum := sha256.Sum256(wasm)
		wasmSum = hex.EncodeToString(sum[:])
	}
	stdlibSum := s.opts.stdlibSHA256
	if stdlibSum == "" {
		sum := sha256.Sum256(stdlib)
		stdlibSum = hex.EncodeToString(sum[:])
	}
	// No WithCloseOnContextDone: the module's own loop checks stop it (see
	// start).
	cfg := wazero.NewRuntimeConfigCompiler().
		WithDebugInfoEnabled(false).
		WithMemoryLimitPages(runtimeMemoryPages) // the allocator enforces the cap: see memory.go
	marker := ""
	if s.opts.CacheDir != "" {
		if err := os.MkdirAll(s.opts.CacheDir, 0o700); err != nil {
			return fmt.Errorf("compilation cache dir %s: %w", s.opts.CacheDir, err)
		}
	}
	if dir := s.cacheDir(); dir != "" {
		s.mu.Lock()
		if s.cache == nil {
			s.cache, err = wazero.NewCompilationCacheWithDir(dir)
		}
		cache := s.cache
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("compilation cache dir %s: %w", dir, err)
		}
		cfg = cfg.WithCompilationCache(cache)
		marker = filepath.Join(dir, "compiled-"+wasmSum[:12]+"-"+goruntime.GOARCH)
	}
	if _, err := os.Stat(marker); marker == "" || err != nil {
		where := "no disk cache, so every process compiles it"
		if marker != "" {
			where = "cached in " + s.cacheDir() + " for later runs"
		}
		fmt.Fprintf(s.opts.Progress, "hermes-wasm-exec: compiling the Python interpreter (%.0f MB of wasm; first run only, a few seconds; %s)\n",
			float64(len(wasm))/1e6, where)
	}
	s.snapReadOnce.Do(func() {
		if s.cacheDir() != "" && !s.opts.noSnapshot {
			ch := make(chan snapshotRead, 1)
			s.snapFile = ch
			path := s.snapshotPath(wasmSum, stdlibSum)
			go func() { ch <- readSnapshotFile(path) }()
		}
	})
	ctx = experimental.WithCompilationWorkers(ctx, goruntime.GOMAXPROCS(0))
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := instantiateWASI(ctx, rt); err != nil {
		rt.Close(ctx)
		return fmt.Errorf("instantiating WASI: %w", err)
	}
	if err := instantiateHostModule(ctx, rt); err != nil {
		rt.Close(ctx)
		return fmt.Errorf("instantiating the tool channel: %w", err)
	}
	mod, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		rt.Close(ctx)
		return fmt.Errorf("compiling the Python interpreter: %w", err)
	}
	if marker != "" {
		_ = os.WriteFile(marker, nil, 0o600)
	}
	c.rt, c.mod, c.pycKey = rt, mod, bytecodeKey(wasmSum)
	c.dataEnd = wasmDataEnd(wasm)
	c.wasmSum, c.stdlibSum = wasmSum, stdlibSum
	c.limit = uint64(memPages) * wasmPage
	return nil
}

// cacheDir is the cache dir the engine reads and writes compiled code,
// the snapshot and bytecode in: Options.CacheDir, unless it, or a
// directory above it, may hold what another user wrote (see untrusted):
// the engine then keeps all of it in memory, and says so once on
// Progress. It is checked once per engine, after compile has made the
// dir.
func (s *Engine) cacheDir() string {
	s.diskCacheOnce.Do(func() {
		dir := s.opts.CacheDir
		if dir == "" {
			return
		}
		if why := trust.Untrusted(dir); why != "" {
			fmt.Fprintf(s.opts.Progress, "hermes-wasm-exec: not using the cache dir %s: %s, so another user could plant code there; "+
				"the interpreter is compiled and its snapshot made in memory by each process instead. "+
				"Make the dir and those above it yours (or root's) and not writable by others (chmod go-w), or set %s to another dir\n",
				dir, why, "HERMES_WASM_CACHE_DIR")
			return
		}
		s.diskCache = dir
	})
	return s.diskCache
}

// Run implements engine.Engine: it stages the script, instantiates a fresh
// interpreter and runs it to the end, or until ctx is done (the instance
// is then closed at its next function boundary or loop back-edge).
func (s *Engine) Run(ctx context.Context, job *engine.Job) (engine.Outcome, error) {
	return s.run(ctx, job, nil)
}

// libMount is where the staged files are mounted: the only way to them
// when the guest's root is the working dir (see Project), and a second
// way to the staging dir otherwise.
const libMount = "/.hermes-lib"

// instanceMounts are the guest paths every instance mounts, in the order
// newSandbox mounts them (so the preopened descriptors 3, 4, 5, 6). An
// instance restored from the snapshot keeps the snapshot's idea of which
// descriptor is which path (wasi-libc's preopen table, in linear memory),
// so every instance mounts the same paths in the same order, and the list
// is part of the snapshot's key.
var instanceMounts = []string{stdlibMount, zoneinfoMount, "/", libMount}

// Project returns the engine of the sandboxed project mode: the same
// sandboxed interpreter with the job's working dir, read-write at its host
// path (see [GuestPath]) and the script's cwd, instead of a fresh private
// dir: the script's own open(), os.walk and sqlite see the session's files
// as a native python in that dir would, judged by opts.Guard. Besides it
// the guest sees opts.Packages read-only, a private /tmp, the interpreter's
// own files and the generated modules at /.hermes-lib, and nothing else of
// the host (see projectFS).
func (s *Engine) Project(opts ProjectOptions) engine.Engine { return projectEngine{s, opts} }

type projectEngine struct {
	s    *Engine
	opts ProjectOptions
}

func (p projectEngine) Run(ctx context.Context, job *engine.Job) (engine.Outcome, error) {
	if job.Workdir == "" {
		return engine.Outcome{}, errors.New("the sandboxed project mode needs a working dir")
	}
	return p.s.run(ctx, job, &projectRoot{dir: job.Workdir, opts: p.opts})
}

// projectRoot is the guest's root of the sandboxed project mode: the
// working dir dir, with opts.
type projectRoot struct {
	dir  string
	opts ProjectOptions
}

// run runs job with project as the guest's root, or the staging dir when
// project is nil.
func (s *Engine) run(ctx context.Context, job *engine.Job, project *projectRoot) (engine.Outcome, error) {
	c, err := s.get(ctx, job.MemoryLimitMB)
	if err != nil {
		return engine.Outcome{}, err
	}
	box, err := s.newSandbox(ctx, c, sandboxSpec{
		modules: []string{engine.StubName, engine.RunnerName},
		extra:   map[string][]byte{engine.ScriptName: []byte(job.Code)},
		project: project,
		env:     job.Env,
		serve:   job.Broker.Serve,

		diskLimitMB: job.DiskLimitMB,
	})
	if err != nil {
		return engine.Outcome{}, err
	}
	defer box.close()
	var stdout, stderr guestOutput
	stdout.set(job.Stdout, job.FlushAfter)
	stderr.set(job.Stderr, job.FlushAfter)
	mc := box.moduleConfig(&stdout, &stderr).
		WithArgs(box.args("-c", runnerCommand, box.lib+engine.ScriptName)...)
	err = s.startWith(box.ctx, c, mc, instanceOptions{snapshot: box.snapshotOK})
	// However the instance ended (its own exit, a timeout, an interrupt, a
	// trap), what it wrote is handed over before Run returns.
	stdout.discard()
	stderr.discard()
	o := outcome(err)
	if box.left != nil {
		o.Left = box.left.scan(false) // the staging dir goes with box
	}
	o.Refused, o.RefusedTotal = box.refusals()
	o.Missing = box.missing.take()
	return o, nil
}

// oneShotCommand is the -c program of a one-shot instance: it imports
// _hermes_host and more (imports: ", name, ..."), and calls call, a
// Python expression for a function of no arguments. Restored from the
// snapshot, the instance then ends the quick way
// (_hermes_host._run_and_exit, see snapshot_setup.py: everything of the
// interpreter's finalisation a script can observe, without tearing the
// interpreter down); started in full, where _hermes_host has no such
// function, the usual way. One program for both, so that a script sees
// the same sys.orig_argv either way.
func oneShotCommand(imports, call string) string {
	return "import _hermes_host" + imports + "; getattr(_hermes_host, '_run_and_exit', lambda f: f())(" + call + ")"
}

// runnerCommand runs the runner (engine.Runner, imported so that its
// cached bytecode is used) as a one-shot program.
var runnerCommand = oneShotCommand(", _hermes_runner", "_hermes_runner.run")

// errStopped reports that an instance was stopped: its context ended, or
// the engine was closed, while it ran.
var errStopped = errors.New("the interpreter was stopped")

// instanceOptions are what an instance is started with besides its module
// config.
type instanceOptions struct {
	// cellStop, when not nil, gives a kernel's running cell's stop
	// channel: a sleep in that cell is stopped by it too.
	cellStop func() <-chan struct{}
	// mem is the instance's memory allocator (nil: a fresh one for the
	// compiled interpreter's cap); a kernel passes its own, to arm the
	// grace zone before each cell.
	mem *instanceMemory
	// snapshot: start from the engine's snapshot, when it has one
	// (hermes_run), instead of in full (_initialize, hermes_main). Only
	// for an instance of newSandbox's mounts whose environment
	// snapshotEligible accepts.
	snapshot bool
	// entry, when not nil, replaces both: it is called with the
	// instantiated module.
	entry func(ctx context.Context, mod api.Module) error
	// steps, when not nil, makes an instance that starts from the snapshot
	// a kernel run in steps: its -c command (the kernel's start) leaves
	// the interpreter alive (hermes_keep), and steps then runs its cells
	// (see kernel.go).
	steps func(ctx context.Context, mod api.Module) error
	// resume, with steps, makes the instance a suspended kernel's: the
	// memory of resumeBase (the snapshot it was made against) with the
	// image's chunks written over, its clock going on from the image's,
	// and its cells run at once (no start).
	resume     *Image
	resumeBase *snapshot
	// started, when not nil, is told the snapshot the instance starts
	// from (nil: in full) and its monotonic clock.
	started func(snap *snapshot, clock sys.Nanotime)
}

// start instantiates the interpreter and runs it to the end under ctx,
// which carries the tool channel, in full (no snapshot).
func (s *Engine) start(ctx context.Context, c *compiled, mc wazero.ModuleConfig) error {
	return s.startWith(ctx, c, mc, instanceOptions{})
}

// startWith instantiates the interpreter with opts and runs it to the end
// under ctx, which carries the tool channel. When ctx ends, or the engine
// is closed, the instance is stopped where it is and startWith returns
// errStopped: at its next loop check (see
// pyodide-assets/internal/assetbuild.addLoopChecks: every 16k loop
// iterations, in Python or C code alike, the module calls sched_yield,
// which lands in the Osyield function here), or in its sleep, which is cut
// short and does not return to the guest. A tool call in progress returns
// first (tools watch ctx). (wazero's WithCloseOnContextDone would stop the
// instance too, by calling into Go at every loop iteration, which makes
// the interpreter 2.5-4x slower.)
func (s *Engine) startWith(ctx context.Context, c *compiled, mc wazero.ModuleConfig, opts instanceOptions) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.running.Add(1)
	s.mu.Unlock()
	defer s.running.Done()
	// Closing the engine ends the run's context: host functions waiting
	// on it (a kernel waiting for its next cell, a tool) return too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	// A host function stops the instance by panicking: wazero unwinds the
	// guest and Call returns the error, wrapped.
	mc = mc.WithStartFunctions().
		WithOsyield(func() {
			if ctx.Err() != nil {
				panic(errStopped)
			}
		}).
		WithNanosleep(func(ns int64) {
			var stop <-chan struct{}
			if opts.cellStop != nil {
				stop = opts.cellStop()
			}
			if !sleepCtx(ctx, stop, time.Duration(ns)) {
				panic(errStopped)
			}
		})
	// The linear memory is a range reserved for the whole cap and its grace
	// zone (see memory.go); it is released once the instance has stopped,
	// on every path out of here (deferred before mod.Close, so it runs
	// after it).
	if opts.mem == nil {
		opts.mem = newInstanceMemory(c.limit)
	}
	mem := opts.mem
	ctx = experimental.WithMemoryAllocator(ctx, mem)
	defer mem.done()
	var snap *snapshot
	var clock sys.Nanotime
	sn := s.snap.Load()
	share := !s.opts.noSharedSnapshot
	if opts.resume != nil {
		// The snapshot the image was made against: the engine's, shared,
		// or one from the store, copied.
		snap, clock = opts.resumeBase, clockFrom(opts.resume.Nanotime)
		share = share && snap == sn
	} else if opts.snapshot && opts.entry == nil && sn.fits(c) {
		snap, clock = sn, sn.clock()
	}
	if snap != nil {
		mc = mc.WithNanotime(clock, nanotimeResolution)
		if share {
			snap.sharedOnce.Do(func() { snap.shared = newSharedImage(snap) })
			if snap.shared != nil {
				// The data segments go to the scratch, which restore
				// maps the image over (see datascratch.go).
				mem.setScratch(c.scratchFor())
			}
		}
	}
	if opts.started != nil {
		opts.started(snap, clock)
	}
	mod, err := c.rt.InstantiateModule(ctx, c.mod, mc)
	if err != nil {
		return err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if opts.entry != nil {
		return opts.entry(ctx, mod)
	}
	if opts.resume != nil {
		if err := snap.restore(mod.Memory(), mem, share); err != nil {
			return err
		}
		if err := opts.resume.restore(mod.Memory()); err != nil {
			return err
		}
		return exitZeroIsNil(opts.steps(ctx, mod))
	}
	return exitZeroIsNil(s.runInstance(ctx, mod, mem, snap, opts.steps))
}

// startsFromSnapshot reports whether an instance of box on c starts from
// the engine's snapshot (as startWith decides it).
func (s *Engine) startsFromSnapshot(c *compiled, box *sandbox) bool {
	return box.snapshotOK && s.snap.Load().fits(c)
}

// fits reports whether snap (nil: none) fits c's memory cap.
func (snap *snapshot) fits(c *compiled) bool {
	return snap != nil && uint64(len(snap.image)) <= c.limit
}

// exitZeroIsNil maps the interpreter's exit with status 0 (the entry
// points end in exit(), as a command's _start does for any other status)
// to nil.
func exitZeroIsNil(err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		return nil
	}
	return err
}

// runInstance runs an instantiated interpreter from snap, or in full when
// snap is nil; from snap with steps, as a kernel run in steps
// (instanceOptions.steps).
func (s *Engine) runInstance(ctx context.Context, mod api.Module, mem *instanceMemory, snap *snapshot, steps func(context.Context, api.Module) error) error {
	if snap != nil {
		if err := snap.restore(mod.Memory(), mem, !s.opts.noSharedSnapshot); err != nil {
			return err
		}
		if steps != nil {
			// Returns only when the start succeeded (it exits otherwise).
			if _, err := mod.ExportedFunction("hermes_keep").Call(ctx); err != nil {
				return err
			}
			return steps(ctx, mod)
		}
		_, err := mod.ExportedFunction("hermes_run").Call(ctx)
		return err
	}
	if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
		return err
	}
	_, err := mod.ExportedFunction("hermes_main").Call(ctx)
	return err
}

// sandboxSpec is what one interpreter instance is given.
type sandboxSpec struct {
	// modules are the generated modules to stage (with their bytecode).
	modules []string
	// extra are more files to stage, by path relative to the staging dir.
	extra map[string][]byte
	// restored are the files and dirs of a resumed kernel's private dir
	// (ImageFile), written before the disk budget counts what it holds.
	restored []ImageFile
	// project, when not nil, makes the guest's root the sandboxed
	// project mode's (projectFS); nil: the staging dir.
	project *projectRoot
	// env is the interpreter's environment before the engine's variables.
	env []string
	// serve answers the tool channel's request lines.
	serve func(ctx context.Context, line []byte) []byte
	// diskLimitMB caps what the guest stores in the staging dir, for the
	// instance's whole life (see diskBudget); zero or less: no cap.
	diskLimitMB int
}

// guestEnv is the environment every instance gets after the job's: the
// standard library's home (the zip mounted at stdlibMount) and a home dir.
var guestEnv = []string{"HOME=/", "PYTHONHOME=/usr/local"}

// sandbox is a staged dir, the jails over it (and over the working dir)
// and the file system and environment built from them.
type sandbox struct {
	staging string
	jails   []*jailFS
	fsc     sysfs.FSConfig
	env     []string
	lib     string // guest path of the staged files, ending in "/"
	// ctx is the context to instantiate under: it carries the tool channel.
	ctx context.Context
	// fds follows the descriptors the guest opened (fdtable.go).
	fds *fdTable
	// channel is the tool channel ctx carries.
	channel *hostChannel
	// safePath: the interpreter must not put its cwd first on sys.path.
	safePath bool
	// cwd is the guest's working dir when not the root (the sandboxed
	// project mode's working dir), and hostDir where it is on the host.
	cwd, hostDir string
	// project is the root of the sandboxed project mode, for its refusals.
	project *projectFS
	// missing are the paths a strict-mode guest did not find in its
	// private dir (nil in the sandboxed project mode).
	missing *missingPaths
	// wasmPackages are the engine's package dirs (Options.Packages).
	wasmPackages []string
	// generated are the staged files (the generated modules and their
	// bytecode), by path relative to staging: a suspended kernel's image
	// leaves them out.
	generated map[string]bool

	// snapshotOK: the instance may start from the snapshot (see
	// snapshotEligible).
	snapshotOK bool
	// mounts are the guest paths mounted, in order (instanceMounts).
	mounts []string
	// left finds the files the guest left in the staging dir, when that
	// is its root (nil over a working dir: what it writes there stays).
	left *leftScan
}

// args is the interpreter's command line: python, its options, then rest.
// -S: no site module (nothing to add to sys.path in the sandbox, and it
// saves a fifth of the interpreter's start-up). -u: unbuffered stdout and
// stderr, as project mode runs python: every write the script makes
// reaches the host at once (see guestOutput), so what a script printed
// before a timeout or an interrupt is in the result. Buffered, it stayed
// in the guest's memory and went with the instance.
func (b *sandbox) args(rest ...string) []string {
	args := []string{"python", "-S", "-u"}
	if b.safePath {
		args = append(args, "-P")
	}
	if b.cwd != "" && len(rest) > 1 && rest[0] == "-c" {
		// The program's first step: the working dir becomes the cwd
		// (wasi-libc keeps it; the root is the start). A JSON string is a
		// Python string literal.
		// _hermes_host learns both paths, for the commands subprocess runs
		// through terminal (their host working dir).
		g, _ := json.Marshal(b.cwd)
		h, _ := json.Marshal(b.hostDir)
		prefix := "__import__('os').chdir(" + string(g) + "); __import__('_hermes_host').project_guest = " + string(g) +
			"; __import__('_hermes_host').project_host = " + string(h) + "; "
		rest = append([]string{"-c", prefix + rest[1]}, rest[2:]...)
	}
	return append(args, rest...)
}

// newSandbox stages spec's files in a fresh private dir and mounts it (or
// spec.root with the staged files at libMount) through the jail, with the
// tool channel served under box.ctx.
func (s *Engine) newSandbox(ctx context.Context, c *compiled, spec sandboxSpec) (_ *sandbox, err error) {
	staging, err := os.MkdirTemp(s.opts.TempDir, "hermes-strict-")
	if err != nil {
		return nil, fmt.Errorf("creating the staging dir: %w", err)
	}
	box := &sandbox{staging: staging, lib: "/", wasmPackages: s.opts.Packages}
	box.ctx, box.channel = withChannel(ctx, spec.serve)
	defer func() {
		if err != nil {
			box.close()
		}
	}()
	files := maps.Clone(spec.extra)
	if files == nil {
		files = map[string][]byte{}
	}
	sources := stagedSources()
	pyc := s.bytecode(ctx, c)
	for _, name := range spec.modules {
		files[name] = sources[name]
		for rel, b := range pyc {
			if strings.HasPrefix(rel, "__pycache__/"+strings.TrimSuffix(name, ".py")+".") {
				files[rel] = b
			}
		}
	}
	box.generated = make(map[string]bool, len(files))
	for rel := range files {
		box.generated[rel] = true
	}
	if err := restoreFiles(staging, spec.restored); err != nil {
		return nil, err
	}
	for _, f := range spec.restored {
		if !f.Dir {
			files[f.Path] = nil // known to the left-file scan: not new
		}
	}
	for rel, content := range files {
		if !box.generated[rel] {
			continue
		}
		path := filepath.Join(staging, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("staging %s: %w", rel, err)
		}
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return nil, fmt.Errorf("staging %s: %w", rel, err)
		}
	}
	if spec.project == nil {
		box.left = newLeftScan(staging, slices.Collect(maps.Keys(files)))
	} else if err := os.Mkdir(filepath.Join(staging, "tmp"), 0o700); err != nil && !(errors.Is(err, fs.ErrExist) && len(spec.restored) > 0) {
		// (A resumed kernel's restored files have it already.)
		return nil, fmt.Errorf("making the private tmp: %w", err)
	}
	jail, err := newJailFS(staging)
	if err != nil {
		return nil, fmt.Errorf("opening the staging dir: %w", err)
	}
	box.jails = append(box.jails, jail)
	jail.restoreInos(spec.restored)
	if box.left != nil {
		jail.changed = &box.left.changed
		jail.missing = &missingPaths{}
		box.missing = jail.missing
	}
	if jail.budget, err = newDiskBudget(staging, spec.diskLimitMB); err != nil {
		return nil, err
	}
	box.ctx = withDiskBudget(box.ctx, jail.budget)
	box.fds = &fdTable{}
	box.ctx = withFDTable(box.ctx, box.fds)

	// Every mount's opens count against one limit (see openfiles.go).
	open := newOpenFiles(maxOpenFiles)
	box.ctx = withOpenFiles(box.ctx, open)
	// Every instance mounts instanceMounts, in that order (wazero numbers
	// the preopened descriptors in the order of the WithSysFSMount calls).
	fsc := wazero.NewFSConfig().(sysfs.FSConfig)
	mount := func(fs experimentalsys.FS, guest string) {
		fsc = fsc.WithSysFSMount(fs, guest).(sysfs.FSConfig)
		box.mounts = append(box.mounts, guest)
	}
	c.stdlib.mount(mount, open)
	box.env = append(slices.Clone(spec.env), guestEnv...)
	if spec.project != nil {
		pfs, err := box.projectFS(spec.project, jail.budget)
		if err != nil {
			return nil, err
		}
		box.project = pfs
		// The private tmp's restored files, by the inode numbers the guest
		// knew (it reaches them through the tmp jail, projectFS).
		box.jails[2].restoreInos(underTmp(spec.restored))
		mount(open.limit(pfs), "/")
		mount(open.limit(jail), libMount)
		box.lib = libMount + "/"
		box.cwd = GuestPath(spec.project.dir)
		box.hostDir = spec.project.dir
		// The generated modules come first, then the working dir (as the
		// script's dir comes first for a native python), so a session file
		// named like one of them cannot shadow it, then the packages; -P
		// (see args) keeps the cwd from being put before them.
		path := []string{libMount, box.cwd}
		for _, d := range spec.project.opts.Packages {
			path = append(path, GuestPath(d))
		}
		path = append(path, packagePaths(pfs.wasmPackages)...)
		box.env = append(box.env, "PYTHONPATH="+strings.Join(path, ":"), "TMPDIR=/tmp")
		box.safePath = true
	} else {
		// The staging dir at both: the same mounts as over a session dir;
		// with package dirs, a root that adds them to the staging dir.
		var root experimentalsys.FS = jail
		if pkgs := box.packageMounts(s.opts.Packages); len(pkgs) > 0 {
			root = &projectFS{mounts: append(pkgs, projectMount{guest: ".", fs: jail})}
			box.env = append(box.env, "PYTHONPATH="+strings.Join(packagePaths(pkgs), ":"))
		}
		mount(open.limit(root), "/")
		mount(open.limit(jail), libMount)
	}
	box.fsc = fsc
	box.snapshotOK = snapshotEligible(box.env)
	return box, nil
}

// underTmp are the files of a resumed kernel's private dir under tmp/,
// relative to it.
func underTmp(files []ImageFile) []ImageFile {
	var out []ImageFile
	for _, f := range files {
		if rel, ok := strings.CutPrefix(f.Path, "tmp/"); ok {
			f.Path = rel
			out = append(out, f)
		}
	}
	return out
}

// projectFS opens the jails of the sandboxed project mode's root (the
// working dir, the private tmp in the staging dir, each package dir that
// exists) and builds it. The working dir and tmp share budget with the
// staging dir: what the run adds to them counts against disk_limit_mb.
func (b *sandbox) projectFS(root *projectRoot, budget *diskBudget) (*projectFS, error) {
	dir, err := filepath.Abs(root.dir)
	if err != nil {
		return nil, err
	}
	wd, err := newJailFS(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the working dir: %w", err)
	}
	b.jails = append(b.jails, wd)
	wd.budget = budget
	tmp, err := newJailFS(filepath.Join(b.staging, "tmp"))
	if err != nil {
		return nil, fmt.Errorf("opening the private tmp: %w", err)
	}
	b.jails = append(b.jails, tmp)
	tmp.budget = budget
	opts := root.opts
	opts.Packages = nil
	var pkgs []*jailFS
	for _, d := range root.opts.Packages {
		j, err := newJailFS(d)
		if err != nil {
			continue // gone since it was found: nothing to import from it
		}
		b.jails = append(b.jails, j)
		opts.Packages = append(opts.Packages, d)
		pkgs = append(pkgs, j)
	}
	root.opts.Packages = opts.Packages
	p, err := newProjectFS(dir, wd, tmp, pkgs, opts)
	if err != nil {
		return nil, err
	}
	p.wasmPackages = b.packageMounts(b.wasmPackages)
	p.mounts = append(p.wasmPackages, p.mounts...)
	slices.SortStableFunc(p.mounts, func(a, b projectMount) int { return len(b.guest) - len(a.guest) })
	return p, nil
}

// packagesMount is where the guest sees code_execution.wasm_packages: the
// N-th dir at packagesMount/N.
const packagesMount = "/.hermes-packages"

// packageMounts opens the package dirs dirs read-only (a dir that cannot
// be opened is left out), each at packagesMount/N.
func (b *sandbox) packageMounts(dirs []string) []projectMount {
	var out []projectMount
	for i, d := range dirs {
		j, err := newJailFS(d)
		if err != nil {
			continue
		}
		b.jails = append(b.jails, j)
		out = append(out, projectMount{guest: strings.TrimPrefix(packagesMount, "/") + "/" + strconv.Itoa(i), host: d, fs: &sysfs.ReadFS{FS: j}})
	}
	return out
}

// packagePaths are the guest paths of mounts, for sys.path.
func packagePaths(mounts []projectMount) []string {
	var out []string
	for _, m := range mounts {
		out = append(out, "/"+m.guest)
	}
	return out
}

// refusals are the file-safety refusals of the sandboxed project mode.
func (b *sandbox) refusals() ([]string, int) {
	if b.project == nil {
		return nil, 0
	}
	return b.project.takeRefusals()
}

// moduleConfig is the instance's configuration without its arguments: the
// sandbox's file system and environment, real clocks and the output
// writers (start adds the sleep).
func (b *sandbox) moduleConfig(stdout, stderr io.Writer) wazero.ModuleConfig {
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStdin(strings.NewReader("")).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(b.fsc.(wazero.FSConfig)).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	return withEnv(mc, b.env)
}

// guestOutput is an instance's stdout or stderr on the host side: what the
// guest writes goes to the current writer, or nowhere when there is none.
//
// The guest runs unbuffered (see sandbox.args), so a print is one or two
// small writes; guestOutput gathers them into chunks of up to outputChunk
// bytes before passing them on, as a pipe does for a native python, so
// that the capture behind it (which writes to its spill file past the
// inline limit) is not called a hundred thousand times by a print loop.
// The chunk is the only buffering, and it is host memory: flush, set and
// discard hand it over, and the engine calls them whenever an instance or
// a cell ends, whatever ended it; when the writer was set with a positive
// every (someone follows the output live: engine.Job.FlushAfter), what is
// held is also handed over at most every after it was written. It is safe
// for concurrent use (a kernel switches writers between cells while its
// instance runs).
type guestOutput struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	every time.Duration
	timer *time.Timer // armed while buf holds output and every is set
}

// outputChunk is the most guestOutput holds before passing it on.
const outputChunk = 32 << 10

// set hands what is held to the current writer, then makes w current,
// with what it writes held at most every when every is positive.
func (g *guestOutput) set(w io.Writer, every time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flushLocked()
	g.w, g.every = w, every
}

// discard hands what is held to the current writer and drops later
// writes until the next set.
func (g *guestOutput) discard() { g.set(nil, 0) }

// flush hands what is held to the current writer.
func (g *guestOutput) flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flushLocked()
}

func (g *guestOutput) flushLocked() {
	if len(g.buf) > 0 && g.w != nil {
		g.w.Write(g.buf) // the capture never fails; nothing to retry
	}
	g.buf = g.buf[:0]
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}

func (g *guestOutput) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.w == nil:
	case len(g.buf)+len(p) <= outputChunk:
		if g.buf == nil {
			g.buf = make([]byte, 0, outputChunk)
		}
		g.buf = append(g.buf, p...)
	default:
		g.flushLocked()
		if len(p) >= outputChunk {
			g.w.Write(p)
		} else {
			g.buf = append(g.buf, p...)
		}
	}
	if len(g.buf) > 0 && g.every > 0 && g.timer == nil {
		// A timer that fires after a flush or a set finds nothing held,
		// or the next writer's output, which it hands over early.
		g.timer = time.AfterFunc(g.every, g.flush)
	}
	return len(p), nil
}

// withEnv adds env (KEY=value entries; a later one wins) to mc.
func withEnv(mc wazero.ModuleConfig, env []string) wazero.ModuleConfig {
	for _, kv := range engine.MergeEnv(nil, env) {
		k, v, _ := strings.Cut(kv, "=")
		mc = mc.WithEnv(k, v)
	}
	return mc
}

// close releases the jails and removes the staging dir.
func (b *sandbox) close() {
	for _, j := range b.jails {
		j.close()
	}
	b.jails = nil
	os.RemoveAll(b.staging)
}

// outcome maps the instantiation error to how the interpreter ended.
func outcome(err error) engine.Outcome {
	if err == nil {
		return engine.Outcome{}
	}
	if errors.Is(err, errStopped) {
		return engine.Outcome{ExitCode: -1, Crash: "the interpreter was stopped"}
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return engine.Outcome{ExitCode: int(int32(exit.ExitCode()))}
	}
	msg := err.Error()
	hint := ""
	if strings.Contains(msg, "out of bounds memory") || strings.Contains(msg, "unreachable") {
		hint = " (this usually means the script ran out of its memory limit, code_execution.memory_limit_mb)"
	}
	return engine.Outcome{ExitCode: -1, Crash: "The interpreter crashed: " + msg + hint}
}

// sleepCtx is the guest's sleep: real time, cut short when ctx ends or
// stop is closed. It reports whether the whole time passed.
func sleepCtx(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-stop:
	}
	return false
}

// Close releases every compiled interpreter. Runs in progress are stopped
// and end first with an error (Close waits up to closeWait for them); Close
// is idempotent.
func (s *Engine) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.stopRunning()
	s.mu.Unlock()
	// A compile in progress uses the cache's engine: closing the cache
	// under it crashes wazero. Compiling ends on its own (seconds at most).
	s.preparing.Wait()
	stopped := make(chan struct{})
	go func() { s.running.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(closeWait):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, c := range s.compiled {
		if c.rt != nil {
			errs = append(errs, c.rt.Close(ctx))
		}
		c.closeScratch()
	}
	if s.cache != nil {
		errs = append(errs, s.cache.Close(ctx))
	}
	return errors.Join(errs...)
}

// closeWait bounds how long Close waits for running instances to stop (a
// tool call in progress finishes first).
const closeWait = 10 * time.Second
