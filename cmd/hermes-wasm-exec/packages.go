package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/internal/wheel"
)

// packagesUsage is the usage of `packages`.
const packagesUsage = `usage: hermes-wasm-exec packages install --dir DIR WHEEL.whl...
       hermes-wasm-exec packages list --dir DIR
       hermes-wasm-exec packages verify --dir DIR

Installs pure-Python wheels (local .whl files; nothing is downloaded) into DIR for the WASI
interpreter: list DIR in code_execution.wasm_packages and strict mode and the sandboxed project
mode import them. Each wheel is checked against its RECORD, refused when it holds compiled code,
and recorded with its sha256 in DIR/hermes-packages.json; verify checks the files against it.
`

// packagesCmd is `packages`: install, list or verify a wasm_packages dir.
func packagesCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stderr
		code := cli.ExitUsage
		if len(args) > 0 {
			w, code = stdout, cli.ExitOK
		}
		fmt.Fprint(w, packagesUsage)
		return code
	}
	sub := args[0]
	if sub != "install" && sub != "list" && sub != "verify" {
		fmt.Fprintf(stderr, "hermes-wasm-exec packages: unknown subcommand %q; use install, list or verify\nsee: hermes-wasm-exec packages --help\n", sub)
		return cli.ExitUsage
	}
	c := &cli.Command{Name: "packages " + sub, Summary: packagesUsage}
	if sub == "install" {
		c.Args = "WHEEL.whl..."
	}
	fs := c.FlagSet()
	dir := fs.String("dir", "", "`DIR` the package dir to list in code_execution.wasm_packages")
	pos, code, ok := c.Parse(fs, args[1:], stdout, stderr)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int { return c.Fail(stderr, format, a...) }
	if *dir == "" {
		return fail("--dir DIR is required (the package dir to list in code_execution.wasm_packages)")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fail("%v", err)
	}
	switch sub {
	case "install":
		if len(pos) == 0 {
			return fail("give the wheels to install (.whl files)")
		}
		for _, w := range pos {
			p, err := wheel.Install(abs, w)
			if err != nil {
				fmt.Fprintf(stderr, "hermes-wasm-exec packages install: %v\n", err)
				return cli.ExitFailed
			}
			fmt.Fprintf(stdout, "installed %s %s (%d files, sha256 %s) into %s\n", p.Name, p.Version, len(p.Files), p.SHA256, abs)
		}
		fmt.Fprintf(stdout, "list %s in code_execution.wasm_packages to import it in strict mode and the sandboxed project mode\n", abs)
	case "list", "verify":
		if len(pos) > 0 {
			return fail("unexpected argument %q", pos[0])
		}
		m, err := wheel.ReadManifest(abs)
		if err != nil {
			return fail("%v", err)
		}
		if sub == "list" {
			for _, p := range m.Packages {
				fmt.Fprintf(stdout, "%s %s  %s  sha256 %s  (%d files)\n", p.Name, p.Version, p.Wheel, p.SHA256, len(p.Files))
			}
			return cli.ExitOK
		}
		problems, err := wheel.Verify(abs)
		if err != nil {
			return fail("%v", err)
		}
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
		}
		if len(problems) > 0 {
			return cli.ExitFailed
		}
		fmt.Fprintf(stdout, "%d packages, every file as installed\n", len(m.Packages))
	}
	return cli.ExitOK
}
