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

	"github.com/hermes-agent/hermes-wasm-exec/pyodide-assets/internal/debroot"
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

// Chroot is an unpacked native chroot with its mounts (debroot.Root:
// /proc, /dev, /dev/pts for pty's and pdb's tests, /dev/shm for
// multiprocessing's).
type Chroot struct{ *debroot.Root }

// OpenChroot unpacks the cached native chroot (making it first when there
// is none) into a fresh dir and mounts it. Close undoes all of it.
func OpenChroot(ctx context.Context, logf func(string, ...any), log io.Writer) (*Chroot, error) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return nil, errors.New("regrtest: the native reference runs in a Debian trixie chroot (debootstrap, chroot and mounts), which needs root on Linux: run `sudo make compat-cpython`, or pass -native=false to run strict mode alone")
	}
	tarball, err := nativeTarball()
	if err != nil {
		return nil, err
	}
	r, err := debroot.Open(ctx, debroot.Spec{
		Name: "the native chroot", Suite: suite, Sources: aptSources, Packages: nativePackages,
		Tarball: tarball, Make: true,
		PinHint: "update DebianVersion in pyodide-assets/internal/regrtest with the interpreter",
	}, logf, log)
	if err != nil {
		return nil, err
	}
	return &Chroot{r}, nil
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
	work, err := os.MkdirTemp(filepath.Join(c.Dir, "tmp"), "regrtest-")
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
	args := append([]string{"--userspec=nobody:nogroup", c.Dir, "/usr/bin/env", "-i"}, nativeEnv...)
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
	c.KillAll()
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
