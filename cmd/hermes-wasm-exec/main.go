// Command hermes-wasm-exec runs agent-written Python scripts that call
// tools through the generated hermes_tools module, and prints only the
// result JSON. See README.md and docs/run.md for the commands.
package main

import (
	"os"
	"os/signal"
	"syscall"

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

// catchSIGPIPE makes a write to a closed stdout or stderr fail with EPIPE
// instead of killing the process, which is Go's default for those two
// descriptors: serve and mcp outlive a client that went away, and close
// their kernels and temp dirs before they exit. The signal is caught, not
// ignored, so the processes a script starts get the default disposition
// back at exec. Call the returned function to restore the default.
func catchSIGPIPE() (restore func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	return func() { signal.Stop(ch) }
}
