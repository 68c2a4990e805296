// Package mcpserver is `hermes-wasm-exec mcp`: a Model Context Protocol
// server on stdin/stdout, built on the official Go SDK, with one tool,
// execute_code, that runs a script in a session kernel kept for the
// connection. Dangerous commands are approved through the client
// (elicitation, or input requests from protocol 2026-07-28 on). Logs go to
// stderr: stdout is the protocol.
//
// It imports runtime/executor, config, internal/engine (Python's truth
// rules for reset) and the command's cli package; only the command imports
// it.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// mcpToolName is the one tool the MCP server offers.
const mcpToolName = "execute_code"

// mcpApprovalKey names the approval question in a multi-round-trip
// input request (MCP protocol 2026-07-28 and later).
const mcpApprovalKey = "approve_command"

// MRTRVersion is the first MCP protocol version in which a server asks
// the client only by returning input requests (multi round-trip requests,
// SEP-2322), never with a request of its own while a call runs.
const MRTRVersion = "2026-07-28"

// Command is `mcp`'s help and flags.
var Command = &cli.Command{
	Name: "mcp",
	Summary: `Serves the execute_code tool to an MCP client on stdin/stdout, or over MCP's
Streamable HTTP transport with --http (one session kernel per MCP session). Dangerous
terminal() commands are asked about through the client (MCP elicitation); a client
without it cannot approve them, so they are blocked unless approvals.mode is off.
docs/mcp.md has the client configuration.`,
	Order: []string{"mode", "sandbox", "workdir", "config", "http", "token-file", "auth-timeout", "idle-timeout", "max-unauthenticated", "drain-timeout", "skill", "skill-env", "log-level", "log-format"},
	Examples: []string{
		"hermes-wasm-exec mcp --mode strict --workdir ~/project",
		"hermes-wasm-exec mcp --http 127.0.0.1:8765 --token-file ~/.hermes/mcp.token",
	},
}

