// Command hermes-wasm-exec runs agent-written Python scripts that call
// tools through the generated hermes_tools module, and prints only the
// result JSON. See README.md and docs/run.md for the commands.
//
// This package is the dispatcher (Run) and the short commands: run,
// doctor, bench and version, each through runtime/executor. serve and mcp
// live in internal/serve (on the JSON-RPC peer of internal/jsonrpc) and
// internal/mcpserver; what the commands share is in internal/cli.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/mcpserver"
	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/serve"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

func main() {
	harden()
	os.Exit(Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// harden applies every process-wide protection before anything else runs
// (SECURITY.md): secrets out of the initial environment (this re-executes
// the binary once), non-dumpable, and orphans of a run adopted and killed.
// A protection that cannot be applied is reported on stderr and the
// program goes on without it.
func harden() {
	for _, err := range executor.HardenProcess(executor.Hardening{HideSecrets: true, NonDumpable: true, ReapOrphans: true}) {
		os.Stderr.WriteString("hermes-wasm-exec: warning: " + err.Error() +
			" (going on without it; SECURITY.md says what this protection is for)\n")
	}
}

// Version is the program's version. `make release` sets it with
// -ldflags "-X main.Version=..."; otherwise it is the module version Go
// recorded (`go install ...@v1.2.3` gives v1.2.3), or "devel" in a checkout
// (see version.go).
var Version = ""

// Commit is the VCS revision the binary was built from, set like Version;
// otherwise the one Go recorded (a build in a git checkout), if any.
var Commit = ""

// Run is the whole program behind main, testable without a process: it
// returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, cli.Usage)
		return cli.ExitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(args[1:], stdin, stdout, stderr)
	case "serve":
		return serve.Main(args[1:], stdin, stdout, stderr)
	case "mcp":
		return mcpserver.Main(args[1:], stdin, stdout, stderr, versionOnce().version)
	case "doctor":
		return doctorCmd(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "packages":
		return packagesCmd(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		if len(args) > 1 && args[0] == "version" && args[1] != "--help" && args[1] != "-h" {
			fmt.Fprintf(stderr, "hermes-wasm-exec version: unexpected argument %q (version takes none)\n", args[1])
			return cli.ExitUsage
		}
		if len(args) > 1 {
			fmt.Fprint(stdout, "usage: hermes-wasm-exec version\n\nPrints the version, the Go toolchain and the embedded interpreter.\n")
			return cli.ExitOK
		}
		printVersion(stdout)
		return cli.ExitOK
	case "help", "-h", "--help":
		if len(args) > 1 {
			if args[1] == "help" {
				fmt.Fprint(stdout, cli.Usage)
				return cli.ExitOK
			}
			if !slices.Contains(commands, args[1]) {
				fmt.Fprintf(stderr, "hermes-wasm-exec help: unknown command %q; the commands: %s\n", args[1], strings.Join(commands, ", "))
				return cli.ExitUsage
			}
			return Run([]string{args[1], "--help"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, cli.Usage)
		return cli.ExitOK
	}
	fmt.Fprintf(stderr, "hermes-wasm-exec: unknown command %q; the commands: %s\nsee: hermes-wasm-exec help\n", args[0], strings.Join(commands, ", "))
	return cli.ExitUsage
}

// commands are the program's commands, for help and the unknown-command
// error.
var commands = []string{"run", "serve", "mcp", "doctor", "bench", "packages", "version", "help"}
