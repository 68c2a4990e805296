//go:build linux

package backendtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

const (
	// imageName is the test image's name in the private daemon.
	imageName = "hermes-test:bookworm-python3-full"
	// rootfsCache is the cached root file system's file name.
	rootfsCache = "backend-rootfs-bookworm-python3-full.tar"
	// debianMirror is where debootstrap fetches the image's packages.
	debianMirror = "http://deb.debian.org/debian"
	// dockerReady bounds a daemon's start.
	dockerReady = 60 * time.Second
	// dockerGrace is the time between SIGTERM and SIGKILL for dockerd.
	dockerGrace = 20 * time.Second
	// imagePath is the image's PATH: an imported image has none.
	imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

var dockerOnce once[*DockerEngine]

// Docker returns the process-wide private Docker engine, starting it (and
// importing the image) on first use. Run containers with --network none.
func Docker(tb testing.TB) *DockerEngine {
	tb.Helper()
	testenv.RealEngines(tb, "a private dockerd")
	return dockerOnce.get(tb, startDocker)
}

// Run runs the docker CLI against the engine with args and returns its
// stdout, trimmed; it fails tb, with the output, when the CLI fails.
func (d *DockerEngine) Run(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := command(stopCtx, d.Env, nil, d.Docker, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func startDocker() (*DockerEngine, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("backendtest: the Docker backend tests start a private dockerd, which needs root: run them as root")
	}
	watchSignals()
	paths, err := ensure("the Docker backend tests",
		tool{"dockerd", "/usr/sbin/dockerd", "docker.io"},
		tool{"docker", "/usr/bin/docker", "docker.io"})
	if err != nil {
		return nil, err
	}
	tarball, err := rootfsTarball()
	if err != nil {
		return nil, err
	}
	dir, err := tempDir("hwd-", "docker.pid")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "docker.sock")
	if len(sock) >= 108 {
		return nil, fmt.Errorf("backendtest: the daemon's socket path %s is too long for a Unix socket: set TMPDIR to a shorter dir", sock)
	}
	config := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(config, []byte("{}\n"), 0o600); err != nil {
		return nil, err
	}
	args := []string{
		"--iptables=false", "--ip6tables=false", "--ip-forward=false", "--bridge=none",
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"-H", "unix://" + sock, "--pidfile", filepath.Join(dir, "docker.pid"),
		"--config-file", config, "--group", "root",
	}
	if keyPathFlag(paths["dockerd"]) {
		// Docker 20.10 writes a key here, by default /etc/docker/key.json.
		args = append(args, "--deprecated-key-path", filepath.Join(dir, "key.json"))
	}
	// containerd and runc are in sbin dirs a PATH may lack.
	env := []string{"PATH=" + os.Getenv("PATH") + ":/usr/local/sbin:/usr/sbin:/sbin"}
	d, err := startDaemon("dockerd", filepath.Join(dir, "dockerd.log"), "API listen on "+sock, env, paths["dockerd"], args...)
	if err != nil {
		return nil, err
	}
	e := &DockerEngine{Host: "unix://" + sock, Image: imageName, Env: []string{"DOCKER_HOST=unix://" + sock}, Docker: paths["docker"]}
	stop := sync.OnceFunc(func() { stopDocker(e, d) })
	if !onStop(stop) {
		stop()
		return nil, errStopping
	}
	if err := d.ready(dockerReady); err != nil {
		stop()
		return nil, err
	}
	for _, args := range [][]string{
		{"version"},
		{"import", "--change", "ENV PATH=" + imagePath, tarball, imageName},
	} {
		if _, err := command(stopCtx, e.Env, nil, e.Docker, args...); err != nil {
			stop()
			if errors.Is(err, errStopping) {
				return nil, err
			}
			return nil, fmt.Errorf("backendtest: %w\nthe end of dockerd's log (%s):\n%s", err, d.logPath, fileTail(d.logPath, 20))
		}
	}
	return e, nil
}

// keyPathFlag reports whether dockerd has --deprecated-key-path (Docker
// 20.10; later ones keep no key).
func keyPathFlag(dockerd string) bool {
	_, err := command(stopCtx, nil, nil, dockerd, "--deprecated-key-path", os.DevNull, "--version")
	return err == nil
}

// stopDocker removes every container of the engine, then stops dockerd.
func stopDocker(e *DockerEngine, d *daemon) {
	select {
	case <-d.exited:
	default:
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ids, err := command(ctx, e.Env, nil, e.Docker, "ps", "-aq")
		if err == nil && strings.TrimSpace(ids) != "" {
			_, err = command(ctx, e.Env, nil, e.Docker, append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "backendtest: removing the containers: %v\n", err)
		}
	}
	d.stop(dockerGrace)
}

// rootfsTarball returns the cached root file system of the test image,
// building it with debootstrap if it is not cached yet.
func rootfsTarball() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("backendtest: no cache dir for the test image: %w", err)
	}
	cache := filepath.Join(base, "hermes-wasm-exec")
	tarball := filepath.Join(cache, rootfsCache)
	if _, err := os.Stat(tarball); err == nil {
		return tarball, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	// Test processes that start at once (go test ./...) take turns: the
	// first builds, the others find its tarball.
	lock, err := os.OpenFile(tarball+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("backendtest: locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(tarball); err == nil {
		return tarball, nil
	}
	paths, err := ensure("the Docker backend tests (to build their image)",
		tool{"debootstrap", "/usr/sbin/debootstrap", "debootstrap"})
	if err != nil {
		return "", err
	}
	root, err := os.MkdirTemp(cache, "rootfs-")
	if err != nil {
		return "", err
	}
	// debootstrap mounts /proc and more in root while it runs: removeDir
	// unmounts them first, should it be stopped half-way.
	if root, err = registerDir(root); err != nil {
		return "", err
	}
	defer removeDir(root)
	tmp, err := os.CreateTemp(cache, rootfsCache+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	os.Chmod(tmp.Name(), 0o644)
	if !onStop(func() { os.Remove(tmp.Name()) }) {
		os.Remove(tmp.Name())
		return "", errStopping
	}
	defer os.Remove(tmp.Name())
	for _, c := range [][]string{
		{paths["debootstrap"], "--variant=minbase", "--include=python3", "bookworm", root, debianMirror},
		// The downloaded packages and the package lists (50 MB) are of
		// no use in the image.
		{"tar", "--numeric-owner", "--exclude=./var/cache/apt/archives/*.deb", "--exclude=./var/lib/apt/lists/*",
			"-C", root, "-cf", tmp.Name(), "."},
	} {
		fmt.Fprintf(os.Stderr, "+ %s\n", testenv.CommandLine(c[0], c[1:]))
		if _, err := command(stopCtx, nil, nil, c[0], c[1:]...); err != nil {
			return "", fmt.Errorf("backendtest: building the test image's root file system: %w", err)
		}
	}
	if err := os.Rename(tmp.Name(), tarball); err != nil {
		return "", err
	}
	return tarball, nil
}

// PrepareImage builds the test image's root file system tarball unless it
// is cached, printing each command: make test runs it (through
// backendtest/prepare) before the tests, so that a first build shows in
// its output rather than inside a test's hidden log.
func PrepareImage() (string, error) { return rootfsTarball() }