// Main runs `mcp` with the arguments after the command name, and returns
// the exit code. version is what the server tells its clients it is.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, version string) int {
	stderr = &cli.LockedWriter{W: stderr}
	c := Command
	fs := c.FlagSet()
	cfgPath := fs.String("config", "", "`FILE` config file (default: $HERMES_HOME/config.yaml)")
	var mode, sandbox string
	logLevel, logFormat := "info", "text"
	fs.Var(cli.EnumFlag{V: &mode, Allowed: []string{config.ModeStrict, config.ModeProject}}, "mode", "`strict|project` where scripts run (default: code_execution.mode)")
	fs.Var(cli.EnumFlag{V: &sandbox, Allowed: []string{config.SandboxNone, config.SandboxWasm}}, "sandbox", "`none|wasm` as for run (default: code_execution.sandbox)")
	workdir := fs.String("workdir", "", "`DIR` the working dir the tools act on; it must exist (default: the current dir)")
	fs.Var(cli.EnumFlag{V: &logLevel, Allowed: []string{"info", "debug"}}, "log-level", "`info|debug` logs go to stderr (stdout is the protocol) (default info)")
	fs.Var(cli.EnumFlag{V: &logFormat, Allowed: []string{"text", "json"}}, "log-format", "`text|json` log lines as text or JSON; json (and --http) also logs one line per execution (session, mode, status, duration, tool calls) (default text)")
	httpAddr := fs.String("http", "", "`HOST:PORT|unix:PATH` serve MCP's Streamable HTTP transport at /mcp instead of stdio, with /healthz, /readyz and /metrics (Prometheus) on the same listener (docs/service.md); PORT 0: any free port. On TCP, /mcp and /metrics need the bearer token (Authorization: Bearer ...); a Unix socket (0600) needs none")
	tokenFile := fs.String("token-file", "", "`FILE` with --http HOST:PORT and no $HERMES_SERVE_TOKEN: as for serve (read from FILE, or generated there; with neither, generated into a private temp dir, its path printed on stderr)")
	drain := config.DefaultDrainTimeout
	fs.Var(cli.DurationFlag{D: &drain}, "drain-timeout", "`DURATION` with --http, on SIGTERM: how long running calls may finish before they are interrupted; seconds or a duration (30, 30s); a second SIGTERM stops at once (default "+config.DefaultDrainTimeout.String()+")")
	lim := httpLimits{auth: config.DefaultAuthTimeout, idle: config.DefaultHTTPIdleTimeout, maxUnauth: config.DefaultMaxUnauthenticated}
	fs.Var(cli.DurationFlag{D: &lim.auth}, "auth-timeout", "`DURATION` with --http: a request's headers must arrive within it; 0: no limit (default "+config.DefaultAuthTimeout.String()+")")
	fs.Var(cli.DurationFlag{D: &lim.idle}, "idle-timeout", "`DURATION` with --http: an authenticated keep-alive connection is closed after this long without a request; 0: no limit (default "+config.DefaultHTTPIdleTimeout.String()+")")
	fs.Var(cli.IntFlag{N: &lim.maxUnauth, Min: 0}, "max-unauthenticated", "`N` with --http: connections that have not sent the token that may be open at a time (until it sends the token a connection is closed after each answer); 0: no cap (default "+strconv.Itoa(config.DefaultMaxUnauthenticated)+")")
	var skills, skillEnv listFlag
	fs.Var(&skills, "skill", "`PATH` pass through the variables a skill declares in its SKILL.md (required_environment_variables; PATH is the file or the skill's dir); repeatable. Host-managed credentials are refused")
	fs.Var(&skillEnv, "skill-env", "`NAME[,NAME]` pass through these skill variables; repeatable")
	pos, code, ok := c.Parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if code := c.NoArgs(pos, stderr); code != cli.ExitOK {
		return code
	}
	fail := func(format string, a ...any) int { return c.Fail(stderr, format, a...) }
	var hl *httpListener
	if *httpAddr != "" {
		var err error
		if hl, err = parseHTTPAddr(*httpAddr, *tokenFile, lim); err != nil {
			return fail("%v", err)
		}
		defer hl.token.Close()
	} else if *tokenFile != "" {
		return fail("--token-file goes with --http")
	}
	if *workdir != "" {
		if msg := cli.CheckWorkdir(*workdir); msg != "" {
			return fail("%s", msg)
		}
	}
	wd, err := executor.ResolveWorkdir(*workdir)
	if err != nil {
		return fail("--workdir: %v", err)
	}
	cfg, ok := cli.LoadConfig(*cfgPath, stderr, logLevel)
	if !ok || !cli.ApplySandbox("mcp", sandbox, &cfg, stderr) {
		return cli.ExitUsage
	}
	// The variables skills declare, executor-wide: this process serves
	// one client.
	var skillNames []string
	for _, path := range skills {
		names, err := executor.ParseSkillFile(path)
		if err != nil {
			return fail("--skill: %v", err)
		}
		skillNames = append(skillNames, names...)
	}
	for _, list := range skillEnv {
		for n := range strings.SplitSeq(list, ",") {
			if n = strings.TrimSpace(n); n != "" {
				skillNames = append(skillNames, n)
			}
		}
	}
	modeIn := mode
	if modeIn == "" {
		modeIn = cfg.CodeExecution.Mode
	}
	effective, _ := config.NormalizeMode(modeIn)

	logf := cli.DebugLogf(logLevel, stderr)
	level := slog.LevelWarn
	if logLevel == "debug" {
		level = slog.LevelDebug
	}
	// Its one mode is the executor's too (which warm pool to keep).
	cfg.CodeExecution.Mode = effective
	// The token file, given or generated, is the executor's state: no run
	// may rewrite it.
	var statePaths []string
	if hl != nil && hl.token != nil && hl.token.File != "" {
		statePaths = append(statePaths, hl.token.File)
	}
	ex := executor.New(executor.Options{Config: &cfg, Logger: cli.ExecutorLogger(logLevel, stderr), Progress: stderr, StatePaths: statePaths})
	// A refused name is warned about once, by the executor's log.
	ex.RegisterSkillEnv(skillNames...)
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	opts := Options{
		Config: cfg, Mode: effective, Workdir: wd, Logf: logf, Version: version,
		Logger: slog.New(handler),
		HTTP:   *httpAddr != "",
	}
	if *httpAddr != "" || logFormat == "json" {
		// One line per execution, at info level whatever --log-level says.
		execHandler := slog.Handler(slog.NewTextHandler(stderr, nil))
		if logFormat == "json" {
			execHandler = slog.NewJSONHandler(stderr, nil)
		}
		opts.ExecLog = slog.New(execHandler)
	}
	if *httpAddr != "" {
		opts.Metrics = newMetrics(ex)
	}
	m := New(ex, opts)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	defer cli.CatchSIGPIPE()()
	if hl != nil {
		return m.mainHTTP(ctx, ex, hl, drain, sigs, stderr, opts.Logger)
	}
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "hermes-wasm-exec mcp: %v: shutting down\n", sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		// Nobody reads stdout any more: the client is gone, even if stdin
		// is still open. Its runs are interrupted and the server ends.
		if cli.ReaderGone(stdout, ctx.Done()) {
			fmt.Fprintf(stderr, "hermes-wasm-exec mcp: the client is gone (nobody reads stdout any more): shutting down\n")
			cancel()
		}
	}()
	if effective == config.ModeStrict {
		// A project-mode mcp starts no pool: its strict half would be idle.
		ex.StartWarmPoolIn(ctx, wd)
	}
	fmt.Fprintf(stderr, "hermes-wasm-exec mcp: serving MCP on stdin/stdout (tool %s, %s mode, working dir %s)\n", mcpToolName, effective, wd)
	pipe := newStdio(stdin, stdout, ctx.Done())
	err = m.Serve(ctx, &mcp.IOTransport{Reader: pipe, Writer: pipe})
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) && ctx.Err() == nil {
		logf("mcp: connection: %v", err)
	}
	m.Stop()
	// Bounded: a delegated tool that ignores its context must not hang the exit.
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 30*time.Second)
	ex.Close(closeCtx)
	cancelClose()
	return cli.ExitOK
}

