package executor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/hostfuncs"
	"github.com/hermes-agent/hermes-wasm-exec/internal/approval"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// Options configures an [Executor]. Every field is optional: the zero
// value runs with config.Default() in $HERMES_HOME, reading no file.
type Options struct {
	// Config is the configuration in effect; nil means config.Default().
	// Build it with config.Default() and change fields, or load a file
	// with config.Load. The executor keeps a copy, in which fields whose
	// zero value is out of range (Mode, Timeout, KernelIdleTimeout,
	// MaxSessionKernels, the memory, process and disk limits, the enums,
	// web.extract's limits, the approvals settings, and api_key_env of a
	// keyed provider) get their defaults (config.WithDefaults);
	// MaxToolCalls, WarmPool and web.extract.cache_max_mb keep 0, which
	// means none.
	Config *config.Config
	// HermesHome is the state dir (caches, spill files); empty means
	// config.HermesHome().
	HermesHome string
	// Environ is the parent environment the script's is scrubbed from; nil
	// means os.Environ().
	Environ []string
	// Logger receives the executor's structured log events (see the
	// package documentation for the list), and those of the engines below
	// it; nil means nothing is logged.
	Logger *slog.Logger
	// Progress receives the one-line notice printed while the interpreter
	// is compiled for the first time; nil means os.Stderr.
	Progress io.Writer
	// RPCTransport is project mode's tool channel: "unix" or "tcp"; empty
	// means the platform's (a Unix socket, loopback TCP on Windows).
	RPCTransport string
	// Approver answers approval requests of calls that set none; nil
	// means nobody answers, so in approvals.mode "manual" whatever needs
	// approval is blocked.
	Approver Approver
	// Tools replaces built-in tools with the embedder's own handlers, by
	// tool name (one of the seven; see hostfuncs.Names). A replaced tool
	// keeps the same arguments and result shape, and goes through the same
	// whitelist, budget and log.
	Tools map[string]ToolHandler
	// SkillEnv lists environment variables that skills declare in
	// required_environment_variables; they pass through the env layer as
	// if listed in terminal.env_passthrough. Host-managed credentials are
	// refused with a warning event. See [Executor.RegisterSkillEnv], which
	// adds more later.
	SkillEnv []string
	// StatePaths lists more files and dirs of the embedding program's own
	// state (the CLI gives its --token-file) that, with
	// code_execution.landlock on Linux, the processes a run starts must
	// not write, beside the executor's own: its caches, the configuration
	// file, the Hermes homes' credential and token stores and other
	// profiles (SECURITY.md).
	StatePaths []string
}

// ToolHandler runs one tool call: args is the JSON object of the
// script's keyword arguments (every parameter present, null for None), and
// the result is the tool's result object, which the script receives as a
// dict. Tool failures are results with an "error" key.
type ToolHandler func(ctx context.Context, args json.RawMessage) map[string]any

