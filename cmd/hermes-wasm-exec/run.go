package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
	"golang.org/x/term"
)

// hostHeapLimit is the Go heap size at which a one-shot run collects
// garbage: the interpreter's standard library, tool results and the
// captured output fit well within it.
const hostHeapLimit = 256 << 20

// runCommand is `run`'s help and flags.
var runCommand = &cli.Command{
	Name: "run",
	Args: "SCRIPT.py|-",
	Summary: `Runs one script through the executor and prints its result JSON on stdout (status,
output, tool_calls_made, ...). The exit status is 0 when the script succeeded, 1 when
it did not (error, timeout, interrupt), 2 on a usage or configuration error. With -,
the script is read from stdin.`,
	Order: []string{"mode", "sandbox", "workdir", "config", "timeout", "max-tool-calls", "kind", "yes", "stream", "log-level", "rpc-transport"},
	Notes: `Without --yes, approvals are asked on the terminal when stdin is one and the script
is a file; otherwise nobody answers, and in approvals.mode manual (the default) what
needs approval is blocked. The working dir must exist. docs/run.md has the details.`,
	Examples: []string{
		"hermes-wasm-exec run --mode strict --workdir testdata/project testdata/examples/data_pipeline.py",
		"echo 'print(6 * 7)' | hermes-wasm-exec run --mode strict -",
		"hermes-wasm-exec run --workdir ~/project --timeout 2m analyse.py",
	},
}