// mainHTTP is Main for --http.
func (m *Server) mainHTTP(ctx context.Context, ex *executor.Executor, hl *httpListener, drain time.Duration, sigs <-chan os.Signal, stderr io.Writer, logger *slog.Logger) int {
	defer func() {
		closeCtx, cancelClose := context.WithTimeout(context.Background(), 30*time.Second)
		ex.Close(closeCtx)
		cancelClose()
	}()
	infof := func(format string, a ...any) { fmt.Fprintf(stderr, "hermes-wasm-exec mcp: "+format+"\n", a...) }
	ln, err := hl.listen(infof)
	if err != nil {
		infof("%v", err)
		return cli.ExitFailed
	}
	defer ln.Close()
	token := hl.token
	h := newHTTPService(m, ex, token, m.opts.Config, logger)
	ex.StartWarmPoolIn(ctx, m.opts.Workdir)
	where, auth := "", ""
	if hl.network == "unix" {
		where = "unix:" + hl.address + " at /mcp"
		auth = "an owner-only socket (0600): no token"
	} else {
		where = "http://" + ln.Addr().String() + "/mcp"
		auth = fmt.Sprintf("bearer token required on /mcp and /metrics: %s", token.Where())
		if token.File != "" {
			auth += fmt.Sprintf(`; send "Authorization: Bearer $(cat %s)"`, absPath(token.File))
		}
	}
	infof("serving MCP over HTTP on %s (tool %s, %s mode, working dir %s; %s; /healthz /readyz /metrics)",
		where, mcpToolName, m.opts.Mode, m.opts.Workdir, auth)
	return runHTTP(ctx, ln, h, hl.limits, drain, sigs, stderr, m.opts.Config.CodeExecution.WarmPool > 0)
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Options configures the MCP server.
type Options struct {
	Config  config.Config
	Mode    string // the mode scripts run in: strict or project
	Workdir string // absolute: the working dir the tools act on
	Logf    func(string, ...any)
	Logger  *slog.Logger // the SDK's; nil discards
	Version string       // the server's version, told to clients
	// HTTP: sessions come and go over Streamable HTTP (mainHTTP), not one
	// connection per process: each session's end closes its kernel.
	HTTP bool
	// ExecLog, when set, gets one line per execution (session, mode,
	// status, duration, tool calls); Metrics counts them.
	ExecLog *slog.Logger
	Metrics *metrics
}

// Server is the execute_code tool over MCP: one session kernel per
// connection.
type Server struct {
	ex     *executor.Executor
	opts   Options
	server *mcp.Server

	// ctx is the parent of every run (runs outlive the requests that start
	// them while an approval is asked by multi round trip); stop cancels
	// it with an interrupt.
	ctx    context.Context
	cancel context.CancelCauseFunc
	runs   sync.WaitGroup

	mu    sync.Mutex
	conns map[*mcp.ServerSession]*mcpConn
	// nextID is the session id the next new MCP session gets, once (a
	// session taken over from another replica, http.go); "" for a fresh
	// random one.
	nextID atomic.Value

	metrics *metrics // nil: none
}

// mcpConn is one MCP connection: its session kernel, and its runs waiting
// for the answer to an approval question.
type mcpConn struct {
	session string // the executor session of this connection's kernel

	mu      sync.Mutex
	closed  bool
	pending map[string]*mcpRun // by request state
}

// mcpRun is one execute_code call running in the executor.
type mcpRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when res is set
	res    executor.Result
	asks   chan *mcpAsk // approval questions for the client (multi round trip)
	asking *mcpAsk      // the question the client was sent (pending runs)

	// outMu guards out, and is held while output is sent to it, so that
	// nothing is sent for a call once it stopped following the run.
	outMu sync.Mutex
	out   *outputTarget // the call waiting for the run, if it has a progress token
	sent  float64       // bytes of output sent: the progress value
	// unfollow ends the first call's following (set by start).
	unfollow func()
}