// Request is one execution.
type Request struct {
	// Code is the script's Python source.
	Code string
	// Mode is "strict" or "project"; empty means the configured mode.
	Mode string
	// Sandbox is "none" or "wasm" (config.SandboxWasm: project mode in the
	// embedded interpreter over the working dir); empty means the
	// configured code_execution.sandbox. It is ignored in strict mode.
	// An unknown value gives wasm with a warning event.
	Sandbox string
	// Workdir is the session working dir the tools act on; empty means the
	// current directory.
	Workdir string
	// ScriptName is the name a one-shot run's tracebacks and warnings give
	// the script (its code object's file name), such as the file `run` was
	// given; line numbers are the script's own. Empty: the path the
	// interpreter ran it from. A session call ignores it (cells are named
	// by the kernel).
	ScriptName string
	// Timeout overrides code_execution.timeout when positive.
	Timeout time.Duration
	// MaxToolCalls overrides code_execution.max_tool_calls when non-nil.
	MaxToolCalls *int
	// Tools is the enabled tools, as Hermes's enabled_tools: the list is
	// intersected with the seven script-callable tools (hostfuncs.Names),
	// and the names of other tools (vision_analyze, delegate_task,
	// browser_navigate, ...), which Hermes's own tool lists contain, are
	// dropped silently. nil means all seven; a list with none of the seven
	// enables none. Only enabled tools get a function in hermes_tools, so
	// `from hermes_tools import terminal` raises ImportError when terminal
	// is not enabled; a call to one anyway is refused. The tool set is part
	// of a session kernel's identity: a call with another tool set runs in
	// another kernel of the session.
	Tools []string

	// Session names a persistent session kernel (docs/behaviour.md §7): calls with the
	// same session, mode, interpreter, working dir and tool set run in the
	// same live interpreter, so globals and imports persist. Empty means a
	// one-shot run in a fresh interpreter.
	Session string
	// Reset discards the session's kernel and starts a fresh one.
	Reset bool
	// ParentSession marks Session as a subagent of ParentSession: its
	// kernel is its own, exempt from max_session_kernels, and disposed
	// with CloseSession of either.
	ParentSession string
	// InheritParent, on the first call of a subagent session
	// (ParentSession set), starts its kernel from a copy of the parent's
	// strict kernels, as ForkSession does: the subagent begins with its
	// parent's variables, imports and files rather than an empty kernel.
	// The parent must be between calls (its kernel cannot be copied while
	// a call runs in it, such as the call that started the subagent); when
	// it is not, or it has no kernel to copy, the subagent starts empty and
	// its result's kernel note says why.
	InheritParent bool
	// Kind is config.KindCLI (the default), config.KindGateway or config.KindAutomation; it
	// decides what needs approval (docs/behaviour.md §8).
	Kind string
	// Approver answers this call's approval requests; nil means
	// Options.Approver.
	Approver Approver
	// ToolHandlers replaces tools for this call only (over Options.Tools),
	// for instance to delegate them to the agent host that made the call.
	// When not nil it replaces the delegation of Client too.
	ToolHandlers map[string]ToolHandler
	// Client names the client (a connection) that made the call: a session
	// call gets the delegation that client registered on the session
	// ([Executor.OpenSession]). Empty is a client of its own.
	Client string
	// Tag is the caller's name for the call (serve: its request id), which
	// the calls of delegated tools carry (DelegatedCall.Tag).
	Tag any
	// SkillEnv lists environment variables a skill declares
	// (required_environment_variables, see [SkillEnvFromMarkdown]) that
	// pass through for this call like terminal.env_passthrough. With
	// Session set they are registered for the session first, as by
	// [Executor.RegisterSessionSkillEnv], so its later calls keep them; a
	// running kernel's scripts see them after a reset. Host-managed
	// credentials are refused with a warning event.
	SkillEnv []string
	// Output, when not nil, receives what the script prints while it
	// runs (live output), in every mode, one-shot or in a session kernel:
	// stream is "stdout" or "stderr", chunk the bytes (the function's to
	// keep). It is called in order per stream, from one goroutine at a
	// time, and never after Execute (or Call.Wait) returns; output is
	// coalesced to at most one call per 100 ms per stream, each of at
	// most 64 KiB (what a script prints past that within 100 ms is left
	// out of the live output, with a line saying how much; the result
	// has it). A chunk is whole UTF-8 when the output is, and ends with a
	// whole line when it has a newline. The function
	// should return quickly: the last call delays the result, and a
	// blocked one holds it. The result is the same with or without
	// Output: everything printed is in it, a timeout or an interrupt
	// included (docs/behaviour.md §5).
	Output func(stream string, chunk []byte)
}

// Executor runs scripts. It is safe for concurrent use. Close it to end
// every kernel and child process and free the compiled interpreter.
type Executor struct {
	tools     map[string]ToolHandler
	approvals *approval.Policy
	approver  Approver
	sessions  *sessionTable // every session's state (session.go)
	cfg       config.Config
	home      string
	cacheDir  string // wasm compilation (and .pyc) cache, see config.CacheDir
	environ   []string
	clientEnv []string // every remote backend client's environment (newClientEnv)
	getenv    func(string) string
	log       *slog.Logger // Options.Logger, or one that discards
	strict    *strict.Engine
	// images holds suspended and copied session kernels (durable.go): the
	// session store (code_execution.session_store; durable is then true:
	// kernels the executor ends are suspended there), or the process's
	// memory (only ForkSession's copies).
	images   sessionstore.Store
	durable  bool
	leases   *leases // the sessions this executor runs (lease.go); nil without a store
	storeErr error   // why the session store is off though set
	// everyCall: code_execution.session_checkpoint is every_call.
	everyCall bool
	// storedBases are the snapshots this process put in the store.
	storedBases struct {
		sync.Mutex
		sums map[string]bool
	}
	transport string
	toolEnv   toolEnvMemo
	landlock  *landlock.Policy // what local processes of a run may write (nil: off); see landlockPolicy

	mu          sync.Mutex
	skillEnv    []string        // registered skill variables, in registration order
	skillGen    int             // bumped whenever skillEnv grows
	refusedSeen map[string]bool // passthrough names already warned about (once each)

	closed   bool
	calls    map[uint64]context.CancelCauseFunc // running Execute calls
	nextCall uint64
	running  sync.WaitGroup // one per running Execute call

	closeOnce sync.Once
}

