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
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/hostfuncs"
	"github.com/hermes-agent/hermes-wasm-exec/internal/approval"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cmdcheck"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/internal/nativeengine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
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
	log       eventLog
	strict    *strict.Engine
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
		cfg:       cfg,
		home:      home,
		cacheDir:  cacheDir,
		environ:   environ,
		getenv:    getenv,
		log:       eventLog{logger: opts.Logger},
		strict:    strict.New(strict.Options{CacheDir: cacheDir, Progress: opts.Progress, Packages: cfg.CodeExecution.WasmPackages}),
		transport: opts.RPCTransport,
		approvals: approval.New(cfg.Approvals.Mode, time.Duration(cfg.Approvals.Timeout)*time.Second).WithCron(cfg.Approvals.CronMode),
		approver:  opts.Approver,
		tools:     maps.Clone(opts.Tools),
		sessions:  newSessionTable(cfg.CodeExecution.MaxSessionKernels),
		calls:     map[uint64]context.CancelCauseFunc{},
	}
	e.landlock = landlockPolicy(cfg, home, cacheDir, opts.StatePaths)
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
	ctx, done, ok := e.track(ctx)
	if !ok {
		a.withdraw()
		mode, _ := config.NormalizeMode(cmp.Or(req.Mode, e.cfg.CodeExecution.Mode))
		return failed(mode, ErrClosed), ErrClosed
	}
	res, err := e.execute(ctx, req, a)
	err = e.asClosed(err)
	// Logged before the call counts as ended: once Close has returned no
	// call logs any more, so an embedder may close its log sink then (on
	// Windows an open log file cannot be removed).
	e.logDone(req, res, err, time.Since(start))
	done()
	return res, err
}

// execute runs req: a session call in its session (session.go), any
// other in a fresh interpreter.
func (e *Executor) execute(ctx context.Context, req Request, a *arrival) (Result, error) {
	defer a.withdraw()                    // returned before the turn was taken
	if res, ok := e.checkCode(req); !ok { // args.go: Hermes's empty-code error
		return res, nil
	}
	if req.Session != "" {
		if a == nil {
			var err error
			if a, err = e.sessions.arrive(req); err != nil {
				mode, _ := config.NormalizeMode(cmp.Or(req.Mode, e.cfg.CodeExecution.Mode))
				return failed(mode, err), err
			}
		}
		return e.sessionExecute(ctx, req, a)
	}
	c, res, err := e.prepare(ctx, req, nil)
	if c == nil {
		return res, err
	}
	c.grants = e.sessions.unnamedGrants()
	if blocked := e.approvals.Script(ctx, policyApprover(c.approver), c.grants, c.kind, req.Code); blocked != "" {
		return blockedResult(c.mode, blocked), nil
	}
	res, err = e.oneShot(ctx, c, req.Code)
	return e.finish(c, res, err)
}

// oneShot runs code for c in a fresh interpreter: a call without a
// session, or a session call that gets no kernel (standalone).
func (e *Executor) oneShot(ctx context.Context, c *call, code string) (Result, error) {
	// Choose the engine, and load (or compile) a wasm interpreter, before
	// the script's clock starts: the timeout limits the script, not a
	// first compile.
	var eng engine.Engine = e.strict
	if c.mode == config.ModeProject {
		if c.usesWasm() {
			eng = e.strict.Project(e.projectOptions(ctx, c))
		} else {
			eng = e.projectEngine(c)
		}
	}
	if c.usesWasm() {
		if err := e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB); err != nil {
			return failed(c.mode, err), err
		}
	}
	r := e.request(c, code)
	if c.session != "" { // request leaves a session call's environment to its kernel
		r.Env = engine.ChildEnv(e.environ, c.envOpts, c.inject, c.enabled)
	}
	res, err := engine.Execute(ctx, eng, r)
	return fromEngine(res), err
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
	if e.log.enabled(slog.LevelDebug) {
		for _, tc := range res.ToolCalls {
			e.log.event(slog.LevelDebug, "tool call",
				"session", session, "tool", tc.Tool, "duration_ms", tc.DurationMS, "ok", tc.OK)
		}
	}
	if !e.log.enabled(slog.LevelInfo) {
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
	e.log.event(slog.LevelInfo, "execute done", args...)
}

