package backend

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

// A remote backend runs every command as `sh -c wrapper` in the target,
// through a transport that turns that argv into a local client command
// (docker exec -i, ssh, or a configured prefix). The wrapper is fixed text:
// what varies (the environment, the working dir, the command) travels as
// the first line of the command's stdin, a base64 shell script the wrapper
// reads with the shell's own read builtin (which never reads past the
// line, so the rest of stdin is the command's) and evaluates. So values of
// variables never appear on a command line, on the host or in the target.
//
// Every command also gets HERMES_RUN=<random marker> in its environment.
// Stopping a command stops every process in the target that carries the
// marker (its whole tree, also what detached from it), found through
// /proc, then the local client: killing only the client would leave the
// remote command running (docker exec and ssh do not forward it).

// remoteWrapper is the program every remote command runs as `sh -c`. It
// must stay free of single quotes and backslashes: the ssh transport quotes
// it for the remote login shell.
const remoteWrapper = `IFS= read -r h || exit 125; eval "$(printf %s "$h" | base64 -d)"`

// runMarkerVar carries a command's marker.
const runMarkerVar = "HERMES_RUN"

// remoteReap defines reap MARKER TENTHS: it stops every process whose
// environment holds HERMES_RUN=MARKER except the shell running it (one grep
// over /proc/*/environ): SIGTERM, then, for up to TENTHS tenths of a second,
// waits for them to go, then SIGKILL. Zombies have an empty environ and are
// not counted.
const remoteReap = `reap() {
  k() { f=; for e in $(grep -lzxF -- "HERMES_RUN=$1" /proc/[0-9]*/environ 2>/dev/null); do e=${e#/proc/}; e=${e%/environ}; [ "$e" = "$$" ] && continue; kill -$2 "$e" 2>/dev/null && f=1; done; }
  k "$1" TERM; n=0; while [ -n "$f" ] && [ "$n" -lt "$2" ]; do sleep 0.1; k "$1" 0; n=$((n+1)); done; [ -n "$f" ] && k "$1" KILL; :
}
`

// transport builds the local client command that runs argv in the target
// with stdin, stdout and stderr connected.
type transport interface {
	command(ctx context.Context, argv []string) *exec.Cmd
}

// hostOnlyEnv are variables that describe this host, not the target: a
// remote command gets the target's own values (its login environment).
var hostOnlyEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true,
	"OLDPWD": true, "TMPDIR": true, "TMP": true, "TEMP": true, "HOSTNAME": true, "MAIL": true,
	"PYTHONPATH": true, "PYTHONHOME": true, "VIRTUAL_ENV": true,
}

// remote is the backend behind docker, ssh and exec.
type remote struct {
	name, target string
	cwd          string
	home         string
	tr           transport
	// extraEnv is set in every command (docker_env, forwarded variables).
	extraEnv []string
	// pythonAgent: the target has python3, which serves files without
	// forking (agent.py); the sh agent otherwise.
	pythonAgent bool
	onClose     func() error
	// makeCwd has the probe create an absolute cwd that does not exist
	// (docker: as docker run -w would; the image rarely has it).
	makeCwd bool

	// revive brings the target back when it is gone (docker: a removed or
	// stopped container is started again) and reports whether it was; nil
	// when there is nothing to do.
	revive func(context.Context) (bool, error)
	// goneTexts are what the client prints when the target is gone
	// ("No such container"); seeing one sets suspectGone, and the next
	// Start revives the target first.
	goneTexts   []string
	suspectGone atomic.Bool

	agentMu     sync.Mutex
	agent       *agent
	agentFailed bool // the last agent died
	closed      bool
}

func (r *remote) Name() string   { return r.name }
func (r *remote) Target() string { return r.target }
func (r *remote) Remote() bool   { return true }
func (r *remote) Cwd() string    { return r.cwd }
func (r *remote) Home() string   { return r.home }
func (r *remote) FS() FS         { return remoteFS{r} }

// probe learns the target's home dir and resolves the default working
// dir: "" means the dir commands start in, "~" and "~/..." the home dir.
// It checks the target is reachable and has a POSIX shell and base64.
func (r *remote) probe(ctx context.Context) error {
	var out, errb bytes.Buffer
	argv := []string{"sh", "-c", probeScript}
	if r.makeCwd && strings.HasPrefix(r.cwd, "/") {
		argv = []string{"sh", "-c", `mkdir -p -- "$1" || exit 1; ` + probeScript, "sh", r.cwd}
	}
	code, err := r.run(ctx, Command{Argv: argv, Dir: ".", Stdout: &out, Stderr: &errb})
	if err != nil {
		return err
	}
	if code != 0 || errb.Len() > 0 {
		return fmt.Errorf("the %s backend (%s) did not answer a probe (exit %d): %s", r.name, r.target, code, strings.TrimSpace(errb.String()))
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		return fmt.Errorf("the %s backend (%s) answered a probe with %q", r.name, r.target, out.String())
	}
	r.home = lines[0]
	r.pythonAgent = lines[2] == "py"
	switch {
	case r.cwd == "" || r.cwd == ".":
		r.cwd = lines[1]
	case r.cwd == "~":
		r.cwd = r.home
	case strings.HasPrefix(r.cwd, "~/"):
		r.cwd = strings.TrimSuffix(r.home, "/") + r.cwd[1:]
	}
	return nil
}

