//go:build linux

package backendtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// tool is a program an engine needs and the Debian package that has it.
type tool struct {
	name string // looked up on PATH
	path string // where the package puts it, for a PATH without sbin
	pkg  string
}

// installMu makes the engines install one at a time (apt-get holds a
// lock of its own anyway).
var installMu sync.Mutex

// ensure returns the paths of tools by name, first installing the
// packages of the missing ones with apt-get when this process is root.
// Its error says what to install.
func ensure(what string, tools ...tool) (map[string]string, error) {
	installMu.Lock()
	defer installMu.Unlock()
	paths, missing := find(tools)
	if len(missing) == 0 {
		return paths, nil
	}
	pkgs := strings.Join(missing, " ")
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("backendtest: %s need %s: install it (sudo apt-get install --no-install-recommends %s), "+
			"or run the tests as root, which installs it", what, pkgs, pkgs)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil, fmt.Errorf("backendtest: %s need the Debian packages %s, and there is no apt-get to install them: "+
			"install their equivalents", what, pkgs)
	}
	if err := aptInstall(missing); err != nil {
		return nil, fmt.Errorf("backendtest: %s need %s, and installing it failed (run apt-get update && "+
			"apt-get install -y --no-install-recommends %s): %w", what, pkgs, pkgs, err)
	}
	paths, missing = find(tools)
	if len(missing) > 0 {
		return nil, fmt.Errorf("backendtest: apt-get installed %s, but a program of it is still missing", strings.Join(missing, " "))
	}
	return paths, nil
}

// find looks tools up, and lists the packages of the missing ones.
func find(tools []tool) (map[string]string, []string) {
	paths := map[string]string{}
	var missing []string
	for _, t := range tools {
		p, err := exec.LookPath(t.name)
		if err != nil {
			if st, serr := os.Stat(t.path); serr == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				p, err = t.path, nil
			}
		}
		if err != nil {
			if !slices.Contains(missing, t.pkg) {
				missing = append(missing, t.pkg)
			}
			continue
		}
		paths[t.name] = p
	}
	return paths, missing
}

// aptInstall installs pkgs, and when that fails (no package lists yet, or
// stale ones) updates the lists and tries again.
func aptInstall(pkgs []string) error {
	install := append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)
	err := apt(install...)
	if err == nil {
		return nil
	}
	if uerr := apt("update"); uerr != nil {
		return errors.Join(err, uerr)
	}
	return apt(install...)
}

// apt runs apt-get with args, non-interactively, printing the command to
// stderr first.
func apt(args ...string) error {
	fmt.Fprintf(os.Stderr, "+ %s\n", testenv.CommandLine("apt-get", args))
	_, err := command(stopCtx, []string{"DEBIAN_FRONTEND=noninteractive"}, nil, "apt-get", args...)
	return err
}

// Program returns the path of the program name (or path, where its Debian
// package pkg puts it), installing pkg first when it is missing, as the
// engines' tools are; tb fails saying what to install when it cannot be.
func Program(tb testing.TB, name, path, pkg string) string {
	tb.Helper()
	testenv.RealEngines(tb, name+" ("+pkg+", installed with apt-get as root)")
	paths, err := ensure("these tests", tool{name, path, pkg})
	if err != nil {
		tb.Fatal(err)
	}
	return paths[name]
}