// outputTarget is a tools/call request waiting for its run that carries
// a progress token: the script's output goes to it as progress
// notifications while it runs.
type outputTarget struct {
	ctx   context.Context // the request's: the notifications go with it
	ss    *mcp.ServerSession
	token any // the request's progressToken
}

// follow makes req's call (ctx its context) the one the run's output goes
// to, until the returned function is called; a call without a progress
// token gets none, and output meanwhile is dropped.
func (run *mcpRun) follow(ctx context.Context, req *mcp.CallToolRequest) (unfollow func()) {
	var t *outputTarget
	if token := req.Params.GetProgressToken(); token != nil {
		t = &outputTarget{ctx: ctx, ss: req.Session, token: token}
	}
	run.outMu.Lock()
	run.out = t
	run.outMu.Unlock()
	return func() {
		run.outMu.Lock()
		if run.out == t {
			run.out = nil
		}
		run.outMu.Unlock()
	}
}

// outputMeta is the _meta key of a progress notification naming the
// stream its message is from ("stdout" or "stderr").
const outputMeta = "hermes-wasm-exec/stream"

// output sends a chunk of the run's output to the call following it, if
// any (executor.Request.Output: one chunk at a time, never after the run).
func (run *mcpRun) output(stream string, chunk []byte) {
	run.outMu.Lock()
	defer run.outMu.Unlock()
	t := run.out
	if t == nil {
		return
	}
	run.sent += float64(len(chunk))
	_ = t.ss.NotifyProgress(t.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: t.token, Progress: run.sent,
		Message: strings.ToValidUTF8(string(chunk), "\uFFFD"),
		Meta:    mcp.Meta{outputMeta: stream},
	})
}

// mcpAsk is an approval question and where its answer goes (nil: none).
type mcpAsk struct {
	params *mcp.ElicitParams
	answer chan *mcp.ElicitResult
}