// runCmd is `run`: one script through the executor, its result JSON on
// stdout.
func runCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := runCommand
	fs := c.FlagSet()
	var mode, sandbox, kind, logLevel, transport string
	kind, logLevel = config.KindCLI, "info"
	fs.Var(cli.EnumFlag{V: &mode, Allowed: []string{config.ModeStrict, config.ModeProject}}, "mode", "`strict|project` execution mode (default: code_execution.mode)")
	fs.Var(cli.EnumFlag{V: &sandbox, Allowed: []string{config.SandboxNone, config.SandboxWasm}}, "sandbox", "`none|wasm` with wasm, project mode runs the script in the embedded interpreter over the working dir, with the file tools' rules on its own file access (default: code_execution.sandbox)")
	cfgPath := fs.String("config", "", "`FILE` config file (default: $HERMES_HOME/config.yaml)")
	workdir := fs.String("workdir", "", "`DIR` the session's working dir, which the tools act on; it must exist (default: the current dir)")
	timeout := time.Duration(-1)
	fs.Var(cli.DurationFlag{D: &timeout}, "timeout", "`DURATION` wall-clock limit: seconds (30, 2.5) or a duration (90s, 2m), more than 0 and at most 24h (default: code_execution.timeout)")
	maxCalls := -1
	fs.Var(cli.IntFlag{N: &maxCalls, Min: 0}, "max-tool-calls", "`N` tool-call budget; 0 allows no tool call (default: code_execution.max_tool_calls)")
	fs.Var(cli.EnumFlag{V: &logLevel, Allowed: []string{"info", "debug"}}, "log-level", "`info|debug` what goes to stderr besides the result (default info)")
	fs.Var(cli.EnumFlag{V: &transport, Allowed: []string{native.TransportUnix, native.TransportTCP}}, "rpc-transport", "`unix|tcp` project mode's tool channel (default: unix; tcp on Windows)")
	fs.Var(cli.EnumFlag{V: &kind, Allowed: []string{config.KindCLI, config.KindGateway, config.KindAutomation}}, "kind", "`cli|gateway|automation` who drives the session: gateway scripts need approval before they run, automation ones follow approvals.cron_mode (ask, deny or approve), cli ones need it only for dangerous terminal() commands (default cli)")
	yes := fs.Bool("yes", false, "approve everything for this run (approvals.mode off)")
	stream := fs.Bool("stream", false, "copy what the script prints (stdout and stderr) to stderr as it prints it; stdout stays the JSON result alone")
	pos, code, ok := c.Parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.Fail(stderr, "give exactly one script (a .py file, or - for stdin)")
	}
	if *stream {
		// The script's output shares stderr with the logs.
		stderr = &cli.LockedWriter{W: stderr}
	}
	if timeout == 0 || timeout > 24*time.Hour {
		return c.Fail(stderr, "--timeout %s: give more than 0 and at most 24h (leave it out for code_execution.timeout)", timeout)
	}
	if *workdir != "" {
		if msg := cli.CheckWorkdir(*workdir); msg != "" {
			return c.Fail(stderr, "%s", msg)
		}
	}
	cfg, ok := cli.LoadConfig(*cfgPath, stderr, logLevel)
	if !ok || !cli.ApplySandbox("run", sandbox, &cfg, stderr) {
		return cli.ExitUsage
	}
	if pos[0] == "-" && isTerminal(stdin) {
		fmt.Fprintln(stderr, "hermes-wasm-exec run: reading the script from the terminal; end it with Ctrl-D (Ctrl-Z then Enter on Windows)")
	}
	script, err := readScript(pos[0], stdin)
	if err != nil {
		fmt.Fprintf(stderr, "hermes-wasm-exec run: %v\n", err)
		return cli.ExitUsage
	}

	// A run is one short-lived process: collect garbage only when the heap
	// nears a bound, rather than every few megabytes while the interpreter
	// loads. This saves about a tenth of a second on every run. The bound
	// is the host's own room only: the guest's linear memory is a mapping
	// outside the Go heap (executor.GuestMemoryInGoHeap), bounded by its own cap.
	debug.SetGCPercent(-1)
	limit := int64(hostHeapLimit)
	if executor.GuestMemoryInGoHeap {
		limit += int64(cfg.CodeExecution.MemoryLimitMB) << 20
	}
	debug.SetMemoryLimit(limit)

	// Approvals: --yes approves everything; a user at a terminal is asked
	// there (unless the script itself comes from stdin); otherwise nobody
	// answers, and in approvals.mode "manual" whatever needs approval is
	// blocked.
	var approver executor.Approver
	if *yes {
		cfg.Approvals.Mode = config.ApprovalsOff
	} else if pos[0] != "-" && isTerminal(stdin) {
		approver = &promptApprover{in: stdin, out: stderr, kind: kind}
	}
	ex := executor.New(executor.Options{Config: &cfg, Logger: cli.ExecutorLogger(logLevel, stderr), Progress: stderr, RPCTransport: transport, Approver: approver})
	defer ex.Close(context.Background())

	req := executor.Request{Code: script, Mode: mode, Workdir: *workdir, Kind: kind, ScriptName: pos[0]}
	if pos[0] == "-" {
		req.ScriptName = "<stdin>"
	}
	if timeout > 0 {
		req.Timeout = timeout
	}
	if maxCalls >= 0 {
		req.MaxToolCalls = &maxCalls
	}
	if *stream {
		// What the script prints (both streams) goes to stderr as it
		// comes, so that stdout stays the result alone; the result has it
		// too.
		req.Output = func(_ string, chunk []byte) { stderr.Write(chunk) }
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel(&executor.InterruptError{Reason: "interrupted by the user (Ctrl-C)"})
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
		return cli.ExitFailed
	}
	if res.Status != config.StatusSuccess {
		return cli.ExitFailed
	}
	return cli.ExitOK
}

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
	b, err := io.ReadAll(io.LimitReader(r, cli.MaxScript+1))
	if err != nil {
		return "", fmt.Errorf("cannot read the script: %w", err)
	}
	if len(b) > cli.MaxScript {
		return "", fmt.Errorf("the script is larger than %d MiB", cli.MaxScript>>20)
	}
	return strings.TrimPrefix(string(b), "\ufeff"), nil
}

// isTerminal reports whether r is a terminal (not merely a character
// device: /dev/null is one too, and nobody answers there).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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
