// Package executor runs agent-written Python scripts: it picks the mode,
// wires the tools and the shared limits, and returns the result of SPEC §6.
// It is the one entry point the CLI (and embedders) use; the engines it
// dispatches to never import it.
package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
)

// CacheDirEnv overrides where the wasm compilation cache lives (default
// $HERMES_HOME/cache/wasm). Tests point every package at one directory so
// the interpreter is compiled once per machine, not once per package.
const CacheDirEnv = "HERMES_WASM_CACHE_DIR"

// Options configures an [Executor].
type Options struct {
	// Config is the configuration in effect; the zero value means
	// config.Default().
	Config *config.Config
	// HermesHome is the state dir (caches, spill files); empty means
	// config.HermesHome().
	HermesHome string
	// Environ is the parent environment the script's is scrubbed from; nil
	// means os.Environ().
	Environ []string
	// Logf receives debug log lines; nil discards them.
	Logf func(format string, args ...any)
	// Progress receives the one-line notice printed while the interpreter
	// is compiled for the first time; nil means os.Stderr.
	Progress io.Writer
	// RPCTransport is project mode's tool channel: "unix" or "tcp"; empty
	// means the platform's (a Unix socket, loopback TCP on Windows).
	RPCTransport string
	// Approver answers approval requests of calls that set none; nil
	// means nobody answers, so in approvals.mode "ask" whatever needs
	// approval is blocked.
	Approver Approver
	// Tools replaces built-in tools with the embedder's own handlers, by
	// tool name (one of the seven; see hostfuncs.Names). A replaced tool
	// keeps the same arguments and result shape, and goes through the same
	// whitelist, budget and log.
	Tools map[string]ToolHandler
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
	// Workdir is the session working dir the tools act on; empty means the
	// current directory.
	Workdir string
	// Timeout overrides code_execution.timeout when positive.
	Timeout time.Duration
	// MaxToolCalls overrides code_execution.max_tool_calls when non-nil.
	MaxToolCalls *int
	// Tools is the enabled subset of the seven tools; nil means all.
	Tools []string

	// Session names a persistent session kernel (SPEC §7): calls with the
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
	// Kind is KindCLI (the default), KindGateway or KindAutomation; it
	// decides what needs approval (SPEC §8).
	Kind string
	// Approver answers this call's approval requests; nil means
	// Options.Approver.
	Approver Approver
	// ToolHandlers replaces tools for this call only (over Options.Tools),
	// for instance to delegate them to the agent host that made the call.
	ToolHandlers map[string]ToolHandler
}

// Executor runs scripts. It is safe for concurrent use. Close it to free
// the compiled interpreter.
type Executor struct {
	tools     map[string]ToolHandler
	approvals *approvals
	approver  Approver
	kernels   *kernels
	cfg       config.Config
	home      string
	environ   []string
	getenv    func(string) string
	logf      func(string, ...any)
	strict    *runtime.Strict
	transport string

	closeOnce sync.Once
}

// New returns an executor for opts.
func New(opts Options) *Executor {
	cfg := config.Default()
	if opts.Config != nil {
		cfg = *opts.Config
	}
	home := opts.HermesHome
	if home == "" {
		home = config.HermesHome()
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
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
	return &Executor{
		cfg:       cfg,
		home:      home,
		environ:   environ,
		getenv:    getenv,
		logf:      logf,
		strict:    runtime.NewStrict(runtime.Options{CacheDir: CacheDir(home), Progress: opts.Progress}),
		transport: opts.RPCTransport,
		approvals: newApprovals(cfg.Approvals.Mode, time.Duration(cfg.Approvals.Timeout)*time.Second),
		approver:  opts.Approver,
		tools:     maps.Clone(opts.Tools),
		kernels:   newKernels(),
	}
}

// CacheDir is where the compilation cache lives for the state dir home.
func CacheDir(home string) string {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return d
	}
	return filepath.Join(home, "cache", "wasm")
}

// NormalizeMode maps a mode value to "strict" or "project" (SPEC §2):
// case-insensitive and trimmed; anything else is project, with ok false.
func NormalizeMode(m string) (mode string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(m)) {
	case shared.ModeStrict:
		return shared.ModeStrict, true
	case shared.ModeProject:
		return shared.ModeProject, true
	}
	return shared.ModeProject, false
}