// New returns the server of ex's execute_code tool; Serve serves a
// connection, Stop ends the runs.
func New(ex *executor.Executor, opts Options) *Server {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	m := &Server{ex: ex, opts: opts, ctx: ctx, cancel: cancel, conns: map[*mcp.ServerSession]*mcpConn{}, metrics: opts.Metrics}
	var initialized func(context.Context, *mcp.InitializedRequest)
	if opts.HTTP {
		// Over HTTP a session ends when the client deletes it or it idles
		// out (StreamableHTTPOptions.SessionTimeout): its kernel goes too.
		initialized = func(_ context.Context, req *mcp.InitializedRequest) {
			ss := req.Session
			m.conn(ss)
			if m.metrics != nil {
				m.metrics.sessions.Inc()
			}
			go func() {
				_ = ss.Wait()
				m.disconnect(ss)
				m.mu.Lock()
				delete(m.conns, ss)
				m.mu.Unlock()
				if m.metrics != nil {
					m.metrics.sessions.Dec()
				}
			}()
		}
	}
	m.server = mcp.NewServer(&mcp.Implementation{Name: "hermes-wasm-exec", Title: "hermes-wasm-exec", Version: opts.Version}, &mcp.ServerOptions{
		GetSessionID:       m.sessionID,
		InitializedHandler: initialized,
		Logger:             logger,
		Capabilities:       &mcp.ServerCapabilities{},
		Instructions:       "Use execute_code to run Python that calls the hermes tools (read_file, search_files, terminal, ...) in loops and prints only what matters: many tool calls, one result.",
	})
	// A raw handler: the SDK's typed one validates the arguments against
	// the schema first and answers a model's mistake with the validator's
	// text, where Hermes's messages are wanted (see executeCode).
	m.server.AddTool(&mcp.Tool{
		Name:        mcpToolName,
		Title:       "Run Python with the hermes tools",
		Description: mcpDescription(opts),
		InputSchema: executor.ExecuteCodeSchema(opts.Config, opts.Mode, nil).Parameters,
		Annotations: &mcp.ToolAnnotations{Title: "Run Python with the hermes tools", DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}, m.executeCode)
	return m
}

func ptr[T any](v T) *T { return &v }

// mcpDescription is execute_code's description: Hermes's (see
// executor.ExecuteCodeSchema), then what this server adds: where the tools
// act, idle kernels, approvals and the result's shape.
func mcpDescription(o Options) string {
	var b strings.Builder
	b.WriteString(executor.ExecuteCodeSchema(o.Config, o.Mode, nil).Description)
	fmt.Fprintf(&b, "\n\nThe tools act on the working dir %s.", o.Workdir)
	c := o.Config.CodeExecution
	if c.KernelIdleTimeout > 0 {
		fmt.Fprintf(&b, " This connection's kernel also loses its state after %d idle minutes; pass reset=true to start fresh.", (c.KernelIdleTimeout+59)/60)
	}
	b.WriteString("\n\n")
	switch o.Config.Approvals.Mode {
	case config.ApprovalsOff:
		b.WriteString("terminal() runs any command (approvals are off).")
	case config.ApprovalsDeny:
		b.WriteString("Dangerous terminal() commands (recursive deletes, sudo, force pushes, curl | sh, ...) are refused (approvals.mode deny): find another way.")
	default:
		b.WriteString("Dangerous terminal() commands (recursive deletes, sudo, force pushes, curl | sh, ...) need the user's approval, asked through the MCP client; a client without elicitation cannot ask, so they are refused.")
	}
	b.WriteString(" The result's text is the output; its structured content is the whole result (status, error, hint, tool_calls, ...).")
	return b.String()
}

// executeCodeInput is execute_code's input.
type executeCodeInput struct {
	Code  string
	Reset bool
}

// codeInput reads execute_code's arguments as Hermes's handler does (the
// SDK leaves them to the tool: see New): problem is Hermes's
// message for a misdirected call, which is answered with it. reset is
// Python's bool() of the value, as in Hermes.
func codeInput(raw json.RawMessage) (in executeCodeInput, problem string) {
	args := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &args) != nil {
		return in, "execute_code's arguments must be a JSON object: {\"code\": \"...\"}"
	}
	if in.Code, problem = executor.CodeArgument(args); problem != "" {
		return in, problem
	}
	if r, ok := args["reset"]; ok {
		var v any
		if json.Unmarshal(r, &v) == nil {
			in.Reset = engine.PyTruthy(v)
		}
	}
	return in, ""
}

