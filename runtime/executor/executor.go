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
	"os"
	"path/filepath"
	goruntime "runtime"
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
}

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
}

// Executor runs scripts. It is safe for concurrent use. Close it to free
// the compiled interpreter.
type Executor struct {
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

// Execute runs one script and returns its result. The error is non-nil when
// the script could not run at all (a missing or broken interpreter, a bad
// working dir); the result then says so as well, so it
// can be handed to an agent either way. Cancel ctx with a
// *shared.InterruptError cause (context.WithCancelCause) to interrupt.
func (e *Executor) Execute(ctx context.Context, req Request) (shared.Result, error) {
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
		return failed(mode, err), err
	}
	web := e.cfg.Web
	envOpts := shared.EnvOptions{
		Passthrough: e.cfg.Terminal.EnvPassthrough,
		Windows:     goruntime.GOOS == "windows",
	}
	if web.Search.APIKeyEnv != "" {
		envOpts.Managed = []string{web.Search.APIKeyEnv}
	}
	if refused := shared.RefusedPassthrough(envOpts.Passthrough, envOpts.Managed...); len(refused) > 0 {
		e.logf("execute_code: refusing to pass through host-managed credentials %v", refused)
	}
	var inject []string
	if tz := e.cfg.CodeExecution.Timezone; tz != "" {
		inject = append(inject, "TZ="+tz)
	}
	toolEnv, _ := shared.ScrubEnv(e.environ, envOpts)
	tools, err := hostfuncs.New(hostfuncs.Options{
		Workdir: wd,
		Env:     shared.MergeEnv(toolEnv, inject),
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
		return failed(mode, err), err
	}
	// Choose the engine, and load (or compile) a wasm interpreter, before
	// the script's clock starts: the timeout limits the script, not a
	// first compile.
	var eng shared.Engine = e.strict
	embedded, skipped := "", ""
	if mode == shared.ModeProject {
		choice := native.Resolve(ctx, e.getenv)
		for _, s := range choice.Skipped {
			e.logf("execute_code: skipped python %s", s)
		}
		if choice.Path != "" {
			eng = &native.Engine{Python: choice.Path, Transport: e.transport}
			if len(choice.Skipped) > 0 {
				// Say so: a skipped virtualenv explains a missing package.
				skipped = "Ran " + choice.Describe() + " after skipping " + strings.Join(choice.Skipped, "; ") + "."
			}
		} else {
			eng = e.strict.OverWorkdir()
			embedded = "No usable python on this host (" + pythonsTried(choice) + "), so this project-mode run used the embedded WASI CPython over the working dir: standard library only, no processes. Install Python 3.8+ or activate a virtualenv for the project's own packages."
			e.logf("execute_code: %s", choice.Describe())
		}
	}
	if mode == shared.ModeStrict || embedded != "" {
		if err := e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB); err != nil {
			return failed(mode, err), err
		}
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = time.Duration(e.cfg.CodeExecution.Timeout) * time.Second
	}
	maxCalls := e.cfg.CodeExecution.MaxToolCalls
	if req.MaxToolCalls != nil {
		maxCalls = *req.MaxToolCalls
	}
	spillDir := filepath.Join(e.home, "cache", "exec")
	res, err := shared.Execute(ctx, eng, shared.Request{
		Code:          req.Code,
		Mode:          mode,
		Workdir:       wd,
		Timeout:       timeout,
		MaxToolCalls:  maxCalls,
		Environ:       e.environ,
		Env:           envOpts,
		Inject:        inject,
		SpillDir:      spillDir,
		MemoryLimitMB: e.cfg.CodeExecution.MemoryLimitMB,
		Tools: func(ctx context.Context, name string, args json.RawMessage) map[string]any {
			return tools.Call(ctx, name, args)
		},
		Enabled: req.Tools,
		Logf:    e.logf,
	})
	if res.StdoutSpillPath != "" {
		pruneSpills(spillDir, SpillRetention, time.Now())
	}
	if note := embedded + skipped; note != "" {
		res.Warning = strings.TrimSpace(res.Warning + " " + note)
	}
	return res, err
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

// Close frees the compiled interpreter. It is idempotent.
func (e *Executor) Close(ctx context.Context) error {
	var err error
	e.closeOnce.Do(func() { err = e.strict.Close(ctx) })
	return err
}

// Interrupt stops the running call of session, if any: it ends with status
// "interrupted" and `[execution interrupted — <reason>]` (reason "" means
// the default, "user sent a new message"), and the session's kernel is
// killed. It reports whether a call was running.
func (e *Executor) Interrupt(session, reason string) bool {
	return false
}

// CloseSession disposes the kernels of session and of its subagents, and
// forgets its session-scoped approvals. A running call of the session is
// interrupted first.
func (e *Executor) CloseSession(ctx context.Context, session string) {
}

// StartWarmPool keeps code_execution.warm_pool initialized strict
// interpreters ready, so that a new session's first strict call does not
// pay interpreter start-up. It returns at once; the pool fills in the
// background and refills as sessions take from it, until Close.
func (e *Executor) StartWarmPool(ctx context.Context) {
}