// Warm prepares the strict interpreter (compiling it or loading it from
// the cache) so the next strict run starts fast.
func (e *Executor) Warm(ctx context.Context) error {
	return e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB)
}

// Execute runs one script and returns its result. With req.Session set it
// runs in that session's kernel (created on first use); otherwise in a
// fresh interpreter. The error is non-nil when the script could not run at
// all (a missing or broken interpreter, a bad working dir); the result
// then says so as well, so it can be handed to an agent either way. Cancel
// ctx with a *shared.InterruptError cause (context.WithCancelCause) to
// interrupt.
func (e *Executor) Execute(ctx context.Context, req Request) (shared.Result, error) {
	c, res, err := e.prepare(ctx, req)
	if c == nil {
		return res, err
	}
	if blocked := e.approvals.script(ctx, c.approver, req.Session, c.kind, req.Code); blocked != "" {
		return blockedResult(c.mode, blocked), nil
	}
	if req.Session != "" {
		return e.sessionCall(ctx, c, req)
	}
	// Choose the engine, and load (or compile) a wasm interpreter, before
	// the script's clock starts: the timeout limits the script, not a
	// first compile.
	var eng shared.Engine = e.strict
	if c.mode == shared.ModeProject {
		if c.python.Path != "" {
			eng = &native.Engine{Python: c.python.Path, Transport: e.transport}
		} else {
			eng = e.strict.OverWorkdir()
		}
	}
	if c.usesWasm() {
		if err := e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB); err != nil {
			return failed(c.mode, err), err
		}
	}
	res, err = shared.Execute(ctx, eng, e.request(c, req.Code))
	return e.finish(c, res, err)
}

// call is one execution, prepared: everything both paths need.
type call struct {
	mode     string
	workdir  string
	python   native.Choice // project mode's interpreter
	envOpts  shared.EnvOptions
	inject   []string
	tools    *hostfuncs.Tools
	timeout  time.Duration
	maxCalls int
	spillDir string
	kind     string
	approver Approver
	session  string
	enabled  []string
	note     string // a warning for the result (skipped or missing python)
	handlers map[string]ToolHandler
}

// usesWasm reports whether the call runs in the embedded interpreter.
func (c *call) usesWasm() bool {
	return c.mode == shared.ModeStrict || c.python.Path == ""
}