// call is one execution, prepared: everything both paths need.
type call struct {
	mode     string
	sandbox  bool // project mode in the embedded interpreter (config.SandboxWasm)
	workdir  string
	python   native.Choice // project mode's interpreter
	envOpts  engine.EnvOptions
	envGen   int // the skill-env generation envOpts was built from
	inject   []string
	tools    *hostfuncs.Tools
	timeout  time.Duration
	maxCalls int
	spillDir string
	kind     string
	approver Approver
	grants   *approval.SessionGrants // the session's approvals
	session  string
	enabled  []string // the tool set: engine.ToolSet of Request.Tools
	note     string   // a warning for the result (skipped or missing python)
	handlers map[string]ToolHandler
	// backend is the remote backend the tools act in, and where a
	// project-mode script runs; nil for this host.
	backend backend.Backend
}

// shell is the dialect of the shell c's terminal() commands run with: a
// remote backend's POSIX sh, or this host's (cmd.exe on Windows without
// Git Bash), so that the approval check reads them as that shell does.
func (c *call) shell() cmdcheck.Dialect {
	if c.backend != nil {
		return cmdcheck.Sh
	}
	if backend.LocalRunsCmd() {
		return cmdcheck.Cmd
	}
	return cmdcheck.Sh
}

// usesWasm reports whether the call runs in the embedded interpreter.
func (c *call) usesWasm() bool {
	return c.mode == config.ModeStrict || c.sandbox || c.backend == nil && c.python.Path == ""
}

// projectOptions are the sandboxed project mode's options for c: the
// file tools' rules, and the site dirs of the python project mode would
// run (none when there is none).
func (e *Executor) projectOptions(ctx context.Context, c *call) strict.ProjectOptions {
	opts := strict.ProjectOptions{Guard: c.tools, Packages: c.python.Sites}
	if c.python.Path != "" {
		opts.Packages = native.SiteDirs(ctx, c.python.Path, c.workdir, filepath.Join(e.cacheDir, native.ProbeCacheName))
	}
	return opts
}

// projectEngine is the engine of a project-mode call that does not use
// the embedded interpreter.
func (e *Executor) projectEngine(c *call) *nativeengine.Engine {
	return &nativeengine.Engine{Python: c.python.Path, Transport: e.transport, Backend: c.backend, Landlock: e.landlock}
}

