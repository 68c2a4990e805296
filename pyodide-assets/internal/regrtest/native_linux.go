package regrtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The native reference runs the same runner, over the same test package, in
// Debian trixie's own python3.13 of the same version: a trixie chroot
// (debootstrap --variant=minbase, then the pinned python3.13 and
// libpython3.13-testsuite installed with apt-get, each command printed),
// made once and kept as a tarball in the user cache dir, named after the
// pins, so a change of either makes a new one. Every run unpacks it into a
// fresh dir, mounts /proc, /dev and a private /dev/shm in it, and removes
// all of it at the end, after killing whatever still runs in it.

// nativePackages are the chroot's pinned packages.
var nativePackages = []string{
	"python3.13=" + DebianVersion,
	"libpython3.13-testsuite=" + DebianVersion,
}

// nativeTarball is the cached chroot.
func nativeTarball() (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "regrtest-"+suite+"-python3.13_"+DebianVersion+".tar"), nil
}

// suite is the Debian suite of the interpreter and of the chroot.
const suite = "trixie"

// aptSources is the chroot's apt configuration: the suite, its updates
// and its security updates (where a +debNNuN version is served first).
const aptSources = `# Written by hermes-wasm-exec's make compat-cpython.

Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`

// Chroot is an unpacked native chroot with its mounts.
type Chroot struct {
	dir  string
	logf func(string, ...any)
	log  io.Writer
}

// OpenChroot unpacks the cached native chroot (making it first when there
// is none) into a fresh dir and mounts /proc, /dev and /dev/shm in it.
// Close undoes all of it.
func OpenChroot(ctx context.Context, logf func(string, ...any), log io.Writer) (*Chroot, error) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return nil, errors.New("regrtest: the native reference runs in a Debian trixie chroot (debootstrap, chroot and mounts), which needs root on Linux: run `sudo make compat-cpython`, or pass -native=false to run strict mode alone")
	}
	tarball, err := nativeTarball()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hermes-regrtest-chroot-")
	if err != nil {
		return nil, fmt.Errorf("regrtest: %w", err)
	}
	c := &Chroot{dir: dir, logf: logf, log: log}
	// MkdirTemp's 0700 would keep the chroot's unprivileged users (apt's
	// _apt, and nobody, who runs the tests) out of its root.
	if err := os.Chmod(dir, 0o755); err != nil {
		c.Close()
		return nil, fmt.Errorf("regrtest: %w", err)
	}
	if _, err := os.Stat(tarball); err != nil {
		if err := c.make(ctx, tarball); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	logf("unpacking the native chroot %s", tarball)
	if err := c.host(ctx, "tar", "-C", dir, "-xf", tarball); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.mount(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// make builds the chroot in c.dir, saves it as tarball and mounts it.
func (c *Chroot) make(ctx context.Context, tarball string) error {
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		debootstrap = "/usr/sbin/debootstrap"
		if _, err := os.Stat(debootstrap); err != nil {
			return errors.New("regrtest: debootstrap is missing: install it (sudo apt-get install debootstrap) and run again")
		}
	}
	if err := c.host(ctx, debootstrap, "--variant=minbase", suite, c.dir, "http://deb.debian.org/debian"); err != nil {
		return err
	}
	c.logf("writing /etc/apt/sources.list.d/debian.sources in the chroot")
	os.Remove(filepath.Join(c.dir, "etc/apt/sources.list"))
	if err := os.WriteFile(filepath.Join(c.dir, "etc/apt/sources.list.d/debian.sources"), []byte(aptSources), 0o644); err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	if err := c.mount(ctx); err != nil {
		return err
	}
	if err := c.runRoot(ctx, "apt-get", "update"); err != nil {
		return err
	}
	if err := c.runRoot(ctx, append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, nativePackages...)...); err != nil {
		return fmt.Errorf("%w (Debian may no longer serve the pinned version: update DebianVersion in pyodide-assets/internal/regrtest with the interpreter)", err)
	}
	if err := c.runRoot(ctx, "apt-get", "clean"); err != nil {
		return err
	}
	c.unmount()
	if err := os.MkdirAll(filepath.Dir(tarball), 0o755); err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	tmp := tarball + ".tmp"
	if err := c.host(ctx, "tar", "-C", c.dir, "-cf", tmp, "."); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, tarball); err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	return c.mount(ctx)
}