// probeScript prints the target's home, its working dir and which file
// agent it can run (py: python3 is there; sh otherwise), and complains
// when base64 is missing.
const probeScript = `printf '%s\n%s\n' "$HOME" "$(pwd)"
if command -v python3 >/dev/null 2>&1 && python3 -S -c 'import base64, tempfile' >/dev/null 2>&1; then echo py; else echo sh; fi
command -v base64 >/dev/null || echo "no base64" >&2`

// goneDetector passes a client's output on and watches it for r.goneTexts.
type goneDetector struct {
	w io.Writer
	r *remote
}

func (g *goneDetector) Write(p []byte) (int, error) {
	for _, t := range g.r.goneTexts {
		if bytes.Contains(p, []byte(t)) {
			g.r.suspectGone.Store(true)
		}
	}
	return g.w.Write(p)
}

// Revive brings the target back if it is gone (a docker container removed
// or stopped under a session: started again, its working dir made) and
// reports whether it was gone. Callers use it when a command or the file
// agent failed in a way that suggests so; it is cheap when the target is
// there.
func (r *remote) Revive(ctx context.Context) (bool, error) {
	if r.revive == nil {
		return false, nil
	}
	return r.revive(ctx)
}

// run runs cmd and waits for it.
func (r *remote) run(ctx context.Context, cmd Command) (int, error) {
	p, err := r.Start(ctx, cmd)
	if err != nil {
		return -1, err
	}
	return p.Wait()
}

// header is the script a wrapper evaluates: the environment, the working
// dir and the command, with the command's marker.
func (r *remote) header(cmd Command, marker string) (string, error) {
	var b strings.Builder
	// The backend's own variables (docker_env, forwarded ones) win.
	env := append(append([]string{}, cmd.Env...), r.extraEnv...)
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(k) || hostOnlyEnv[k] {
			continue
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	fmt.Fprintf(&b, "export %s=%s\n", runMarkerVar, marker)
	dir := cmd.Dir
	if dir == "" {
		dir = r.cwd
	}
	if dir != "." && dir != "" {
		fmt.Fprintf(&b, "cd -- %s || exit 126\n", shellQuote(dir))
	}
	if cmd.Stdout != nil && cmd.Stdout == cmd.Stderr {
		b.WriteString("exec 2>&1\n")
	}
	switch {
	case len(cmd.Argv) > 0:
		b.WriteString("set --")
		for _, a := range cmd.Argv {
			b.WriteString(" " + shellQuote(a))
		}
		b.WriteString("\n\"$@\"\n")
	case cmd.Shell != "":
		fmt.Fprintf(&b, "sh -c %s\n", shellQuote(cmd.Shell))
	default:
		return "", errors.New("backend: a command needs Argv or Shell")
	}
	// What the command left running goes with it, as on this host.
	fmt.Fprintf(&b, "s=$?\n%sreap %s %d\nexit $s\n", remoteReap, marker, tenths(DefaultGrace))
	return base64.StdEncoding.EncodeToString([]byte(b.String())) + "\n", nil
}

func (r *remote) Start(ctx context.Context, cmd Command) (Process, error) {
	if r.suspectGone.Swap(false) {
		// A client said the target was gone: bring it back first.
		r.Revive(ctx)
	}
	marker := newMarker()
	hdr, err := r.header(cmd, marker)
	if err != nil {
		return nil, err
	}
	c := r.tr.command(context.WithoutCancel(ctx), []string{"sh", "-c", remoteWrapper})
	c.Stdout, c.Stderr = cmd.Stdout, cmd.Stderr
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if len(r.goneTexts) > 0 {
		// The client says so on stderr when the target is gone; one writer
		// for both streams stays one (exec.Cmd then copies them in order).
		d := &goneDetector{w: c.Stderr, r: r}
		if c.Stdout == c.Stderr {
			c.Stdout = d
		}
		c.Stderr = d
	}
	// Output still held by a process that escaped the kill is not waited
	// for long once the client is gone.
	c.WaitDelay = 2 * time.Second
	p := &remoteProcess{r: r, marker: marker, done: make(chan struct{})}
	if cmd.Interactive {
		w, err := c.StdinPipe()
		if err != nil {
			return nil, err
		}
		p.stdin = w
	} else {
		in := cmd.Stdin
		if in == nil {
			in = strings.NewReader("")
		}
		c.Stdin = io.MultiReader(strings.NewReader(hdr), in)
	}
	// The client runs in a process tree of its own, registered with
	// proctree: an executor that reaps orphans must not take it for one.
	tree, err := proctree.Start(c)
	if err != nil {
		return nil, fmt.Errorf("starting the %s client (%s): %w", r.name, c.Path, err)
	}
	p.tree = tree
	go func() {
		err := tree.Wait()
		tree.Release()
		p.code, p.err = exitStatus(c, err)
		close(p.done)
	}()
	if p.stdin != nil {
		if _, err := io.WriteString(p.stdin, hdr); err != nil {
			tree.Kill()
			<-p.done
			return nil, fmt.Errorf("starting a command on the %s backend: %w", r.name, err)
		}
	}
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				p.Stop(0)
			case <-p.done:
			}
		}()
	}
	return p, nil
}

