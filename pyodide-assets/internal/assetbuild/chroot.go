package assetbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/pyodide-assets/internal/debroot"
)

// The build runs inside a Debian chroot of the recipe's suite
// (DEBIAN_SUITE, trixie): its toolchain (clang-19 with wasi-libc and the
// wasm32 runtime library, the build python of the target's version) is that
// suite's, whatever Debian or distribution the machine runs. The chroot is
// made once (debootstrap, then the pinned TOOLCHAIN installed in it, each
// command printed) and kept as a tarball in the user's cache, named after
// the suite and the toolchain line, so a change of either makes a new one.
// Every build unpacks it into a fresh directory and removes that after, so
// nothing a build leaves behind reaches the next.

// chrootTarball is the cached chroot for the recipe's suite and toolchain.
func chrootTarball() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("assetbuild: no cache directory for the build chroot: %w", err)
	}
	key := sha256.Sum256([]byte(recipeVar("DEBIAN_SUITE") + "\n" + recipeVar("TOOLCHAIN") + "\n" + aptSources()))
	return filepath.Join(cache, "hermes-wasm-exec", "assets-"+recipeVar("DEBIAN_SUITE")+"-"+hex.EncodeToString(key[:6])+".tar"), nil
}

// aptSources is the chroot's apt configuration: the suite's binary and
// source packages, and the source packages of the suites the recipe's
// SRC_ lines also take sources from (SOURCE_SUITES).
func aptSources() string {
	suite := recipeVar("DEBIAN_SUITE")
	var b strings.Builder
	b.WriteString("# Written by hermes-wasm-exec's `make assets-rebuild`.\n")
	entry := func(types, uri, suites string) {
		fmt.Fprintf(&b, "\nTypes: %s\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n", types, uri, suites)
	}
	entry("deb deb-src", "http://deb.debian.org/debian", suite+" "+suite+"-updates")
	entry("deb deb-src", "http://deb.debian.org/debian-security", suite+"-security")
	for _, s := range strings.Fields(recipeVar("SOURCE_SUITES")) {
		entry("deb-src", "http://deb.debian.org/debian", s+" "+s+"-updates")
		entry("deb-src", "http://deb.debian.org/debian-security", s+"-security")
	}
	return b.String()
}

// openChroot opens the build chroot (debroot.Open: unpacked from its
// cache, or made first unless opts.Install is false).
func openChroot(ctx context.Context, opts BuildOptions, logf func(string, ...any)) (*debroot.Root, error) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return nil, fmt.Errorf("assetbuild: the rebuild runs in a Debian %s chroot (debootstrap, chroot and mounts), which needs root on Linux: run `sudo make assets-rebuild`", recipeVar("DEBIAN_SUITE"))
	}
	tarball, err := chrootTarball()
	if err != nil {
		return nil, err
	}
	r, err := debroot.Open(ctx, debroot.Spec{
		Name: "the build chroot", Suite: recipeVar("DEBIAN_SUITE"), Sources: aptSources(),
		Packages: strings.Fields(recipeVar("TOOLCHAIN")), Tarball: tarball, Make: opts.Install,
		PinHint: "update TOOLCHAIN in pyodide-assets/cpython/recipe.env and re-pin",
	}, logf, opts.Log)
	if err != nil && !opts.Install {
		return nil, fmt.Errorf("%w (-no-install: run `sudo make assets-rebuild` once to make it)", err)
	}
	return r, err
}
