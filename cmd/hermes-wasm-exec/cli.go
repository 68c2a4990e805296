package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/strict"
)

// Version is the program's version. `make release` sets it with
// -ldflags "-X main.Version=..."; otherwise it is the module version Go
// recorded (`go install ...@v1.2.3` gives v1.2.3), or "devel" in a checkout
// (see version.go).
var Version = ""

// Commit is the VCS revision the binary was built from, set like Version;
// otherwise the one Go recorded (a build in a git checkout), if any.
var Commit = ""

// hostHeapLimit is the Go heap size at which a one-shot run collects
// garbage: the interpreter's standard library, tool results and the
// captured output fit well within it.
const hostHeapLimit = 256 << 20

// Exit codes.
const (
	exitOK     = 0 // status success
	exitFailed = 1 // any other status
	exitUsage  = 2 // usage or configuration error
)

const usage = `usage: hermes-wasm-exec <command> [flags]

commands:
  run [flags] SCRIPT.py|-   run a script and print its result JSON
  serve [flags]             serve execute/open_session/register_skill/describe/interrupt/
                            close_session over JSON-RPC 2.0 (one JSON object per line;
                            session kernels persist)
  mcp [flags]               serve the execute_code tool to an MCP client on stdin/stdout
                            (one session kernel per connection)
  doctor [--config [FILE]]  show the interpreter, caches, config and modes; with --config,
                            also which keys of the config file are used and which ignored
  bench [-n N]              measure start-up and tool round trips (prints a table)
  version                   print the version

run flags:
  --mode strict|project     execution mode (default: code_execution.mode)
  --config FILE             config file (default: $HERMES_HOME/config.yaml)
  --workdir DIR             session working dir the tools act on (default: .)
  --timeout SECONDS         wall-clock limit (default: code_execution.timeout)
  --max-tool-calls N        tool-call budget (default: code_execution.max_tool_calls)
  --log-level LEVEL         info (default) or debug
  --rpc-transport unix|tcp  project mode's tool channel (default: unix; tcp on Windows)
  --kind cli|gateway|automation
                            who drives the session (default: cli): gateway scripts need
                            approval before they run, automation ones follow
                            approvals.cron_mode (ask, deny or approve), cli ones need it only
                            for dangerous terminal() commands
  --yes                     approve everything for this run (approvals.mode off)
                            Without --yes, approvals are asked on the terminal when stdin is
                            one and the script is a file; otherwise nobody answers, and in
                            approvals.mode manual (the default) what needs approval is blocked.

serve flags:
  --listen unix:PATH        serve clients on a Unix socket (0600) instead of stdin/stdout
  --listen tcp:127.0.0.1:PORT
                            serve clients on loopback TCP (PORT 0: any free port); each
                            connection must first call authenticate with the token
  --token-file FILE         with tcp and no $HERMES_SERVE_TOKEN: write a generated token here
  --config FILE, --log-level LEVEL, --rpc-transport unix|tcp   as for run

mcp flags:
  --mode strict|project     where scripts run (default: code_execution.mode)
  --workdir DIR             working dir the tools act on (default: .)
  --config FILE             config file (default: $HERMES_HOME/config.yaml)
  --skill PATH              pass through the variables a skill declares in its SKILL.md
                            (required_environment_variables; PATH is the file or the skill's
                            dir); repeatable. Host-managed credentials are refused
  --skill-env NAME[,NAME]   pass through these skill variables; repeatable
  --log-level LEVEL         info (default) or debug; logs go to stderr (stdout is the protocol)
                            Dangerous terminal() commands are asked about through the client
                            (MCP elicitation); a client without it cannot approve them, so
                            they are blocked unless approvals.mode is off.
`

