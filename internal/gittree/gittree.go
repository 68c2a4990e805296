// Package gittree copies the files git tracks in a checkout: what a module
// proxy or a release would be built from, without untracked or ignored
// build outputs. Tests use it to build this module from a pristine copy at
// another path.
package gittree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/internal/humanpath"
)

// installGit says how to install git on this platform.
func installGit() string {
	switch runtime.GOOS {
	case "windows":
		return "winget install Git.Git"
	case "darwin":
		return "xcode-select --install, or brew install git"
	}
	return "apt-get install git, or your distribution's git package"
}

// CopyTracked copies every regular file that git tracks in the checkout at
// root (`git ls-files`, with the working tree's contents, so uncommitted
// edits are included) into dst, keeping the relative paths, and returns
// how many it copied. Files deleted in the working tree and symlinks are
// left out. It fails with what to install when git is missing.
func CopyTracked(root, dst string) (int, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return 0, fmt.Errorf("git is not on PATH (install it: %s): %w", installGit(), err)
	}
	ls, err := exec.Command(git, "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return 0, fmt.Errorf("git ls-files in %s: %w", humanpath.Quote(root), err)
	}
	n := 0
	for _, name := range strings.Split(strings.TrimRight(string(ls), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		src := filepath.Join(root, filepath.FromSlash(name))
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return n, err
		}
		out := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return n, err
		}
		if err := os.WriteFile(out, b, fi.Mode().Perm()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
