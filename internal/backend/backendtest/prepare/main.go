// Command prepare builds the remote backend tests' image (a debootstrapped
// root file system, cached under ~/.cache/hermes-wasm-exec/) unless it is
// cached, printing each command, installing debootstrap when missing. make
// test runs it before the tests.
package main

import (
	"fmt"
	"os"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
)

func main() {
	path, err := backendtest.PrepareImage()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if path != "" {
		fmt.Println("remote backend test image:", path)
	}
}
