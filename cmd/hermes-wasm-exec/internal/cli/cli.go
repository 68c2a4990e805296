// Package cli holds what the commands of hermes-wasm-exec share: the exit
// codes and usage text, flag and config loading helpers, the log function
// and the executor's logger for --log-level, the result of a refused
// execute_code call, a locked writer for a shared stderr, and the two
// protections of a long-lived front end (SIGPIPE caught, a reader that went
// away noticed). Only the command and its other internal packages import
// it.
package cli

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// Exit codes.
const (
	ExitOK     = 0 // status success
	ExitFailed = 1 // any other status
	ExitUsage  = 2 // usage or configuration error
)

// MaxScript bounds the size of a script (run's file or stdin, serve's
// code parameter).
const MaxScript = 16 << 20

// ShutdownGrace bounds how long serve and mcp wait for interrupted calls
// to report before the executor is closed under them.
const ShutdownGrace = 15 * time.Second

// Usage is the program's usage text: printed by help, and on a usage
// error.
const Usage = `usage: hermes-wasm-exec <command> [flags]

commands:
  run [flags] SCRIPT.py|-   run a script and print its result JSON
  serve [flags]             serve execute/open_session/register_skill/describe/interrupt/
                            close_session over JSON-RPC 2.0 (one JSON object per line;
                            session kernels persist)
  mcp [flags]               serve the execute_code tool to an MCP client on stdin/stdout,
                            or over HTTP with --http (one session kernel per MCP session)
  doctor [--config [FILE]]  show the interpreter, caches, config and modes; with --config,
                            also which keys of the config file are used and which ignored
  bench [-n N]              measure start-up and tool round trips (prints a table)
  packages install|list|verify --dir DIR [WHEEL...]
                            install local pure-Python wheels into a code_execution.wasm_packages
                            dir (checked against their RECORD; compiled ones refused)
  version                   print the version

run flags:
  --mode strict|project     execution mode (default: code_execution.mode)
  --sandbox none|wasm       with wasm, project mode runs the script in the embedded interpreter
                            over the working dir, with the file tools' rules on its own file
                            access (default: code_execution.sandbox)
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
  --token-file FILE         with tcp and no $HERMES_SERVE_TOKEN: the token is read from FILE
                            (which must be the user's own, mode 0600, not a symlink), or
                            generated and written there (0600) when FILE does not exist.
                            With neither, a token is generated into a private temp dir; its
                            path (never the token) is printed on stderr
  --auth-timeout DURATION   with tcp: a connection that has not authenticated within it is
                            closed (default 10s; 0: no limit)
  --max-unauthenticated N   with tcp: connections not yet authenticated that may be open at a
                            time; one more is closed at once (default 64; 0: no cap)
  --config FILE, --log-level LEVEL, --rpc-transport unix|tcp, --sandbox none|wasm
                            as for run

mcp flags:
  --mode strict|project     where scripts run (default: code_execution.mode)
  --sandbox none|wasm       as for run
  --workdir DIR             working dir the tools act on (default: .)
  --config FILE             config file (default: $HERMES_HOME/config.yaml)
  --skill PATH              pass through the variables a skill declares in its SKILL.md
                            (required_environment_variables; PATH is the file or the skill's
                            dir); repeatable. Host-managed credentials are refused
  --skill-env NAME[,NAME]   pass through these skill variables; repeatable
  --log-level LEVEL         info (default) or debug; logs go to stderr (stdout is the protocol)
  --log-format text|json    log lines as text (default) or JSON; json (and --http) also logs
                            one line per execution (session, mode, status, duration, tool calls)
  --http HOST:PORT          serve MCP's Streamable HTTP transport at /mcp instead of stdio,
                            with /healthz, /readyz and /metrics (Prometheus) on the same listener
                            (docs/service.md); PORT 0: any free port. /mcp and /metrics need
                            the bearer token (Authorization: Bearer ...), always
  --http unix:PATH          the same on a Unix socket (0600), which needs no token
  --token-file FILE         with --http HOST:PORT and no $HERMES_SERVE_TOKEN: as for serve (read
                            from FILE, or generated there; with neither, generated into a
                            private temp dir, its path printed on stderr)
  --auth-timeout DURATION   with --http: a request's headers must arrive within it (default 10s;
                            0: no limit)
  --idle-timeout DURATION   with --http: an authenticated keep-alive connection is closed after
                            this long without a request (default 5m; 0: no limit)
  --max-unauthenticated N   with --http: connections that have not sent the token that may be
                            open at a time (default 64; 0: no cap); until it sends the token a
                            connection is closed after each answer
  --drain-timeout DURATION  with --http, on SIGTERM: how long running calls may finish before
                            they are interrupted (default 30s; a second SIGTERM stops at once)
                            Dangerous terminal() commands are asked about through the client
                            (MCP elicitation); a client without it cannot approve them, so
                            they are blocked unless approvals.mode is off.
`