// Run is the whole program behind main, testable without a process: it
// returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(args[1:], stdin, stdout, stderr)
	case "serve":
		return serveCmd(args[1:], stdin, stdout, stderr)
	case "mcp":
		return mcpCmd(args[1:], stdin, stdout, stderr)
	case "doctor":
		return doctorCmd(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		printVersion(stdout)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "hermes-wasm-exec: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// parseInterspersed parses flags that may come before or after the
// positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func runCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	mode := fs.String("mode", "", "")
	cfgPath := fs.String("config", "", "")
	workdir := fs.String("workdir", "", "")
	timeout := fs.Float64("timeout", 0, "")
	maxCalls := fs.Int("max-tool-calls", -1, "")
	logLevel := fs.String("log-level", "info", "")
	transport := fs.String("rpc-transport", "", "")
	kind := fs.String("kind", config.KindCLI, "")
	yes := fs.Bool("yes", false, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "hermes-wasm-exec run: give exactly one script (a .py file, or - for stdin)\n\n%s", usage)
		return exitUsage
	}
	if *logLevel != "info" && *logLevel != "debug" {
		fmt.Fprintf(stderr, "hermes-wasm-exec run: --log-level must be info or debug, not %q\n", *logLevel)
		return exitUsage
	}
	if *timeout < 0 {
		fmt.Fprintf(stderr, "hermes-wasm-exec run: --timeout must be a positive number of seconds, not %v\n", *timeout)
		return exitUsage
	}
	if *transport != "" && *transport != native.TransportUnix && *transport != native.TransportTCP {
		fmt.Fprintf(stderr, "hermes-wasm-exec run: --rpc-transport must be unix or tcp, not %q\n", *transport)
		return exitUsage
	}
	switch *kind {
	case config.KindCLI, config.KindGateway, config.KindAutomation:
	default:
		fmt.Fprintf(stderr, "hermes-wasm-exec run: --kind must be cli, gateway or automation, not %q\n", *kind)
		return exitUsage
	}
	if *mode != "" {
		if _, ok := executor.NormalizeMode(*mode); !ok {
			fmt.Fprintf(stderr, "hermes-wasm-exec run: --mode must be strict or project, not %q\n", *mode)
			return exitUsage
		}
	}
	cfg, ok := loadConfig(*cfgPath, stderr, *logLevel)
	if !ok {
		return exitUsage
	}
	code, err := readScript(pos[0], stdin)
	if err != nil {
		fmt.Fprintf(stderr, "hermes-wasm-exec run: %v\n", err)
		return exitUsage
	}

	// A run is one short-lived process: collect garbage only when the heap
	// nears a bound, rather than every few megabytes while the interpreter
	// loads. This saves about a tenth of a second on every run. The bound
	// is the host's own room only: the guest's linear memory is a mapping
	// outside the Go heap (runtime/strict/memory.go), bounded by its own cap.
	debug.SetGCPercent(-1)
	limit := int64(hostHeapLimit)
	if strict.GuestMemoryInGoHeap {
		limit += int64(cfg.CodeExecution.MemoryLimitMB) << 20
	}
	debug.SetMemoryLimit(limit)

	logf := debugLogf(*logLevel, stderr)
	// Approvals: --yes approves everything; a user at a terminal is asked
	// there (unless the script itself comes from stdin); otherwise nobody
	// answers, and in approvals.mode "manual" whatever needs approval is
	// blocked.
	var approver executor.Approver
	if *yes {
		cfg.Approvals.Mode = config.ApprovalsOff
	} else if pos[0] != "-" && isTerminal(stdin) {
		approver = &promptApprover{in: stdin, out: stderr, kind: *kind}
	}
	ex := executor.New(executor.Options{Config: &cfg, Logf: logf, Warnf: warnLogf(stderr), Progress: stderr, RPCTransport: *transport, Approver: approver})
	defer ex.Close(context.Background())

	req := executor.Request{Code: code, Mode: *mode, Workdir: *workdir, Timeout: time.Duration(*timeout * float64(time.Second)), Kind: *kind}
	if *maxCalls >= 0 {
		req.MaxToolCalls = maxCalls
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel(&engine.InterruptError{Reason: "interrupted by the user (Ctrl-C)"})
		case <-ctx.Done():
		}
	}()

	res, err := ex.Execute(ctx, req)
	if err != nil {
		fmt.Fprintf(stderr, "hermes-wasm-exec: %v\n", err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if encErr := enc.Encode(res); encErr != nil {
		fmt.Fprintf(stderr, "hermes-wasm-exec: writing the result: %v\n", encErr)
		return exitFailed
	}
	if res.Status != config.StatusSuccess {
		return exitFailed
	}
	return exitOK
}

// maxScript bounds the size of a script.
const maxScript = 16 << 20

func readScript(name string, stdin io.Reader) (string, error) {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return "", fmt.Errorf("cannot read the script: %w", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return "", fmt.Errorf("%s is a directory: give a .py file", name)
		}
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxScript+1))
	if err != nil {
		return "", fmt.Errorf("cannot read the script: %w", err)
	}
	if len(b) > maxScript {
		return "", fmt.Errorf("the script is larger than %d MiB", maxScript>>20)
	}
	return strings.TrimPrefix(string(b), "\ufeff"), nil
}