// Serve serves one connection until it ends, then closes its kernel.
// When ctx is done (the server stops), every run is interrupted and the
// connection closed.
func (m *Server) Serve(ctx context.Context, t mcp.Transport) error {
	ss, err := m.server.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		// Close waits for the calls in flight: end them first.
		m.cancel(&executor.InterruptError{Reason: "the server is shutting down"})
		ss.Close()
	})
	defer stop()
	err = ss.Wait()
	m.disconnect(ss)
	return err
}

// conn returns the state of ss's connection, creating it on first use.
func (m *Server) conn(ss *mcp.ServerSession) *mcpConn {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conns[ss]
	if c == nil {
		// Over HTTP the executor session is named by the MCP session's id,
		// which the client sends with every request: another replica
		// sharing the session store resumes it by that name (http.go).
		name := mcpSessionName(ss.ID())
		if ss.ID() == "" {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			name = "mcp-" + hex.EncodeToString(b)
		}
		c = &mcpConn{session: name, pending: map[string]*mcpRun{}}
		m.conns[ss] = c
		m.opts.Logf("mcp: a connection opened: session %s", c.session)
	}
	return c
}

// disconnect ends a connection: its runs waiting for an approval are
// interrupted and its kernel closed. Its state stays, closed, so that a
// late request of it cannot start a new kernel.
func (m *Server) disconnect(ss *mcp.ServerSession) {
	c := m.conn(ss)
	c.mu.Lock()
	c.closed = true
	pending := c.pending
	c.pending = map[string]*mcpRun{}
	c.mu.Unlock()
	for _, run := range pending {
		run.cancel(&executor.InterruptError{Reason: "the MCP client disconnected"})
	}
	m.ex.Interrupt(c.session, "the MCP client disconnected")
	if m.opts.HTTP && m.ctx.Err() != nil {
		// The server stops, the session does not: the executor's Close
		// suspends its kernel into the session store (when there is one),
		// and another replica, or this one restarted, resumes it.
		m.opts.Logf("mcp: a connection closed by the shutdown: session %s", c.session)
		return
	}
	if m.opts.HTTP {
		// Another replica may run it now (it took the session over):
		// its images are deleted only where its kernel runs.
		m.ex.ReleaseSession(context.Background(), c.session)
	} else {
		m.ex.CloseSession(context.Background(), c.session)
	}
	m.opts.Logf("mcp: a connection closed: session %s", c.session)
}

// mcpSessionName is the executor session of the MCP session id.
func mcpSessionName(id string) string { return "mcp-" + id }

