package backend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

// The docker backend drives the engine through the docker CLI, not the
// Engine API: the CLI already resolves DOCKER_HOST, contexts, TLS and
// credentials, and podman's CLI is a drop-in for it (RATIONALE.md).

// Docker labels of the containers this backend starts.
const (
	labelOwner      = "hermes-wasm-exec"            // "1" on every one
	labelSession    = "hermes-wasm-exec.session"    // the session it serves
	labelConfig     = "hermes-wasm-exec.config"     // hash of what it was started with
	labelPersistent = "hermes-wasm-exec.persistent" // "true" or "false"
	labelHost       = "hermes-wasm-exec.host"       // hostname of the process that started it
	labelPID        = "hermes-wasm-exec.pid"        // its pid, for reaping
)

// DockerOptions configures a docker backend (the terminal.docker_* and
// container_* keys; docs/backends/docker.md).
type DockerOptions struct {
	// CLI is the docker (or podman) client to run; empty means "docker".
	CLI string
	// ClientEnv is the client's whole environment (PATH, HOME,
	// DOCKER_HOST, ...: engine.ClientEnv builds it); nil means an empty
	// one. The client never gets this process's environment.
	ClientEnv []string
	// Image is the image the container runs.
	Image string
	// Network false runs the container with --network none.
	Network bool
	// Volumes are -v arguments ("host:container[:ro]").
	Volumes []string
	// Env is set in every command in the container (docker_env and the
	// values of docker_forward_env), shipped over stdin.
	Env []string
	// ExtraArgs are added to docker run before the image.
	ExtraArgs []string
	// CPU is --cpus (0: no limit); MemoryMB is --memory in MiB (0: none).
	CPU      float64
	MemoryMB int
	// Persistent keeps the container when the backend closes, for the next
	// process to reuse; otherwise it is removed.
	Persistent bool
	// Cwd is the working dir in the container; empty means /root.
	Cwd string
	// Session names the session the container serves; empty means the
	// executor's shared one ("default").
	Session string
}

type dockerTransport struct {
	cli       string
	clientEnv []string
	container string
}

func (t *dockerTransport) command(ctx context.Context, argv []string) *exec.Cmd {
	c := exec.CommandContext(ctx, t.cli, append([]string{"exec", "-i", t.container}, argv...)...)
	c.Env = clientEnv(t.clientEnv)
	return c
}

// ContainerName is the container a docker backend with opts uses: one per
// session and configuration, shared by every process when persistent,
// private to this process otherwise.
func ContainerName(opts DockerOptions) string {
	session := opts.Session
	if session == "" {
		session = "default"
	}
	slug := regexp.MustCompile(`[^a-zA-Z0-9_.-]+`).ReplaceAllString(session, "-")
	if len(slug) > 40 {
		slug = slug[:40]
	}
	sum := sha256.Sum256([]byte(session + "\x00" + dockerConfigHash(opts)))
	name := "hermes-wasm-exec-"
	if !opts.Persistent {
		name += strconv.Itoa(os.Getpid()) + "-"
	}
	return name + strings.Trim(slug, "-.") + "-" + hex.EncodeToString(sum[:4])
}