// isTerminal reports whether r is a terminal (a character device).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// promptApprover asks the user at the terminal: the question on stderr,
// the answer a line on stdin. Questions are asked one at a time.
type promptApprover struct {
	in   io.Reader
	out  io.Writer
	kind string

	mu    sync.Mutex
	once  sync.Once
	lines chan string // stdin's lines, read by one goroutine
}

func (p *promptApprover) read() {
	sc := bufio.NewScanner(p.in)
	for sc.Scan() {
		p.lines <- sc.Text()
	}
	close(p.lines)
}

// Approve implements executor.Approver.
func (p *promptApprover) Approve(ctx context.Context, req executor.ApprovalRequest) (executor.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.once.Do(func() {
		p.lines = make(chan string, 16)
		go p.read()
	})
	// Drop whatever was typed before the question.
drain:
	for {
		select {
		case _, ok := <-p.lines:
			if !ok {
				break drain
			}
		default:
			break drain
		}
	}
	const choices = "[y]es once / [s]ession / [a]lways / [N]o: "
	if req.Type == config.ApproveScript {
		lines := strings.Count(strings.TrimRight(req.Code, "\n"), "\n") + 1
		fmt.Fprintf(p.out, "\nhermes-wasm-exec: scripts of %s sessions need approval before they run.\nApprove running this script (%d lines) in session %q? %s", p.kind, lines, req.Session, choices)
	} else {
		fmt.Fprintf(p.out, "\nhermes-wasm-exec: the script wants to run a command that needs approval (%s):\n    %s\nApprove this command? %s", req.Reason, displayCommand(req.Command), choices)
	}
	select {
	case line, ok := <-p.lines:
		if !ok {
			fmt.Fprintln(p.out, "\n(stdin is closed: not approved)")
			return executor.Decision{}, errors.New("stdin is closed")
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes", "o", "once":
			return executor.Decision{Approved: true, Scope: config.ScopeOnce}, nil
		case "s", "session":
			return executor.Decision{Approved: true, Scope: config.ScopeSession}, nil
		case "a", "always":
			return executor.Decision{Approved: true, Scope: config.ScopeAlways}, nil
		}
		return executor.Decision{Approved: false}, nil
	case <-ctx.Done():
		fmt.Fprintln(p.out, "\n(no answer in time: not approved)")
		return executor.Decision{}, context.Cause(ctx)
	}
}

// displayCommand makes a command safe to show at a prompt: control
// characters (a carriage return or an escape sequence could redraw the line
// as something harmless), and Unicode's invisible and direction-changing
// format characters are shown escaped, and each further line is indented
// like the first.
func displayCommand(cmd string) string {
	var b strings.Builder
	for _, r := range cmd {
		switch {
		case r == '\n':
			b.WriteString("\n    ")
		case r == '\t':
			b.WriteByte('\t')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// loadConfig loads the configuration (path "" means the default file) and
// prints its warnings; on an error it prints it and returns ok false (the
// caller exits 2). At log level debug (logLevel, when given) it also
// prints, once, the keys of the file it ignores (Hermes's own settings)
// and its notes, such as a value clamped to its minimum.
func loadConfig(path string, stderr io.Writer, logLevel ...string) (cfg config.Config, ok bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "hermes-wasm-exec: %v\n", err)
		return cfg, false
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "hermes-wasm-exec: warning: %s\n", w)
	}
	if len(logLevel) > 0 && logLevel[0] == "debug" {
		if s := cfg.IgnoredSummary(); s != "" {
			fmt.Fprintf(stderr, "debug: %s\n", s)
		}
		for _, n := range cfg.Notes {
			fmt.Fprintf(stderr, "debug: config: %s\n", n)
		}
	}
	return cfg, true
}

// debugLogf is the executor's log function for --log-level: lines prefixed
// "debug: " on stderr at debug, nothing at info.
func debugLogf(level string, stderr io.Writer) func(string, ...any) {
	if level != "debug" {
		return func(string, ...any) {}
	}
	return func(format string, a ...any) { fmt.Fprintf(stderr, "debug: "+format+"\n", a...) }
}

// warnLogf is the executor's function for warning events (a refused
// passthrough or skill variable): shown at every log level, as the config
// warnings are.
func warnLogf(stderr io.Writer) func(string, ...any) {
	return func(format string, a ...any) {
		fmt.Fprintf(stderr, "hermes-wasm-exec: warning: "+format+"\n", a...)
	}
}