// prepare validates req and resolves everything a call needs. When it
// returns a nil call, the result and error are the answer.
func (e *Executor) prepare(ctx context.Context, req Request) (*call, shared.Result, error) {
	modeIn := req.Mode
	if modeIn == "" {
		modeIn = e.cfg.CodeExecution.Mode
	}
	mode, ok := NormalizeMode(modeIn)
	if !ok {
		e.logf("execute_code: unknown mode %q, falling back to project", modeIn)
	}
	wd := req.Workdir
	if wd == "" {
		wd = "."
	}
	wd, err := filepath.Abs(wd)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(wd); err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is not a directory", wd)
		}
	}
	if err != nil {
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
	c := &call{mode: mode, workdir: wd, kind: req.Kind, approver: req.Approver, session: req.Session, enabled: req.Tools}
	c.handlers = e.tools
	if len(req.ToolHandlers) > 0 {
		c.handlers = maps.Clone(e.tools)
		if c.handlers == nil {
			c.handlers = map[string]ToolHandler{}
		}
		maps.Copy(c.handlers, req.ToolHandlers)
	}
	if c.kind == "" {
		c.kind = KindCLI
	}
	if c.approver == nil {
		c.approver = e.approver
	}
	web := e.cfg.Web
	c.envOpts = shared.EnvOptions{
		Passthrough: e.cfg.Terminal.EnvPassthrough,
		Windows:     goruntime.GOOS == "windows",
	}
	if web.Search.APIKeyEnv != "" {
		c.envOpts.Managed = []string{web.Search.APIKeyEnv}
	}
	if refused := shared.RefusedPassthrough(c.envOpts.Passthrough, c.envOpts.Managed...); len(refused) > 0 {
		e.logf("execute_code: refusing to pass through host-managed credentials %v", refused)
	}
	if tz := e.cfg.CodeExecution.Timezone; tz != "" {
		c.inject = append(c.inject, "TZ="+tz)
	}
	toolEnv, _ := shared.ScrubEnv(e.environ, c.envOpts)
	c.tools, err = hostfuncs.New(hostfuncs.Options{
		Workdir: wd,
		Env:     shared.MergeEnv(toolEnv, c.inject),
		Web: hostfuncs.WebOptions{
			Provider:             web.Search.Provider,
			URL:                  web.Search.URL,
			APIKey:               e.getenv(web.Search.APIKeyEnv),
			APIKeyEnv:            web.Search.APIKeyEnv,
			CharLimit:            web.Extract.CharLimit,
			AllowPrivateNetworks: web.AllowPrivateNetworks,
			CacheDir:             filepath.Join(e.home, "cache", "web"),
		},
	})
	if err != nil {
		return nil, failed(mode, err), err
	}
	if mode == shared.ModeProject {
		c.python = native.Resolve(ctx, e.getenv)
		for _, s := range c.python.Skipped {
			e.logf("execute_code: skipped python %s", s)
		}
		if c.python.Path == "" {
			c.note = "No usable python on this host (" + pythonsTried(c.python) + "), so this project-mode run used the embedded WASI CPython over the working dir: standard library only, no processes. Install Python 3.8+ or activate a virtualenv for the project's own packages."
			e.logf("execute_code: %s", c.python.Describe())
		} else if len(c.python.Skipped) > 0 {
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
	c.spillDir = filepath.Join(e.home, "cache", "exec")
	return c, shared.Result{}, nil
}

// request is the shared layer's request for c.
func (e *Executor) request(c *call, code string) shared.Request {
	return shared.Request{
		Code:          code,
		Mode:          c.mode,
		Workdir:       c.workdir,
		Timeout:       c.timeout,
		MaxToolCalls:  c.maxCalls,
		Environ:       e.environ,
		Env:           c.envOpts,
		Inject:        c.inject,
		SpillDir:      c.spillDir,
		MemoryLimitMB: e.cfg.CodeExecution.MemoryLimitMB,
		Tools:         e.toolFunc(c),
		Enabled:       c.enabled,
		Logf:          e.logf,
	}
}

// toolFunc runs c's tool calls; in a cli session a terminal command that
// the dangerous-command check flags needs approval first (SPEC §8).
func (e *Executor) toolFunc(c *call) shared.ToolFunc {
	return func(ctx context.Context, name string, args json.RawMessage) map[string]any {
		if name == "terminal" && c.kind == KindCLI {
			var a struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(args, &a) == nil && a.Command != "" {
				if blocked := e.approvals.command(ctx, c.approver, c.session, c.kind, a.Command); blocked != "" {
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
func (e *Executor) finish(c *call, res shared.Result, err error) (shared.Result, error) {
	if res.StdoutSpillPath != "" {
		pruneSpills(c.spillDir, SpillRetention, time.Now())
	}
	if c.note != "" {
		res.Warning = strings.TrimSpace(res.Warning + " " + c.note)
	}
	return res, err
}

// blockedResult is the result of a script that was not approved.
func blockedResult(mode, msg string) shared.Result {
	return shared.Result{
		Status:    shared.StatusError,
		Output:    msg,
		Error:     msg,
		Mode:      mode,
		Blocked:   true,
		ToolCalls: []shared.ToolCall{},
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
func failed(mode string, err error) shared.Result {
	return shared.Result{
		Status:    shared.StatusError,
		Output:    err.Error(),
		Error:     err.Error(),
		Mode:      mode,
		ToolCalls: []shared.ToolCall{},
	}
}

// Close ends every session kernel, the warm pool and the compiled
// interpreter. It is idempotent.
func (e *Executor) Close(ctx context.Context) error {
	var err error
	e.closeOnce.Do(func() {
		e.kernels.closeAll()
		err = e.strict.Close(ctx)
	})
	return err
}
