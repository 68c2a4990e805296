// Command build makes sure pyodide-assets/dist holds the pinned WASI
// CPython and its standard library: kept if already there, copied from the
// build cache, or built from Debian source packages (see
// pyodide-assets/cpython/build.sh). "make assets" runs it from the
// repository root:
//
//	go run ./pyodide-assets/build [-dist pyodide-assets/dist] [-cache DIR] [-no-install] [-repin]
//
// As root it installs the pinned toolchain with apt-get when missing,
// printing every command first. It exits with status 1 and the error on any
// failure; dist is only written once a build has matched the pins.
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
	opts := pyodideassets.BuildOptions{Log: os.Stderr}
	flag.StringVar(&opts.Dist, "dist", "pyodide-assets/dist", "the directory the binary embeds")
	flag.StringVar(&opts.CacheDir, "cache", pyodideassets.DefaultCacheDir(), "where finished builds are kept, by recipe hash ($HERMES_ASSETS_CACHE)")
	noInstall := flag.Bool("no-install", false, "never run apt-get; report missing packages instead")
	flag.BoolVar(&opts.Repin, "repin", false, "rebuild, accept new hashes and print the pins to commit")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "build: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}
	opts.Install = !*noInstall
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := pyodideassets.Build(ctx, opts)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n", err)
		os.Exit(1)
	}
}
