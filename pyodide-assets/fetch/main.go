// Command fetch downloads the pinned Python interpreter, verifies it, strips
// its custom sections and writes it where the pyodideassets package embeds it.
// "make assets" runs it from the repository root:
//
//	go run ./pyodide-assets/fetch [-dest pyodide-assets/dist/python.wasm]
//
// It needs npm on PATH, is idempotent (a verified file already at -dest is
// kept), and exits with status 1 and the error on any failure.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

func main() {
	dest := flag.String("dest", "pyodide-assets/dist/python.wasm", "where to write the stripped, verified interpreter")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "fetch: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := pyodideassets.Fetch(ctx, *dest, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fetch: %v\n", err)
		os.Exit(1)
	}
}