// prepare validates req and resolves everything a call needs; delegate
// are the tools its session's client runs itself. When it returns a nil
// call, the result and error are the answer.
func (e *Executor) prepare(ctx context.Context, req Request, delegate map[string]ToolHandler) (*call, Result, error) {
	modeIn := req.Mode
	if modeIn == "" {
		modeIn = e.cfg.CodeExecution.Mode
	}
	mode, ok := config.NormalizeMode(modeIn)
	if !ok {
		e.log.event(slog.LevelWarn, "unknown mode, falling back to strict", "mode", modeIn)
	}
	be, err := e.remoteBackend(ctx, req.Session)
	if err != nil {
		err = fmt.Errorf("terminal.backend %s: %w", e.cfg.Terminal.Backend, err)
		return nil, failed(mode, err), err
	}
	var wd string
	if be != nil {
		// The tools act in the backend, and a project-mode script runs
		// there: the working dir is the backend's (terminal.cwd).
		wd = be.Cwd()
	} else if wd, err = ResolveWorkdir(req.Workdir); err != nil {
		err = fmt.Errorf("working dir: %w", err)
		return nil, failed(mode, err), err
	}
	for _, m := range []map[string]ToolHandler{e.tools, req.ToolHandlers} {
		for name := range m {
			if !slices.Contains(hostfuncs.Names, name) {
				err := fmt.Errorf("tool handler for %q: scripts can call only the seven tools %v", name, hostfuncs.Names)
				return nil, failed(mode, err), err
			}
		}
	}
	sandboxIn := cmp.Or(req.Sandbox, e.cfg.CodeExecution.Sandbox)
	sandbox, ok := config.NormalizeSandbox(sandboxIn)
	if !ok {
		e.log.event(slog.LevelWarn, "unknown sandbox, using wasm", "sandbox", sandboxIn)
	}
	if mode == config.ModeProject && sandbox == config.SandboxWasm && be != nil {
		err := fmt.Errorf("sandbox %q runs the script in the embedded interpreter over a working dir on this host, and terminal.backend is %s: "+
			"use sandbox: none to run project-mode scripts on the backend, or terminal.backend: local", sandbox, e.cfg.Terminal.Backend)
		return nil, failed(mode, err), err
	}
	c := &call{mode: mode, sandbox: mode == config.ModeProject && sandbox == config.SandboxWasm, workdir: wd, backend: be, kind: req.Kind, approver: req.Approver, session: req.Session, enabled: engine.ToolSet(req.Tools)}
	c.handlers = e.tools
	if len(req.ToolHandlers) > 0 || len(delegate) > 0 {
		c.handlers = maps.Clone(e.tools)
		if c.handlers == nil {
			c.handlers = map[string]ToolHandler{}
		}
		maps.Copy(c.handlers, delegate)
		maps.Copy(c.handlers, req.ToolHandlers)
	}
	if c.kind == "" {
		c.kind = config.KindCLI
	}
	if c.approver == nil {
		c.approver = e.approver
	}
	web := e.cfg.Web
	c.envOpts, c.envGen = e.envOptionsFor(req)
	if refused := e.newlyRefused(engine.RefusedPassthrough(c.envOpts.Passthrough, c.envOpts.Managed...)); len(refused) > 0 {
		e.log.event(slog.LevelWarn, "passthrough refused",
			"names", refused, "source", "terminal.env_passthrough")
	}
	c.inject = e.inject(c.mode == config.ModeStrict)
	toolEnv, dropped := e.toolEnv.get(e.environ, c.envOpts, e.inject(false))
	if len(dropped) > 0 && e.log.enabled(slog.LevelDebug) {
		e.log.event(slog.LevelDebug, "dropped HERMES_* variables",
			"names", dropped, "count", len(dropped))
	}
	tb := be
	if be == nil {
		// terminal() commands on this host: restricted like the
		// project-mode child.
		tb = backend.LocalLandlocked(wd, e.landlock)
	}
	c.tools, err = hostfuncs.New(hostfuncs.Options{
		Workdir: wd,
		Backend: tb,
		Env:     toolEnv,
		Web: hostfuncs.WebOptions{
			Provider:             web.Search.Provider,
			URL:                  web.Search.URL,
			APIKey:               e.getenv(web.Search.APIKeyEnv),
			APIKeyEnv:            web.Search.APIKeyEnv,
			CharLimit:            web.Extract.CharLimit,
			AllowPrivateNetworks: web.AllowPrivateNetworks,
			CacheDir:             filepath.Join(e.home, "cache", "web"),
			CacheMaxMB:           web.Extract.CacheMaxMB,
			CacheEntryMaxMB:      web.Extract.CacheEntryMaxMB,
			CacheTTL:             time.Duration(web.Extract.CacheTTLMinutes) * time.Minute,
			NoCache:              web.Extract.CacheMaxMB == 0,
		},
		HermesHome: e.home,
		// Read from the executor's own environment: a script cannot set it.
		WriteSafeRoot:    e.getenv(hostfuncs.WriteSafeRootEnv),
		ConfineToWorkdir: e.cfg.CodeExecution.ConfineToolsToWorkdir,
		// The file tools never write the caches the executor runs code from,
		// nor the package dirs every WASI run imports.
		WasmCacheDir: e.cacheDir,
		WasmPackages: e.cfg.CodeExecution.WasmPackages,
	})
	if err != nil {
		return nil, failed(mode, err), err
	}
	if mode == config.ModeProject && be == nil {
		resolve := native.ResolveIn
		if c.sandbox {
			// Nothing the working dir holds or selects is run: a sandboxed
			// script could have made it its own program (a virtualenv's
			// bin/python there ran on the host at the next call's probe).
			resolve = native.ResolveSandboxed
		}
		c.python = resolve(ctx, e.getenv, wd, filepath.Join(e.cacheDir, native.ProbeCacheName))
		for _, s := range c.python.Skipped {
			e.log.event(slog.LevelInfo, "python skipped", "candidate", s)
		}
		if c.python.Path == "" && !c.sandbox {
			c.note = "No usable python on this host (" + pythonsTried(c.python) + "), so this project-mode run used the embedded WASI CPython over the working dir: standard library only, no processes. Install Python 3.8+ or activate a virtualenv for the project's own packages."
			e.log.event(slog.LevelWarn, "embedded interpreter fallback",
				"skipped", len(c.python.Skipped))
		} else if len(c.python.Skipped) > 0 && !c.sandbox {
			// Say so: a skipped virtualenv explains a missing package.
			c.note = "Ran " + c.python.Describe() + " after skipping " + strings.Join(c.python.Skipped, "; ") + "."
		}
	}
	c.timeout = req.Timeout
	if c.timeout <= 0 {
		c.timeout = time.Duration(e.cfg.CodeExecution.Timeout) * time.Second
	}
	c.maxCalls = e.cfg.CodeExecution.MaxToolCalls
	if req.MaxToolCalls != nil {
		c.maxCalls = *req.MaxToolCalls
	}
	c.spillDir = e.spillDir()
	return c, Result{}, nil
}