// New returns an executor for opts.
func New(opts Options) *Executor {
	cfg := config.Default()
	if opts.Config != nil {
		cfg = config.WithDefaults(*opts.Config)
	}
	home := opts.HermesHome
	if home == "" {
		home = config.HermesHome()
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if goruntime.GOOS == "windows" {
				k = strings.ToUpper(k)
			}
			vars[k] = v
		}
	}
	getenv := func(k string) string {
		if goruntime.GOOS == "windows" {
			k = strings.ToUpper(k)
		}
		return vars[k]
	}
	cacheDir := config.CacheDir(home)
	e := &Executor{
		cfg:      cfg,
		home:     home,
		cacheDir: cacheDir,
		environ:  environ,
		getenv:   getenv,
		log:      cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		strict: strict.New(strict.Options{CacheDir: cacheDir, Progress: opts.Progress, Packages: cfg.CodeExecution.WasmPackages,
			SmallImages: cfg.CodeExecution.SessionStoreCompression == config.CompressionSmall}),
		transport: opts.RPCTransport,
		approvals: approval.New(cfg.Approvals.Mode, time.Duration(cfg.Approvals.Timeout)*time.Second).WithCron(cfg.Approvals.CronMode),
		approver:  opts.Approver,
		tools:     maps.Clone(opts.Tools),
		sessions:  newSessionTable(cfg.CodeExecution.MaxSessionKernels),
		calls:     map[uint64]context.CancelCauseFunc{},
	}
	e.images = &sessionstore.Memory{}
	if spec := cfg.CodeExecution.SessionStore; spec != "" {
		if store, err := e.openStore(spec); err != nil {
			e.storeErr = err
			e.log.Log(context.Background(), slog.LevelError, "session store off", "error", err.Error())
		} else {
			e.images, e.durable = store, true
			e.everyCall = cfg.CodeExecution.SessionCheckpoint == config.CheckpointEveryCall
			e.sessions.end = func(en *kernelEntry, why string) { e.endKernel(en, why) }
			e.sessions.suspends = kernelKey.suspendable
			e.leases = newLeases(store, time.Duration(cfg.CodeExecution.SessionLease)*time.Second,
				time.Duration(cfg.CodeExecution.SessionTTL)*time.Second, e.log, e.sessions.hasLive, e.handOff, e.fence)
		}
	}
	// A run's processes never write the session store: it holds every
	// session's kernels.
	e.landlock = landlockPolicy(cfg, home, cacheDir, append(slices.Clone(opts.StatePaths), nonEmpty(storeDir(cfg))...))
	e.clientEnv = e.newClientEnv()
	if len(opts.SkillEnv) > 0 {
		e.RegisterSkillEnv(opts.SkillEnv...)
	}
	return e
}

// landlockPolicy is what the local processes a run starts may write with
// cfg (nil: code_execution.landlock is off): nothing of the executor's
// state (hostfuncs.StatePaths for home and cacheDir, the configuration
// file, extra) nor the cgroup file systems, and under
// confine_tools_to_workdir only the working dir and the temp dir.
func landlockPolicy(cfg config.Config, home, cacheDir string, extra []string) *landlock.Policy {
	if cfg.CodeExecution.Landlock == config.LandlockOff {
		return nil
	}
	protect := hostfuncs.StatePaths(home, cacheDir)
	// The cgroup file systems too: a process that could write there could
	// move itself out of its tree's cgroup (surviving the kill at the
	// run's end and the executor's death) or lift its limits.
	protect = append(protect, cgroup.MountPoints()...)
	// And the package dirs every strict and sandboxed run imports.
	for _, p := range slices.Concat([]string{cfg.Source}, cfg.CodeExecution.WasmPackages, extra) {
		if abs, err := filepath.Abs(p); err == nil && p != "" {
			protect = append(protect, abs)
		}
	}
	return &landlock.Policy{Protect: protect, Confine: cfg.CodeExecution.ConfineToolsToWorkdir}
}