// mount mounts /proc, binds /dev (made private, so nothing mounted under
// it reaches the host's) and the host's /dev/pts (pseudo-terminals, for
// pty, os.openpty and pdb's tests), and mounts a tmpfs of its own at
// /dev/shm (POSIX semaphores, for multiprocessing's tests).
func (c *Chroot) mount(ctx context.Context) error {
	if err := c.host(ctx, "mount", "-t", "proc", "proc", filepath.Join(c.dir, "proc")); err != nil {
		return err
	}
	dev := filepath.Join(c.dir, "dev")
	if err := c.host(ctx, "mount", "--bind", "/dev", dev); err != nil {
		return err
	}
	if err := c.host(ctx, "mount", "--make-private", dev); err != nil {
		return err
	}
	if err := c.host(ctx, "mount", "--bind", "/dev/pts", filepath.Join(dev, "pts")); err != nil {
		return err
	}
	return c.host(ctx, "mount", "-t", "tmpfs", "-o", "mode=1777,size=512m", "tmpfs", filepath.Join(dev, "shm"))
}

// unmount kills what still runs in the chroot, then unmounts /dev/pts,
// /dev/shm, /dev and /proc.
func (c *Chroot) unmount() {
	c.killAll()
	for _, m := range []string{"dev/pts", "dev/shm", "dev", "proc"} {
		p := filepath.Join(c.dir, m)
		if exec.Command("mountpoint", "-q", p).Run() != nil {
			continue
		}
		if exec.Command("umount", p).Run() != nil {
			c.killAll() // a process may have started since
			if exec.Command("umount", p).Run() != nil {
				_ = exec.Command("umount", "-l", p).Run()
			}
		}
	}
}

// killAll kills every process whose root is the chroot.
func (c *Chroot) killAll() {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if root, err := os.Readlink(p + "/root"); err == nil && root == c.dir {
			_ = exec.Command("kill", "-9", filepath.Base(p)).Run()
		}
	}
}

// Close unmounts and removes the chroot.
func (c *Chroot) Close() {
	c.unmount()
	os.RemoveAll(c.dir)
}

// host runs a command on the host, printing it first.
func (c *Chroot) host(ctx context.Context, name string, args ...string) error {
	c.logf("running: %s %s", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("regrtest: %s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// runRoot runs a command as root inside the chroot with a clean
// environment, printing it first.
func (c *Chroot) runRoot(ctx context.Context, args ...string) error {
	c.logf("running in the chroot: %s", strings.Join(args, " "))
	full := append([]string{c.dir, "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}, args...)
	cmd := exec.CommandContext(ctx, "chroot", full...)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("regrtest: in the native chroot, %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// nativeEnv is the environment of a native run: as strict mode's guest
// has it (UTF-8 mode, a private TMPDIR), for the user nobody.
var nativeEnv = []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "PYTHONUTF8=1", "TMPDIR=/tmp"}

// Run runs script with the chroot's python3.13 as the user nobody, in a
// fresh dir of the chroot's /tmp that it removes after, within timeout.
// Its process group is killed at the timeout, and every process left in
// the chroot after it. It returns stdout, the tail of stderr, whether the
// timeout ended it, and the exit error (nil, or an *exec.ExitError).
func (c *Chroot) Run(ctx context.Context, script string, timeout time.Duration) (stdout, stderr string, timedOut bool, err error) {
	work, err := os.MkdirTemp(filepath.Join(c.dir, "tmp"), "regrtest-")
	if err != nil {
		return "", "", false, fmt.Errorf("regrtest: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "runner.py"), []byte(script), 0o644); err != nil {
		return "", "", false, fmt.Errorf("regrtest: %w", err)
	}
	// nobody owns its working dir, as a user's own dir; 65534 is nobody
	// and nogroup in Debian.
	if err := os.Chown(work, 65534, 65534); err != nil {
		return "", "", false, fmt.Errorf("regrtest: %w", err)
	}
	guest := "/tmp/" + filepath.Base(work)
	args := append([]string{"--userspec=nobody:nogroup", c.dir, "/usr/bin/env", "-i"}, nativeEnv...)
	// -m, as regrtest runs as `python -m test`: __main__ has a spec.
	args = append(args, "/bin/sh", "-c", `cd "$1" && exec python3.13 -m runner`, "sh", guest)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "chroot", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out strings.Builder
	errTail := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = &out, errTail
	err = cmd.Run()
	timedOut = ctx.Err() == context.DeadlineExceeded
	// A test may leave processes of its own behind (daemons, a killed
	// parent's children): none outlives its module.
	c.killAll()
	return out.String(), errTail.String(), timedOut, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