// request is the shared layer's request for c. A one-shot run gets its
// interpreter's environment here; a kernel's was built when it started
// (kernelSpec), so a session call does not scrub the environment again.
func (e *Executor) request(c *call, code string) engine.Request {
	var env []string
	if c.session == "" {
		env = engine.ChildEnv(e.environ, c.envOpts, c.inject, c.enabled)
	}
	return engine.Request{
		Code:          code,
		Mode:          c.mode,
		Embedded:      c.mode == config.ModeProject && c.usesWasm(),
		Workdir:       c.workdir,
		Timeout:       c.timeout,
		MaxToolCalls:  c.maxCalls,
		Env:           env,
		SpillDir:      c.spillDir,
		MemoryLimitMB: e.cfg.CodeExecution.MemoryLimitMB,
		DiskLimitMB:   e.cfg.CodeExecution.DiskLimitMB,
		ProcessLimits: e.processLimits(),
		Tools:         e.toolFunc(c),
		Enabled:       c.enabled,
		Logger:        e.log.logger,
	}
}

// toolFunc runs c's tool calls; in a cli session a terminal command that
// the dangerous-command check flags needs approval first (docs/behaviour.md §8).
func (e *Executor) toolFunc(c *call) engine.ToolFunc {
	return func(ctx context.Context, name string, args json.RawMessage) map[string]any {
		if name == "terminal" && c.kind == config.KindCLI {
			var a struct {
				Command string  `json:"command"`
				Stdin   *string `json:"_stdin_b64"` // hostfuncs.SubprocessStdinArg
			}
			if json.Unmarshal(args, &a) == nil && a.Command != "" {
				check := e.approvals.Command
				if a.Stdin != nil {
					// The command reads what the script gives it: "sh" with
					// "rm -rf ~" on its stdin (subprocess.run(["sh"],
					// input=...)) ran without approval when only "sh" was
					// checked.
					check = e.approvals.CommandWithInput
				}
				if blocked := check(ctx, policyApprover(c.approver), c.grants, c.kind, a.Command, c.shell()); blocked != "" {
					return map[string]any{"output": "", "exit_code": -1, "error": blocked}
				}
			}
		}
		if h := c.handlers[name]; h != nil {
			return h(ctx, args)
		}
		return c.tools.Call(ctx, name, args)
	}
}