// Warm prepares the strict interpreter (compiling it or loading it from
// the cache) so the next strict run starts fast.
func (e *Executor) Warm(ctx context.Context) error {
	return e.asClosed(e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB))
}

// Execute runs one script and returns its result. With req.Session set it
// runs in that session's kernel (created on first use); otherwise in a
// fresh interpreter. The error is non-nil when the script could not run at
// all (a missing or broken interpreter, a bad working dir, a closed
// executor: [ErrClosed]); the result then says so as well, so it can be
// handed to an agent either way.
//
// Cancelling ctx interrupts the call: it ends with status "interrupted"
// and its output with `[execution interrupted — <reason>]`. The reason is
// that of a *InterruptError cause (context.WithCancelCause), or
// "user sent a new message" for any other cancellation. A session call
// that is interrupted kills its kernel. A deadline on ctx works the same
// way; for a timeout reported as status "timeout", set Request.Timeout.
func (e *Executor) Execute(ctx context.Context, req Request) (Result, error) {
	return e.run(ctx, req, nil)
}

// Call is a call started by [Executor.Start].
type Call struct {
	done chan struct{}
	res  Result
	err  error
}

// Wait waits for the call to end and returns what Execute would have.
func (c *Call) Wait() (Result, error) {
	<-c.done
	return c.res, c.err
}

// Start runs req as Execute does, without waiting for it. A session call
// takes its place in the session's queue before Start returns, so a front
// end that reads requests off a wire and starts each as it arrives keeps
// their order: calls of one session run one at a time in the order Start
// (or Execute) was called, each from before its approval to its result.
func (e *Executor) Start(ctx context.Context, req Request) *Call {
	c := &Call{done: make(chan struct{})}
	var a *arrival
	if req.Session != "" {
		a, _ = e.sessions.arrive(req) // nil when closed: run says so
	}
	go func() {
		defer close(c.done)
		c.res, c.err = e.run(ctx, req, a)
	}()
	return c
}

// run is Execute with, for a session call from Start, how it arrived (nil:
// it arrives now).
func (e *Executor) run(ctx context.Context, req Request, a *arrival) (Result, error) {
	start := time.Now()
	m := e.requestMode(req)
	ctx, done, ok := e.track(ctx)
	if !ok {
		a.withdraw()
		return failed(m.mode, ErrClosed), ErrClosed
	}
	res, err := e.execute(ctx, req, m, a)
	err = e.asClosed(err)
	// Logged before the call counts as ended: once Close has returned no
	// call logs any more, so an embedder may close its log sink then (on
	// Windows an open log file cannot be removed).
	e.logDone(req, res, err, time.Since(start))
	done()
	return res, err
}

// requestMode is a request's mode and session kind, normalised once when
// the call starts.
type requestMode struct {
	asked string // Request.Mode, else code_execution.mode
	mode  string // the mode the call runs in: strict when asked is unknown
	known bool   // whether asked is a mode (prepare warns when not)
	kind  string // Request.Kind's kind (cli for "")
	// badKind is the error of an unknown Request.Kind ("" when known).
	badKind string
}

// requestMode normalises req's mode and kind.
func (e *Executor) requestMode(req Request) requestMode {
	asked := cmp.Or(req.Mode, e.cfg.CodeExecution.Mode)
	mode, known := config.NormalizeMode(asked)
	m := requestMode{asked: asked, mode: mode, known: known}
	var ok bool
	if m.kind, ok = config.NormalizeKind(req.Kind); !ok {
		m.badKind = config.UnknownKind("Request.Kind", req.Kind)
	}
	return m
}

// execute runs req in mode m: its empty-code error, or its session step
// (session.go), which runs a call without a session too.
func (e *Executor) execute(ctx context.Context, req Request, m requestMode, a *arrival) (Result, error) {
	defer a.withdraw() // returned before the turn was taken
	if res, err, ok := checkRequest(req, m); !ok {
		return res, err
	}
	return e.sessionExecute(ctx, req, m, a)
}