// dockerConfigHash identifies what a container was started with; a
// persistent container started with something else is replaced.
func dockerConfigHash(opts DockerOptions) string {
	parts := []string{opts.Image, strconv.FormatBool(opts.Network), strings.Join(opts.Volumes, "\x01"),
		strings.Join(opts.ExtraArgs, "\x01"), strconv.FormatFloat(opts.CPU, 'g', -1, 64), strconv.Itoa(opts.MemoryMB)}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// NewDocker returns a docker backend, its container started (or found
// running, or restarted) and probed.
func NewDocker(ctx context.Context, opts DockerOptions) (Backend, error) {
	if opts.CLI == "" {
		opts.CLI = "docker"
	}
	if opts.Image == "" {
		return nil, fmt.Errorf("the docker backend needs an image (terminal.docker_image)")
	}
	if opts.Cwd == "" {
		opts.Cwd = config.DefaultDockerCwd
	}
	cli, err := exec.LookPath(opts.CLI)
	if err != nil {
		return nil, fmt.Errorf("the docker backend needs the docker CLI (%s) on PATH: install Docker (Debian: apt-get install docker.io) or podman and set terminal.docker_cli, or use another terminal.backend: %w", opts.CLI, err)
	}
	d := &docker{opts: opts, cli: cli, name: ContainerName(opts)}
	d.reapOrphans(ctx)
	if _, err := d.ensure(ctx); err != nil {
		return nil, err
	}
	r := &remote{name: "docker", target: d.name, cwd: opts.Cwd, extraEnv: opts.Env, makeCwd: true,
		tr: &dockerTransport{cli: cli, clientEnv: opts.ClientEnv, container: d.name}}
	r.onClose = d.close
	r.goneTexts = []string{"No such container", "is not running"}
	r.revive = func(ctx context.Context) (bool, error) {
		started, err := d.ensure(ctx)
		if err != nil || !started {
			return false, err
		}
		// A new container lacks the working dir the probe made.
		_, err = r.run(ctx, Command{Argv: []string{"mkdir", "-p", "--", r.cwd}, Dir: "/"})
		return true, err
	}
	if err := r.probe(ctx); err != nil {
		d.close()
		return nil, err
	}
	return r, nil
}

type docker struct {
	opts DockerOptions
	cli  string
	name string
}

// run runs the docker CLI and returns its trimmed stdout, or an error with
// its stderr.
func (d *docker) run(ctx context.Context, args ...string) (string, error) {
	c := exec.CommandContext(ctx, d.cli, args...)
	c.Env = clientEnv(d.opts.ClientEnv)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := proctree.Run(ctx, c); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("docker %s: %s", args[0], msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// ensure starts the container unless it runs with the same configuration;
// started reports whether it had to (a new container, or a stopped one
// started again).
func (d *docker) ensure(ctx context.Context) (started bool, err error) {
	want := dockerConfigHash(d.opts)
	for attempt := 0; attempt < 3; attempt++ {
		state, err := d.run(ctx, "container", "inspect", "-f", `{{.State.Running}} {{index .Config.Labels "`+labelConfig+`"}}`, d.name)
		switch {
		case err != nil && !strings.Contains(strings.ToLower(err.Error()), "no such"):
			return false, fmt.Errorf("the docker backend cannot reach the engine: %w", err)
		case err != nil:
			if _, err := d.run(ctx, d.runArgs(want)...); err != nil {
				if strings.Contains(err.Error(), "already in use") {
					continue // another process started it first
				}
				return false, fmt.Errorf("the docker backend could not start a container from %s: %w", d.opts.Image, err)
			}
			return true, nil
		case !strings.HasSuffix(state, " "+want):
			// Started with another configuration: replace it.
			if _, err := d.run(ctx, "rm", "-f", d.name); err != nil {
				return false, err
			}
		case strings.HasPrefix(state, "true "):
			return false, nil
		default:
			if _, err := d.run(ctx, "start", d.name); err != nil {
				return false, fmt.Errorf("the docker backend could not restart container %s: %w", d.name, err)
			}
			return true, nil
		}
	}
	return false, fmt.Errorf("the docker backend could not start container %s: it keeps changing under us", d.name)
}

// idleCommand keeps a container alive doing nothing; it ends on SIGTERM.
const idleCommand = `trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done`

func (d *docker) runArgs(configHash string) []string {
	o := d.opts
	host, _ := os.Hostname()
	args := []string{"run", "-d", "--init", "--name", d.name,
		"--label", labelOwner + "=1",
		"--label", labelSession + "=" + sessionOrDefault(o.Session),
		"--label", labelConfig + "=" + configHash,
		"--label", labelPersistent + "=" + strconv.FormatBool(o.Persistent),
		"--label", labelHost + "=" + host,
		"--label", labelPID + "=" + strconv.Itoa(os.Getpid()),
	}
	if !o.Network {
		args = append(args, "--network", "none")
	}
	if o.CPU > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(o.CPU, 'g', -1, 64))
	}
	if o.MemoryMB > 0 {
		args = append(args, "--memory", strconv.Itoa(o.MemoryMB)+"m")
	}
	for _, v := range o.Volumes {
		args = append(args, "-v", v)
	}
	args = append(args, o.ExtraArgs...)
	return append(args, "--entrypoint", "sh", o.Image, "-c", idleCommand)
}

func sessionOrDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

func (d *docker) close() error {
	if d.opts.Persistent {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30e9)
	defer cancel()
	_, err := d.run(ctx, "rm", "-f", d.name)
	return err
}

// reapOrphans removes non-persistent containers this host started from
// processes that are gone (a crash, a kill -9): nothing else removes them.
func (d *docker) reapOrphans(ctx context.Context) {
	host, _ := os.Hostname()
	out, err := d.run(ctx, "ps", "-a", "--filter", "label="+labelPersistent+"=false", "--filter", "label="+labelHost+"="+host,
		"--format", `{{.Names}} {{.Label "`+labelPID+`"}}`)
	if err != nil || out == "" {
		return
	}
	var dead []string
	for _, line := range strings.Split(out, "\n") {
		name, pidText, _ := strings.Cut(line, " ")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if processGone(pid) {
			dead = append(dead, name)
		}
	}
	if len(dead) > 0 {
		sort.Strings(dead)
		d.run(ctx, append([]string{"rm", "-f"}, dead...)...)
	}
}
