// Command hermes-wasm-exec runs agent-written Python scripts that call
// tools through the generated hermes_tools module, and prints only the
// result JSON. See README.md for the commands.
package main

import (
	"os"

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