// finish adds what the executor knows to a result.
func (e *Executor) finish(c *call, res Result, err error) (Result, error) {
	if res.StdoutSpillPath != "" {
		pruneSpills(c.spillDir, SpillRetention, time.Now())
	}
	if res.Hint == "" && c.mode == config.ModeProject && c.backend == nil && !c.usesWasm() {
		res.Hint = e.landlockHint(c.workdir, res.Error)
	}
	if c.note != "" {
		res.Warning = strings.TrimSpace(res.Warning + " " + c.note)
	}
	return res, err
}

// permissionError matches the last line of a traceback that ends in a
// refused write (errno 13, with the path) or signal (errno 1).
var permissionError = regexp.MustCompile(`PermissionError: \[Errno (13)\] Permission denied: ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*$|PermissionError: \[Errno (1)\] Operation not permitted\s*$`)

// landlockHint explains an uncaught PermissionError of a project-mode run
// on this host that Landlock caused (see internal/landlock), or "".
func (e *Executor) landlockHint(workdir, traceback string) string {
	m := permissionError.FindStringSubmatch(traceback)
	if m == nil || e.landlock == nil {
		return ""
	}
	const off = " If that refusal is wrong for your setup, set code_execution.landlock: off in config.yaml (SECURITY.md says what it protects)."
	if m[3] != "" {
		// EPERM has other causes (setuid, say): only a signal's is ours.
		if !landlock.Probe().Signals || !strings.Contains(traceback, "kill(") {
			return ""
		}
		return "Signals to processes this run did not start (the executor, other sessions' processes) are refused on this host (Landlock); a script may still signal what it started itself." + off
	}
	path, err := strconv.Unquote(m[2])
	if err != nil {
		path = m[2][1 : len(m[2])-1]
	}
	why := e.landlock.Explain(path, workdir)
	if why == "" {
		return ""
	}
	return "The write to " + path + " was refused by Landlock: " + why + ". The processes a project-mode run starts cannot write the executor's state (its caches, config.yaml, token and credential stores, other profiles); write elsewhere." + off
}

// blockedResult is the result of a script that was not approved.
func blockedResult(mode, msg string) Result {
	return Result{
		Status:    config.StatusError,
		Output:    msg,
		Error:     msg,
		Mode:      mode,
		Blocked:   true,
		ToolCalls: []ToolCall{},
	}
}

// pythonsTried sums up what Resolve looked at, for the fallback warning.
func pythonsTried(c native.Choice) string {
	if len(c.Skipped) == 0 {
		return "no python3 or python on PATH"
	}
	return "skipped: " + strings.Join(c.Skipped, "; ")
}

// SpillRetention is how long full-output spill files are kept: long enough
// for an agent to page through one later in its session, short enough that
// the cache does not grow without bound.
const SpillRetention = 7 * 24 * time.Hour

