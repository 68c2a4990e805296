// Command build checks or rebuilds the committed WASI CPython and its
// standard library in pyodide-assets/dist. Run from the repository root:
//
//	go run ./pyodide-assets/build [-dist DIR]                               # make assets
//	go run ./pyodide-assets/build -rebuild [-dist DIR] [-no-install] [-repin] # make assets-rebuild
//
// Without -rebuild it verifies the committed files and the recipe against
// the pins (seconds, no root). With -rebuild it builds both from Debian's
// source packages (see pyodide-assets/cpython/build.sh) inside a Debian
// trixie chroot and fails unless the bytes equal the pins; it needs root, and
// makes the chroot (debootstrap, the pinned toolchain) the first time,
// printing every command first. -repin accepts a new
// build, writes it to dist and prints the pins to commit. It exits with
// status 1 and the error on any failure.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
	"github.com/hermes-agent/hermes-wasm-exec/pyodide-assets/internal/assetbuild"
)

func main() {
	opts := assetbuild.BuildOptions{Log: os.Stderr}
	flag.StringVar(&opts.Dist, "dist", "pyodide-assets/dist", "the directory the binary embeds")
	rebuild := flag.Bool("rebuild", false, "rebuild from Debian's sources in a trixie chroot and check the bytes equal the pins (about 3 minutes; root)")
	noInstall := flag.Bool("no-install", false, "with -rebuild: use the cached build chroot only; never make one (debootstrap, apt-get)")
	flag.BoolVar(&opts.Repin, "repin", false, "with -rebuild: accept new hashes, write them to dist and print the pins to commit")
	flag.Parse()
	if flag.NArg() != 0 || (!*rebuild && (opts.Repin || *noInstall)) {
		fmt.Fprintf(os.Stderr, "build: unexpected arguments %q (-repin and -no-install go with -rebuild)\n", os.Args[1:])
		flag.Usage()
		os.Exit(2)
	}
	if !*rebuild {
		if err := pyodideassets.Check(opts.Dist); err != nil {
			fmt.Fprintf(os.Stderr, "build: %v\n", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "assets: %s matches the pins (python.wasm %s…, %s %s…, recipe %s…)\n",
			opts.Dist, pyodideassets.SHA256[:12], pyodideassets.StdlibName, pyodideassets.StdlibSHA256[:12], pyodideassets.RecipeSHA256[:16])
		return
	}
	opts.Install = !*noInstall
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := assetbuild.Build(ctx, opts)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n", err)
		os.Exit(1)
	}
}
