// Command hermes-wasm-exec runs agent-written Python scripts that call
// tools through the generated hermes_tools module, and prints only the
// result JSON. See README.md for the commands.
package main

import "os"

func main() {
	os.Exit(Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