// sessionID gives a new MCP session its id: the one set in nextID (a
// session taken over), else 16 random bytes in hex.
func (m *Server) sessionID() string {
	if id, _ := m.nextID.Swap("").(string); id != "" {
		return id
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// knows reports whether an MCP session with id is open here.
func (m *Server) knows(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ss := range m.conns {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// Stop interrupts every run and waits (a bounded time) for them to end.
func (m *Server) Stop() {
	m.cancel(&executor.InterruptError{Reason: "the server is shutting down"})
	done := make(chan struct{})
	go func() {
		m.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cli.ShutdownGrace):
	}
}

// executeCode is the execute_code tool. A call either starts a run, or
// (a multi-round-trip retry carrying the answer to an approval question)
// resumes one; then it waits for the run to end or to ask a question.
func (m *Server) executeCode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c := m.conn(req.Session)
	var run *mcpRun
	if state := req.Params.RequestState; state != "" {
		c.mu.Lock()
		run = c.pending[state]
		delete(c.pending, state)
		c.mu.Unlock()
		if run == nil {
			return errorResult(errors.New("this call's approval question is no longer pending (it timed out, or was answered); call execute_code again")), nil
		}
		var answer *mcp.ElicitResult
		if r, ok := req.Params.InputResponses[mcpApprovalKey].(*mcp.ElicitResult); ok {
			answer = r
		}
		run.asking.answer <- answer
		run.asking = nil
		defer run.follow(ctx, req)()
	} else {
		in, problem := codeInput(req.Params.Arguments)
		if problem != "" {
			return mcpToolResult(cli.ArgumentResult(m.opts.Mode, problem)), nil
		}
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return errorResult(errors.New("the connection is closed")), nil
		}
		run = m.start(ctx, c, req, in)
		defer run.unfollow()
	}
	select {
	case <-run.done:
		return mcpToolResult(run.res), nil
	case ask := <-run.asks:
		// Protocol 2026-07-28 and later: the question goes back as an
		// input request, and the client retries the call with the answer
		// while the script waits.
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		state := hex.EncodeToString(b)
		run.asking = ask
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			ask.answer <- nil
			return errorResult(errors.New("the connection is closed")), nil
		}
		c.pending[state] = run
		c.mu.Unlock()
		go func() {
			// Forget the question once the run ends without an answer
			// (the approval timed out).
			<-run.done
			c.mu.Lock()
			if c.pending[state] == run {
				delete(c.pending, state)
			}
			c.mu.Unlock()
		}()
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{mcpApprovalKey: ask.params},
			RequestState:  state,
		}, nil
	case <-ctx.Done():
		run.cancel(&executor.InterruptError{Reason: "the MCP client cancelled the call"})
		return errorResult(context.Cause(ctx)), nil
	}
}

// errorResult is a tool result that reports err (isError), for failures
// of the call itself rather than of a script.
func errorResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// start starts a run of in for connection c, asking approvals through the
// client that made req, whose call (callCtx) gets the run's output until
// run.unfollow is called.
func (m *Server) start(callCtx context.Context, c *mcpConn, req *mcp.CallToolRequest, in executeCodeInput) *mcpRun {
	ctx, cancel := context.WithCancelCause(m.ctx)
	run := &mcpRun{cancel: cancel, done: make(chan struct{}), asks: make(chan *mcpAsk)}
	// The output goes to the call from the start (unfollow ends it).
	run.unfollow = run.follow(callCtx, req)
	ask := m.approver(req, run)
	ereq := executor.Request{
		Code:     strings.TrimPrefix(in.Code, "\ufeff"),
		Mode:     m.opts.Mode,
		Workdir:  m.opts.Workdir,
		Session:  c.session,
		Reset:    in.Reset,
		Kind:     config.KindCLI,
		Approver: executor.ApproverFunc(ask),
		Output:   run.output,
	}
	m.runs.Add(1)
	go func() {
		defer m.runs.Done()
		defer cancel(nil)
		start := time.Now()
		res, err := m.ex.Execute(ctx, ereq)
		if err != nil {
			m.opts.Logf("mcp: execute_code: %v", err)
		}
		took := time.Since(start)
		m.opts.Logf("mcp: execute_code session=%s status=%s in %v", c.session, res.Status, took.Round(time.Millisecond))
		m.metrics.observe(res, took)
		if m.opts.ExecLog != nil {
			m.opts.ExecLog.Info("execution", "session", c.session, "mcp_session", req.Session.ID(), "mode", res.Mode,
				"status", res.Status, "duration_ms", float64(took.Microseconds())/1000, "tool_calls", res.ToolCallsMade)
		}
		run.res = res
		close(run.done)
	}()
	return run
}

// errNoElicitation is why a dangerous command cannot be approved when the
// client cannot be asked.
var errNoElicitation = errors.New("this MCP client does not support elicitation, so nobody can be asked; such commands run only with approvals.mode: off in the hermes-wasm-exec config")