// checkRequest answers a request whose code is empty, as Hermes does, or
// whose kind is unknown, before anything starts; ok is false then.
func checkRequest(req Request, m requestMode) (res Result, err error, ok bool) {
	msg := m.badKind
	if strings.TrimSpace(req.Code) == "" {
		msg = NoCodeMessage
	}
	if msg == "" {
		return res, nil, true
	}
	if msg != NoCodeMessage {
		err = errors.New(msg)
	}
	return Result{Status: config.StatusError, Output: msg, Error: msg, Mode: m.mode, ToolCalls: []ToolCall{}}, err, false
}

// track registers a call so that Close can interrupt it and wait for it.
// It returns the call's context and the function that ends the call; ok
// is false after Close.
func (e *Executor) track(ctx context.Context) (_ context.Context, done func(), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ctx, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	id := e.nextCall
	e.nextCall++
	e.calls[id] = cancel
	e.running.Add(1)
	return ctx, func() {
		e.mu.Lock()
		delete(e.calls, id)
		e.mu.Unlock()
		cancel(nil)
		e.running.Done()
	}, true
}

// logDone logs a finished call and, at debug level, its tool calls.
func (e *Executor) logDone(req Request, res Result, err error, took time.Duration) {
	session := req.Session
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		for _, tc := range res.ToolCalls {
			e.log.Log(context.Background(), slog.LevelDebug, "tool call",
				"session", session, "tool", tc.Tool, "duration_ms", tc.DurationMS, "ok", tc.OK)
		}
	}
	if !e.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	args := []any{"session", session, "mode", res.Mode, "status", res.Status,
		"duration", took, "tool_calls", res.ToolCallsMade}
	if res.Blocked {
		args = append(args, "blocked", true)
	}
	if err != nil {
		args = append(args, "error", err.Error())
	}
	e.log.Log(context.Background(), slog.LevelInfo, "execute done", args...)
}

// Close ends the executor: it interrupts every running call (reason "the
// executor is shutting down"), ends every session kernel, warm-pool
// interpreter and child process, waits until every running call has
// returned, and frees the compiled interpreter. Calls made afterwards
// return [ErrClosed]. The wait ends early when ctx is done (a tool handler
// that ignores its context can hold a call open), and Close then returns
// ctx's error. Close is idempotent: later calls return nil at once.
func (e *Executor) Close(ctx context.Context) error {
	var err error
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		cancels := slices.Collect(maps.Values(e.calls))
		e.mu.Unlock()
		for _, cancel := range cancels {
			cancel(&InterruptError{Reason: shutdownReason})
		}
		e.sessions.closeAll()
		if e.leases != nil {
			e.leases.close()
		}
		waited := make(chan struct{})
		go func() {
			e.running.Wait()
			close(waited)
		}()
		var werr error
		select {
		case <-waited:
		case <-ctx.Done():
			werr = fmt.Errorf("closing the executor: calls still running: %w", context.Cause(ctx))
		}
		err = errors.Join(werr, e.strict.Close(ctx))
	})
	return err
}

// shutdownReason is the interrupt reason of calls running at Close.
const shutdownReason = "the executor is shutting down"

// RegisterSkillEnv adds environment variables that a skill declares in
// required_environment_variables: they pass through the env layer (to
// scripts and terminal commands, in both modes) exactly like the names in
// terminal.env_passthrough. Names of provider credentials the host manages
// ([config.ManagedCredentials] and web.search.api_key_env) and invalid
// names (empty, or containing "=" or NUL) are not added: they are returned
// in refused and logged as a warning event.
//
// Registration applies to calls, and to kernels, started afterwards: a
// session kernel's environment is frozen when it starts, so a running
// kernel sees a newly registered variable only after a reset. It is safe
// for concurrent use. To register names for one session only, see
// [Executor.RegisterSessionSkillEnv]; [ParseSkillFile] reads a skill's
// names from its SKILL.md.
func (e *Executor) RegisterSkillEnv(names ...string) (refused []string) {
	ok, refused := e.screenSkillNames("", names)
	var added []string
	e.mu.Lock()
	for _, n := range ok {
		if !slices.Contains(e.skillEnv, n) {
			added = append(added, n)
		}
	}
	if len(added) > 0 {
		e.skillEnv = append(slices.Clone(e.skillEnv), added...)
		e.skillGen++
		e.refreshPool()
	}
	e.mu.Unlock()
	if len(added) > 0 {
		e.log.Log(context.Background(), slog.LevelInfo, "skill environment variables registered", "names", added)
	}
	return refused
}