// NewFlagSet is the flag set of the command name: errors are returned
// (the caller exits 2), and its usage is the program's, on stderr.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, Usage) }
	return fs
}

// Failer returns the usage-error reporter of command name: it prints
// "hermes-wasm-exec NAME: <message>" to stderr and returns ExitUsage.
func Failer(name string, stderr io.Writer) func(format string, a ...any) int {
	return func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hermes-wasm-exec "+name+": "+format+"\n", a...)
		return ExitUsage
	}
}

// ParseServerFlags parses the flags of a server command (serve, mcp),
// which takes no positional argument and a --log-level of info or debug.
// ok is false when the command must exit with ExitUsage (fs or fail has
// said why).
func ParseServerFlags(fs *flag.FlagSet, args []string, logLevel *string, fail func(string, ...any) int) (ok bool) {
	pos, err := ParseInterspersed(fs, args)
	switch {
	case err != nil:
		return false
	case len(pos) > 0:
		fail("unexpected argument %q (%s takes only flags)", pos[0], fs.Name())
		return false
	case *logLevel != "info" && *logLevel != "debug":
		fail("--log-level must be info or debug, not %q", *logLevel)
		return false
	}
	return true
}

// ParseInterspersed parses flags that may come before or after the
// positional arguments.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
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

// LoadConfig loads the configuration (path "" means the default file) and
// prints its warnings; on an error it prints it and returns ok false (the
// caller exits 2). At log level debug (logLevel, when given) it also
// prints, once, the keys of the file it ignores (Hermes's own settings)
// and its notes, such as a value clamped to its minimum.
func LoadConfig(path string, stderr io.Writer, logLevel ...string) (cfg config.Config, ok bool) {
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

// DebugLogf is the front ends' log function for --log-level: lines
// prefixed "debug: " on stderr at debug, nothing at info.
func DebugLogf(level string, stderr io.Writer) func(string, ...any) {
	if level != "debug" {
		return func(string, ...any) {}
	}
	return func(format string, a ...any) { fmt.Fprintf(stderr, "debug: "+format+"\n", a...) }
}

// LockedWriter serializes writes to W (stderr is shared by logs and the
// executor's progress notices).
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W, one call at a time.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// CatchSIGPIPE makes a write to a closed stdout or stderr fail with EPIPE
// instead of killing the process, which is Go's default for those two
// descriptors: serve and mcp outlive a client that went away, and close
// their kernels and temp dirs before they exit. The signal is caught, not
// ignored, so the processes a script starts get the default disposition
// back at exec. Call the returned function to restore the default.
func CatchSIGPIPE() (restore func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	return func() { signal.Stop(ch) }
}

// IsLoopbackHost reports whether host (of a HOST:PORT listen address) is
// a loopback address: 127.0.0.0/8, ::1 or "localhost".
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ApplySandbox sets cfg's code_execution.sandbox from a --sandbox flag's
// value (none or wasm; "" leaves the config's). An unknown value is
// refused, with the valid ones: false after saying so on stderr as cmd.
func ApplySandbox(cmd, value string, cfg *config.Config, stderr io.Writer) bool {
	if value == "" {
		return true
	}
	v, ok := config.NormalizeSandbox(value)
	if !ok || strings.TrimSpace(value) == "" {
		fmt.Fprintf(stderr, "hermes-wasm-exec %s: --sandbox must be none or wasm, not %q\n", cmd, value)
		return false
	}
	cfg.CodeExecution.Sandbox = v
	return true
}
