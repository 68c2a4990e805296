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

// Usage is the program's usage text: printed by help, and with no
// command. Each command has its own help (CMD --help, help CMD).
const Usage = `usage: hermes-wasm-exec <command> [flags]

commands:
  run [flags] SCRIPT.py|-   run a script and print its result JSON
  serve [flags]             serve execute, sessions and skills over JSON-RPC 2.0 (stdin/stdout
                            or a socket; session kernels persist)
  mcp [flags]               serve the execute_code tool to an MCP client on stdin/stdout, or
                            over HTTP with --http (one session kernel per MCP session)
  doctor [--config [FILE]]  show the interpreter, caches, config and modes
  bench [--n N]             measure start-up, tool round trips and compute (prints a table)
  packages install|list|verify --dir DIR [WHEEL...]
                            manage a dir of pure-Python wheels for code_execution.wasm_packages
  version                   print the version
  help [COMMAND]            this text, or a command's help (the same as COMMAND --help)

hermes-wasm-exec COMMAND --help shows a command's flags and examples. docs/run.md, docs/serve.md
and docs/mcp.md have the details.
`

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
