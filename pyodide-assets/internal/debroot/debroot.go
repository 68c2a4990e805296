// Package debroot makes, caches and opens Debian chroots for the
// interpreter's rebuild (assetbuild, `make assets-rebuild`) and the native
// side of CPython's regression tests (regrtest, `make compat-cpython`): a
// root made once with debootstrap and the pinned packages, kept as a
// tarball in the user's cache, unpacked into a fresh directory for each use
// and removed after, with everything that ran in it killed and its mounts
// undone first. Linux and root only; nothing at run time imports it.
package debroot

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Spec says which root to open.
type Spec struct {
	Name     string   // what the root is for, in messages: "the build chroot"
	Suite    string   // the Debian suite debootstrap makes
	Sources  string   // the root's /etc/apt/sources.list.d/debian.sources
	Packages []string // installed (name=version pins) when the root is made
	Tarball  string   // the cached root
	// Make lets Open make the root when Tarball is missing; without it that
	// is an error saying so.
	Make bool
	// PinHint is added to a failed install's error: what to update.
	PinHint string
}

// Root is an unpacked root with its mounts: /proc, /dev (bound, made
// private), the host's /dev/pts and a tmpfs of its own at /dev/shm.
type Root struct {
	Dir  string
	logf func(string, ...any)
	log  io.Writer
}

// Open unpacks spec's cached root into a fresh directory (making it first
// when there is none and spec.Make) and mounts it. Close undoes all of it.
func Open(ctx context.Context, spec Spec, logf func(string, ...any), log io.Writer) (*Root, error) {
	dir, err := os.MkdirTemp("", "hermes-debroot-")
	if err != nil {
		return nil, fmt.Errorf("debroot: %w", err)
	}
	r := &Root{Dir: dir, logf: logf, log: log}
	// MkdirTemp's 0700 would keep the root's unprivileged users (apt's
	// _apt, nobody) out of it.
	if err := os.Chmod(dir, 0o755); err != nil {
		r.Close()
		return nil, fmt.Errorf("debroot: %w", err)
	}
	if _, err := os.Stat(spec.Tarball); err == nil {
		logf("unpacking %s %s", spec.Name, spec.Tarball)
		err = r.Host(ctx, "tar", "-C", dir, "-xf", spec.Tarball)
		if err == nil {
			err = r.mount(ctx)
		}
		if err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	if !spec.Make {
		r.Close()
		return nil, fmt.Errorf("debroot: no %s at %s, and it may not be made here", spec.Name, spec.Tarball)
	}
	if err := r.make(ctx, spec); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// make builds the root in r.Dir, saves it as spec.Tarball and mounts it.
func (r *Root) make(ctx context.Context, spec Spec) error {
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		debootstrap = "/usr/sbin/debootstrap"
		if _, err := os.Stat(debootstrap); err != nil {
			if err := r.Host(ctx, "apt-get", "install", "-y", "--no-install-recommends", "debootstrap"); err != nil {
				return fmt.Errorf("%w (install debootstrap: sudo apt-get install debootstrap)", err)
			}
		}
	}
	if err := r.Host(ctx, debootstrap, "--variant=minbase", spec.Suite, r.Dir, "http://deb.debian.org/debian"); err != nil {
		return err
	}
	r.logf("writing /etc/apt/sources.list.d/debian.sources in %s", spec.Name)
	os.Remove(filepath.Join(r.Dir, "etc/apt/sources.list"))
	if err := os.WriteFile(filepath.Join(r.Dir, "etc/apt/sources.list.d/debian.sources"), []byte(spec.Sources), 0o644); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	if err := r.mount(ctx); err != nil {
		return err
	}
	if err := r.Run(ctx, "apt-get", "update"); err != nil {
		return err
	}
	if err := r.Run(ctx, append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, spec.Packages...)...); err != nil {
		return fmt.Errorf("%w (Debian may no longer serve a pinned version: %s)", err, spec.PinHint)
	}
	if err := r.Run(ctx, "apt-get", "clean"); err != nil {
		return err
	}
	r.unmount()
	if err := os.MkdirAll(filepath.Dir(spec.Tarball), 0o755); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	tmp := spec.Tarball + ".tmp"
	if err := r.Host(ctx, "tar", "-C", r.Dir, "-cf", tmp, "."); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, spec.Tarball); err != nil {
		return fmt.Errorf("debroot: %w", err)
	}
	return r.mount(ctx)
}

// mount mounts /proc, binds /dev (made private, so nothing mounted under
// it reaches the host's) and the host's /dev/pts (pseudo-terminals), and
// mounts a tmpfs of its own at /dev/shm (POSIX semaphores).
func (r *Root) mount(ctx context.Context) error {
	dev := filepath.Join(r.Dir, "dev")
	for _, m := range [][]string{
		{"-t", "proc", "proc", filepath.Join(r.Dir, "proc")},
		{"--bind", "/dev", dev},
		{"--make-private", dev},
		{"--bind", "/dev/pts", filepath.Join(dev, "pts")},
		{"-t", "tmpfs", "-o", "mode=1777,size=512m", "tmpfs", filepath.Join(dev, "shm")},
	} {
		if err := r.Host(ctx, "mount", m...); err != nil {
			return err
		}
	}
	return nil
}

// mounts are the root's mount points, innermost first.
var mounts = []string{"dev/pts", "dev/shm", "dev", "proc"}

// unmount kills what still runs in the root, then undoes its mounts.
func (r *Root) unmount() {
	r.KillAll()
	for _, m := range mounts {
		p := filepath.Join(r.Dir, m)
		if !mounted(p) {
			continue
		}
		if exec.Command("umount", p).Run() != nil {
			r.KillAll() // a process may have started since
			time.Sleep(time.Second)
			if exec.Command("umount", p).Run() != nil {
				_ = exec.Command("umount", "-l", p).Run()
			}
		}
	}
}

func mounted(p string) bool { return exec.Command("mountpoint", "-q", p).Run() == nil }

// KillAll kills every process whose root is r.
func (r *Root) KillAll() {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if root, err := os.Readlink(p + "/root"); err == nil && root == r.Dir {
			_ = exec.Command("kill", "-9", filepath.Base(p)).Run()
		}
	}
}

// Close unmounts and removes the root. A mount that would not go keeps
// the directory: removing it would remove what is mounted there (the
// host's /dev).
func (r *Root) Close() {
	r.unmount()
	for _, m := range mounts {
		if p := filepath.Join(r.Dir, m); mounted(p) {
			r.logf("warning: %s is still mounted; %s is left in place (umount it, then remove it)", p, r.Dir)
			return
		}
	}
	os.RemoveAll(r.Dir)
}

// Host runs a command on the host, printing it first.
func (r *Root) Host(ctx context.Context, name string, args ...string) error {
	r.logf("running: %s %s", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdout, cmd.Stderr = r.log, r.log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debroot: %s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// Run runs a command as root inside r with a clean environment, printing
// it first.
func (r *Root) Run(ctx context.Context, args ...string) error {
	r.logf("running in the chroot: %s", strings.Join(args, " "))
	full := append([]string{r.Dir, "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}, args...)
	cmd := exec.CommandContext(ctx, "chroot", full...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debroot: in the chroot, %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
