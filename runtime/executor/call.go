package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/hermes-agent/hermes-wasm-exec/internal/cmdcheck"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// A call, prepared: the step between the session and where it runs.
// prepare resolves everything one execution needs (mode, working dir,
// tools, environment options, project mode's interpreter) from the request
// and what its session step handed down; runCall asks for its approval and
// runs it (kernels.go); finish adds what the executor knows to the result.

// call is one execution, prepared: everything both paths need.
type call struct {
	inherit  bool // start the kernel from a copy of the parent's (sessionParts.inherit)
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
	script   string // the name tracebacks give the script (Request.ScriptName)
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
	output  engine.OutputFunc // Request.Output
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

// runCall prepares req's call, with what it took from its session
// (parts), asks for its approval, and runs it (kernels.go).
func (e *Executor) runCall(ctx context.Context, req Request, m requestMode, parts sessionParts) (Result, error) {
	c, res, err := e.prepare(ctx, req, m, parts)
	if c == nil {
		return res, err
	}
	if blocked := e.approvals.Script(ctx, policyApprover(c.approver), c.grants, c.kind, req.Code); blocked != "" {
		return blockedResult(c.mode, blocked), nil
	}
	return e.runPrepared(ctx, c, req)
}

// prepare validates req, to run in mode m, and resolves everything a call
// needs, with what it took from its session (parts). When it returns a
// nil call, the result and error are the answer.
func (e *Executor) prepare(ctx context.Context, req Request, m requestMode, parts sessionParts) (*call, Result, error) {
	mode, be, delegate := m.mode, parts.backend, parts.delegate
	if !m.known {
		e.log.Log(context.Background(), slog.LevelWarn, "unknown mode, falling back to strict", "mode", m.asked)
	}
	var err error
	var wd string
	if be != nil {
		// The tools act in the backend, and a project-mode script runs
		// there: the working dir is the backend's (terminal.cwd).
		wd = be.Cwd()
	} else if wd, err = ResolveWorkdir(req.Workdir); err != nil {
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
		e.log.Log(context.Background(), slog.LevelWarn, "unknown sandbox, using wasm", "sandbox", sandboxIn)
	}
	if mode == config.ModeProject && sandbox == config.SandboxWasm && be != nil {
		err := fmt.Errorf("sandbox %q runs the script in the embedded interpreter over a working dir on this host, and terminal.backend is %s: "+
			"use sandbox: none to run project-mode scripts on the backend, or terminal.backend: local", sandbox, e.cfg.Terminal.Backend)
		return nil, failed(mode, err), err
	}
	c := &call{mode: mode, sandbox: mode == config.ModeProject && sandbox == config.SandboxWasm, workdir: wd, backend: be, kind: m.kind, approver: req.Approver, grants: parts.grants, session: req.Session, output: req.Output}
	c.handlers = e.tools
	if len(req.ToolHandlers) > 0 || len(delegate) > 0 {
		c.handlers = maps.Clone(e.tools)
		if c.handlers == nil {
			c.handlers = map[string]ToolHandler{}
		}
		maps.Copy(c.handlers, delegate)
		maps.Copy(c.handlers, req.ToolHandlers)
	}
	if c.approver == nil {
		c.approver = e.approver
	}
	web := e.cfg.Web
	c.inject = e.inject(c.mode == config.ModeStrict)
	c.envOpts, c.envGen = e.envOptionsFor(parts.skillEnv, parts.subagent)
	c.inherit = parts.inherit
	if refused := e.newlyRefused(engine.RefusedPassthrough(c.envOpts.Passthrough, c.envOpts.Managed...)); len(refused) > 0 {
		e.log.Log(context.Background(), slog.LevelWarn, "passthrough refused",
			"names", refused, "source", "terminal.env_passthrough")
	}
	toolEnv, dropped := e.toolEnv.get(e.environ, c.envOpts, e.inject(false))
	if len(dropped) > 0 && e.log.Enabled(context.Background(), slog.LevelDebug) {
		e.log.Log(context.Background(), slog.LevelDebug, "dropped HERMES_* variables",
			"names", dropped, "count", len(dropped))
	}
	tb := be
	if be == nil {
		// terminal() commands on this host: restricted like the
		// project-mode child.
		tb = backend.LocalLandlocked(wd, e.landlock)
	}
	toolOpts := hostfuncs.Options{
		Workdir: wd,
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
		SessionStore: storeDir(e.cfg),
	}
	backend.SetToolsBackend(&toolOpts, tb)
	c.tools, err = hostfuncs.New(toolOpts)
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
			e.log.Log(context.Background(), slog.LevelInfo, "python skipped", "candidate", s)
		}
		if c.python.Path == "" && !c.sandbox {
			tried := "no python3 or python on PATH"
			if len(c.python.Skipped) > 0 {
				tried = "skipped: " + strings.Join(c.python.Skipped, "; ")
			}
			c.note = "No usable python on this host (" + tried + "), so this project-mode run used the embedded WASI CPython over the working dir: standard library only, no processes. Install Python 3.8+ or activate a virtualenv for the project's own packages."
			e.log.Log(context.Background(), slog.LevelWarn, "embedded interpreter fallback",
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
	c.script = req.ScriptName
	c.enabled = engine.ToolSet(req.Tools)
	return c, Result{}, nil
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

// ResolveWorkdir is the working-dir rule every front end applies: "" is
// the current directory; the result is absolute and must be an existing
// directory. Its error says what to do (create the dir, or pass another),
// in the same words in run, serve, mcp and the Go API.
func ResolveWorkdir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("the working dir %s cannot be used: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &workdirError{fmt.Sprintf("the working dir %s does not exist: create it (mkdir -p %s) or pass another", abs, abs), err}
	case err != nil:
		return "", fmt.Errorf("the working dir %s cannot be used: %w", abs, err)
	case !fi.IsDir():
		return "", fmt.Errorf("the working dir %s is a file, not a directory: pass a directory", abs)
	}
	return abs, nil
}

// workdirError is ResolveWorkdir's error for a dir that is not there: its
// text says what to do, and it wraps the cause (fs.ErrNotExist).
type workdirError struct {
	msg string
	err error
}

func (e *workdirError) Error() string { return e.msg }
func (e *workdirError) Unwrap() error { return e.err }

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

// envOptionsFor is the env layer's configuration for a call starting now:
// the executor-wide passthrough (terminal.env_passthrough, skills) plus
// the skill variables the call passes (own: its session's and parent's, or
// its own Request.SkillEnv without a session), and for a subagent's call
// the delegated marker. gen is the skill-env generation it reflects, or -1
// when the call passes names of its own or is a subagent's, which no
// warm-pool kernel has.
func (e *Executor) envOptionsFor(own []string, subagent bool) (opts engine.EnvOptions, gen int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	opts, gen = e.envOptionsLocked(), e.skillGen
	if len(own) > 0 {
		opts.Passthrough = append(opts.Passthrough, own...)
		gen = -1
	}
	if subagent {
		// A subagent's scripts are a delegated child's, as in Hermes; warm-pool
		// kernels start without the marker, so they are not used.
		opts.Delegated = true
		gen = -1
	}
	return opts, gen
}