// pruneSpills removes spill files in dir older than keep.
func pruneSpills(dir string, keep time.Duration, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "stdout-") || !strings.HasSuffix(e.Name(), ".txt") {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > keep {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// failed is the result of a run that could not start.
func failed(mode string, err error) Result {
	return Result{
		Status:    config.StatusError,
		Output:    err.Error(),
		Error:     err.Error(),
		Mode:      mode,
		ToolCalls: []ToolCall{},
	}
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
		e.log.event(slog.LevelInfo, "skill environment variables registered", "names", added)
	}
	return refused
}

// newlyRefused keeps the names of refused that have not been warned about
// yet, so that a long-running server warns once per name, not once per call.
func (e *Executor) newlyRefused(refused []string) []string {
	if len(refused) == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refusedSeen == nil {
		e.refusedSeen = make(map[string]bool)
	}
	var fresh []string
	for _, n := range refused {
		if !e.refusedSeen[n] {
			e.refusedSeen[n] = true
			fresh = append(fresh, n)
		}
	}
	return fresh
}

// envOptions is the env layer's configuration for a call starting now,
// and the skill-env generation it reflects.
func (e *Executor) envOptions() (engine.EnvOptions, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.envOptionsLocked(), e.skillGen
}

func (e *Executor) envOptionsLocked() engine.EnvOptions {
	o := engine.EnvOptions{
		Passthrough: slices.Concat(e.cfg.Terminal.EnvPassthrough, e.skillEnv),
		Windows:     goruntime.GOOS == "windows",
	}
	if v := e.cfg.Web.Search.APIKeyEnv; v != "" {
		o.Managed = []string{v}
	}
	return o
}

// inject is the variables added to every interpreter's scrubbed
// environment, and to terminal commands', by configuration: TZ, the
// effective time zone (config.Config.Timezone: $HERMES_TIMEZONE, else
// code_execution.timezone, else the top-level timezone; a Config built in
// code may set only CodeExecution.Timezone). As in Hermes, not on Windows,
// whose programs do not read IANA names in TZ: they keep the host's zone;
// a strict-mode guest (wasm, guest true) reads them itself, so it gets TZ
// on every system.
func (e *Executor) inject(guest bool) []string {
	if goruntime.GOOS == "windows" && !guest {
		return nil
	}
	if tz := cmp.Or(e.cfg.Timezone, e.cfg.CodeExecution.Timezone); tz != "" {
		return []string{"TZ=" + tz}
	}
	return nil
}

// eventLog emits the executor's log events to Options.Logger (none
// without one).
type eventLog struct {
	logger *slog.Logger
}

func (l eventLog) enabled(level slog.Level) bool {
	return l.logger != nil && l.logger.Enabled(context.Background(), level)
}

// event emits one event: a stable message with its attributes (args are
// key-value pairs, as for slog).
func (l eventLog) event(level slog.Level, msg string, args ...any) {
	if l.logger != nil {
		l.logger.Log(context.Background(), level, msg, args...)
	}
}

// ResolveWorkdir is the working-dir rule every front end applies: "" is
// the current directory; the result is absolute and must be an existing
// directory.
func ResolveWorkdir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

// toolEnvMemo keeps the last tool environment built (the scrubbed host
// environment plus the injected variables, which terminal commands get),
// with what it was built from: calls with the same options, which is
// nearly every call, share it instead of scrubbing the environment again.
// The environment it returns is shared: read it, never change it.
type toolEnvMemo struct {
	mu      sync.Mutex
	opts    engine.EnvOptions
	inject  []string
	env     []string
	dropped []string
	ok      bool
}

// get returns engine.ScrubEnv(environ, opts) merged with inject, and the
// names ScrubEnv dropped; environ is the same for every call (the
// executor's).
func (m *toolEnvMemo) get(environ []string, opts engine.EnvOptions, inject []string) (env, dropped []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ok && sameEnvOptions(m.opts, opts) && slices.Equal(m.inject, inject) {
		return m.env, m.dropped
	}
	scrubbed, dropped := engine.ScrubEnv(environ, opts)
	// Clipped, so that an append by a user copies rather than writes
	// into the shared array.
	env = slices.Clip(engine.MergeEnv(scrubbed, inject))
	m.opts = engine.EnvOptions{Passthrough: slices.Clone(opts.Passthrough), Managed: slices.Clone(opts.Managed),
		Windows: opts.Windows, Delegated: opts.Delegated}
	m.inject = slices.Clone(inject)
	m.env, m.dropped, m.ok = env, dropped, true
	return env, dropped
}

// envOptionsFields are engine.EnvOptions' fields: the conversion below
// stops compiling when a field is added that sameEnvOptions does not
// compare.
type envOptionsFields struct {
	Passthrough []string
	Windows     bool
	Managed     []string
	Delegated   bool
}

var _ = envOptionsFields(engine.EnvOptions{})

func sameEnvOptions(a, b engine.EnvOptions) bool {
	return slices.Equal(a.Passthrough, b.Passthrough) && slices.Equal(a.Managed, b.Managed) &&
		a.Windows == b.Windows && a.Delegated == b.Delegated
}