// remoteProcess is a command started on a remote backend.
type remoteProcess struct {
	r      *remote
	marker string
	tree   *proctree.Tree // the local client's
	stdin  io.WriteCloser

	stopMu  sync.Mutex
	stopped chan struct{} // closed once a Stop has finished; nil before any
	done    chan struct{}
	code    int
	err     error
}

func (p *remoteProcess) Stdin() io.WriteCloser { return p.stdin }

// Wait returns once the client has exited and, when the process is being
// stopped, once the stop has finished: its tree is gone from the target.
func (p *remoteProcess) Wait() (int, error) {
	<-p.done
	p.stopMu.Lock()
	stopped := p.stopped
	p.stopMu.Unlock()
	if stopped != nil {
		<-stopped
	}
	return p.code, p.err
}

// Stop ends the command's tree in the target, then the local client.
func (p *remoteProcess) Stop(grace time.Duration) {
	p.stopMu.Lock()
	if p.stopped != nil {
		stopped := p.stopped
		p.stopMu.Unlock()
		<-stopped
		return
	}
	p.stopped = make(chan struct{})
	p.stopMu.Unlock()
	defer close(p.stopped)
	if grace <= 0 {
		grace = DefaultGrace
	}
	select {
	case <-p.done:
	default:
		p.r.killMarked(p.marker, grace)
	}
	if p.stdin != nil {
		p.stdin.Close()
	}
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		// The client outlived its remote command (a lost connection, an
		// engine that does not end the exec).
		p.tree.Kill()
		<-p.done
	}
}

// killMarked stops every process of the target carrying marker.
func (r *remote) killMarked(marker string, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace+15*time.Second)
	defer cancel()
	script := fmt.Sprintf("%sreap %s %d\n", remoteReap, marker, tenths(grace))
	c := r.tr.command(ctx, []string{"sh", "-c", remoteWrapper})
	c.Stdin = strings.NewReader(base64.StdEncoding.EncodeToString([]byte(script)) + "\n")
	c.WaitDelay = time.Second
	proctree.Run(ctx, c)
}

// tenths is d in tenths of a second.
func tenths(d time.Duration) int { return int(d / (100 * time.Millisecond)) }

// exitStatus is the exit code of a finished client, 128+N for signal N.
func exitStatus(c *exec.Cmd, err error) (int, error) {
	ps := c.ProcessState
	if ps == nil {
		return -1, err
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	if err != nil && !errors.As(err, new(*exec.ExitError)) {
		return ps.ExitCode(), err
	}
	return ps.ExitCode(), nil
}

func (r *remote) Close() error {
	r.agentMu.Lock()
	r.closed = true
	a := r.agent
	r.agent = nil
	r.agentMu.Unlock()
	if a != nil {
		a.close()
	}
	if r.onClose != nil {
		return r.onClose()
	}
	return nil
}

// newMarker is a random marker for one command.
func newMarker() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// validEnvName reports whether k can be exported by a POSIX shell.
func validEnvName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// clientEnv is the environment of a local client (the docker CLI, ssh,
// the exec prefix): exactly env, built for it by the caller (the
// executor: engine.ClientEnv, what a client needs and never a host
// credential); nil gives it an empty one. A client never inherits this
// process's environment, which holds the executor's credentials: a
// client that passes its environment on (env, setpriv, docker exec -e)
// would hand them to the target.
func clientEnv(env []string) []string {
	if env == nil {
		return []string{}
	}
	return env
}