// approver asks the user behind the MCP client to approve a dangerous
// command, with an elicitation: a request of its own on protocol versions
// before 2026-07-28, an input request of the call (handed to the waiting
// executeCode through run.asks) from that version on.
func (m *Server) approver(req *mcp.CallToolRequest, run *mcpRun) func(context.Context, executor.ApprovalRequest) (executor.Decision, error) {
	caps := req.ClientCapabilities()
	elicit := caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
	mrtr := req.ProtocolVersion() >= MRTRVersion
	ss := req.Session
	return func(ctx context.Context, ar executor.ApprovalRequest) (d executor.Decision, err error) {
		defer func() {
			switch {
			case errors.Is(err, errNoElicitation):
				m.metrics.approval("unavailable")
			case err != nil:
				m.metrics.approval("error")
			case d.Approved:
				m.metrics.approval("approved")
			default:
				m.metrics.approval("denied")
			}
		}()
		if !elicit {
			return executor.Decision{}, errNoElicitation
		}
		params := approvalQuestion(ar)
		var res *mcp.ElicitResult
		if !mrtr {
			var err error
			if res, err = ss.Elicit(ctx, params); err != nil {
				return executor.Decision{}, err
			}
		} else {
			ask := &mcpAsk{params: params, answer: make(chan *mcp.ElicitResult, 1)}
			select {
			case run.asks <- ask:
			case <-ctx.Done():
				return executor.Decision{}, context.Cause(ctx)
			}
			select {
			case res = <-ask.answer:
			case <-ctx.Done():
				return executor.Decision{}, context.Cause(ctx)
			}
			if res == nil {
				return executor.Decision{}, errors.New("the client retried the call without an answer")
			}
		}
		return approvalDecision(res), nil
	}
}

// approvalQuestion is the elicitation asking to approve ar.
func approvalQuestion(ar executor.ApprovalRequest) *mcp.ElicitParams {
	msg := "The script wants to run a command that needs approval"
	if ar.Reason != "" {
		msg += " (" + ar.Reason + ")"
	}
	msg += ":\n\n    " + ar.Command + "\n\nAccept to run it, decline to refuse it."
	if ar.Type == config.ApproveScript {
		msg = "Approve running this script?\n\n" + ar.Code
	}
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: msg,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"scope": map[string]any{
					"type":        "string",
					"title":       "Approve for",
					"description": "once: this command only; session: commands like it for the rest of this connection; always: while the server runs",
					"enum":        []string{config.ScopeOnce, config.ScopeSession, config.ScopeAlways},
					"default":     config.ScopeOnce,
				},
			},
		},
	}
}

// approvalDecision reads the client's answer: accept approves (with the
// scope chosen, once by default), decline and cancel refuse.
func approvalDecision(res *mcp.ElicitResult) executor.Decision {
	if res == nil || res.Action != "accept" {
		return executor.Decision{}
	}
	scope, _ := res.Content["scope"].(string)
	switch scope {
	case config.ScopeSession, config.ScopeAlways:
	default:
		scope = config.ScopeOnce
	}
	return executor.Decision{Approved: true, Scope: scope}
}

// mcpToolResult is execute_code's result: the output as text (with what a
// failure adds), the whole result as structured content, and isError for
// any status but success.
func mcpToolResult(res executor.Result) *mcp.CallToolResult {
	text := res.Output
	var extra []string
	if res.Status != config.StatusSuccess {
		extra = append(extra, "[status: "+res.Status+"]")
		if res.Error != "" && !strings.Contains(text, res.Error) {
			extra = append(extra, "error: "+res.Error)
		}
		if res.Hint != "" {
			extra = append(extra, "hint: "+res.Hint)
		}
	}
	if res.Warning != "" {
		extra = append(extra, "warning: "+res.Warning)
	}
	// The error of a call whose kernel was killed says so already.
	killed := res.Status == config.StatusTimeout || res.Status == config.StatusInterrupted
	if res.Kernel != nil && res.Kernel.Note != "" && !strings.Contains(res.Error, res.Kernel.Note) && !(killed && res.Kernel.Ended) {
		extra = append(extra, "note: "+res.Kernel.Note)
	}
	if len(extra) > 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += strings.Join(extra, "\n")
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: res,
		IsError:           res.Status != config.StatusSuccess,
	}
}
