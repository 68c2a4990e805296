package assetbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
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

// chroot is a Debian root the build runs in.
type chroot struct {
	dir  string
	logf func(string, ...any)
	log  io.Writer
}

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

// openChroot unpacks the cached chroot (making it first when there is
// none, unless opts.Install is false) into a new directory and mounts /proc
// and /dev in it. close undoes all of it.
func openChroot(ctx context.Context, opts BuildOptions, logf func(string, ...any)) (*chroot, error) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return nil, fmt.Errorf("assetbuild: the rebuild runs in a Debian %s chroot (debootstrap, chroot and mounts), which needs root on Linux: run `sudo %s`", recipeVar("DEBIAN_SUITE"), "make assets-rebuild")
	}
	tarball, err := chrootTarball()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hermes-assets-chroot-")
	if err != nil {
		return nil, fmt.Errorf("assetbuild: %w", err)
	}
	c := &chroot{dir: dir, logf: logf, log: opts.Log}
	// MkdirTemp's 0700 would keep the chroot's unprivileged users (apt's
	// _apt) out of its root.
	if err := os.Chmod(dir, 0o755); err != nil {
		c.close()
		return nil, fmt.Errorf("assetbuild: %w", err)
	}
	if _, err := os.Stat(tarball); err == nil {
		logf("unpacking the build chroot %s", tarball)
		if err := c.host(ctx, "tar", "-C", dir, "-xf", tarball); err != nil {
			c.close()
			return nil, err
		}
		if err := c.mount(ctx); err != nil {
			c.close()
			return nil, err
		}
		return c, nil
	}
	if !opts.Install {
		c.close()
		return nil, fmt.Errorf("assetbuild: no build chroot at %s and -no-install: run `sudo make assets-rebuild` once to make it", tarball)
	}
	if err := c.make(ctx, tarball); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// make builds the chroot in c.dir and saves it as tarball.
func (c *chroot) make(ctx context.Context, tarball string) error {
	suite := recipeVar("DEBIAN_SUITE")
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/debootstrap"); serr != nil {
			if err := c.host(ctx, "apt-get", "install", "-y", "--no-install-recommends", "debootstrap"); err != nil {
				return fmt.Errorf("%w (install debootstrap: sudo apt-get install debootstrap)", err)
			}
		}
		debootstrap = "/usr/sbin/debootstrap"
	}
	if err := c.host(ctx, debootstrap, "--variant=minbase", suite, c.dir, "http://deb.debian.org/debian"); err != nil {
		return err
	}
	c.logf("writing /etc/apt/sources.list.d/debian.sources in the chroot")
	os.Remove(filepath.Join(c.dir, "etc/apt/sources.list"))
	if err := os.WriteFile(filepath.Join(c.dir, "etc/apt/sources.list.d/debian.sources"), []byte(aptSources()), 0o644); err != nil {
		return fmt.Errorf("assetbuild: %w", err)
	}
	if err := c.mount(ctx); err != nil {
		return err
	}
	if err := c.run(ctx, "apt-get", "update"); err != nil {
		return err
	}
	if err := c.run(ctx, append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, strings.Fields(recipeVar("TOOLCHAIN"))...)...); err != nil {
		return fmt.Errorf("%w (Debian may no longer serve a pinned version: update TOOLCHAIN in pyodide-assets/cpython/recipe.env and re-pin)", err)
	}
	if err := c.run(ctx, "apt-get", "clean"); err != nil {
		return err
	}
	c.unmount()
	if err := os.MkdirAll(filepath.Dir(tarball), 0o755); err != nil {
		return fmt.Errorf("assetbuild: %w", err)
	}
	tmp := tarball + ".tmp"
	if err := c.host(ctx, "tar", "-C", c.dir, "-cf", tmp, "."); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, tarball); err != nil {
		return fmt.Errorf("assetbuild: %w", err)
	}
	return c.mount(ctx)
}

// mount mounts /proc and binds /dev in the chroot.
func (c *chroot) mount(ctx context.Context) error {
	if err := c.host(ctx, "mount", "-t", "proc", "proc", filepath.Join(c.dir, "proc")); err != nil {
		return err
	}
	return c.host(ctx, "mount", "--bind", "/dev", filepath.Join(c.dir, "dev"))
}

// unmount kills what still runs in the chroot, then unmounts /dev and
// /proc.
func (c *chroot) unmount() {
	if procs, _ := filepath.Glob("/proc/[0-9]*"); procs != nil {
		for _, p := range procs {
			if root, err := os.Readlink(p + "/root"); err == nil && root == c.dir {
				if pid := filepath.Base(p); pid != "" {
					_ = exec.Command("kill", "-9", pid).Run()
				}
			}
		}
	}
	for _, m := range []string{"dev", "proc"} {
		p := filepath.Join(c.dir, m)
		if exec.Command("mountpoint", "-q", p).Run() != nil {
			continue
		}
		if exec.Command("umount", p).Run() != nil {
			time.Sleep(time.Second) // a process killed above may still hold it
			if exec.Command("umount", p).Run() != nil {
				_ = exec.Command("umount", "-l", p).Run()
			}
		}
	}
}

// close unmounts and removes the chroot. A mount that would not go keeps
// the directory: removing it would remove what is mounted there (the
// host's /dev).
func (c *chroot) close() {
	c.unmount()
	for _, m := range []string{"dev", "proc"} {
		if exec.Command("mountpoint", "-q", filepath.Join(c.dir, m)).Run() == nil {
			c.logf("warning: %s is still mounted; the chroot %s is left in place (umount it, then remove it)", filepath.Join(c.dir, m), c.dir)
			return
		}
	}
	os.RemoveAll(c.dir)
}

// host runs a command on the host, printing it first.
func (c *chroot) host(ctx context.Context, name string, args ...string) error {
	c.logf("running: %s %s", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("assetbuild: %s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// run runs a command inside the chroot with a clean environment, printing
// it first.
func (c *chroot) run(ctx context.Context, args ...string) error {
	c.logf("running in the chroot: %s", strings.Join(args, " "))
	full := append([]string{c.dir, "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}, args...)
	cmd := exec.CommandContext(ctx, "chroot", full...)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("assetbuild: in the build chroot, %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
