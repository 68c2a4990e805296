// Package nativeengine is project mode's engine (internal/engine's
// Engine and Kernel): the script runs in a native python child (found by
// package native) in the session's working dir, or on a remote backend
// through a relay, and calls tools over a token-checked RPC server. Only
// runtime/executor uses it.
package nativeengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// defaultGrace is how long a stopped script's process tree gets between
// SIGTERM and SIGKILL (docs/behaviour.md §5).
const defaultGrace = proctree.DefaultGrace

// drainTimeout bounds how long output is still read after the tree is
// gone: only a process that left the tree (detached while the subreaper
// is off, see proctree.EnableSubreaper) can hold the pipes longer, and
// its output is not waited for.
const drainTimeout = 2 * time.Second

// Engine is project mode's engine: the script runs in a native python
// child in the session's working dir and calls tools over the RPC server.
// It implements engine.Engine and is safe for concurrent use.
type Engine struct {
	// Python is the interpreter to run (see Resolve).
	Python string
	// Transport is native.TransportUnix or native.TransportTCP; empty means
	// native.DefaultTransport().
	Transport string
	// TempDir is the parent of the private per-run dirs; empty means
	// os.TempDir().
	TempDir string
	// Grace is the time between SIGTERM and SIGKILL; zero means
	// DefaultGrace.
	Grace time.Duration
	// Backend, when remote, is where python runs: its python3, in its
	// working dir, with tool calls carried over the command's stdio by a
	// relay (remote.go). Nil or local means this host.
	Backend backend.Backend
	// RemotePython is the interpreter run on a remote backend; empty means
	// python3 (found on the target's PATH).
	RemotePython string
	// Landlock is what the local child and everything it starts may
	// write (Linux; see internal/landlock): nil restricts nothing. A run's
	// policy is this one for its working dir (Policy.ForWorkdir). It does
	// not apply on a remote backend.
	Landlock *landlock.Policy

	// drain overrides drainTimeout (tests).
	drain time.Duration
}

func (e *Engine) remotePython() string {
	if e.RemotePython == "" {
		return "python3"
	}
	return e.RemotePython
}

// remote reports whether scripts run on a remote backend.
func (e *Engine) remote() bool { return e.Backend != nil && e.Backend.Remote() }

// proc is a started interpreter, here (child) or on a remote backend
// (remoteChild). Whoever starts one reads both outputs until EOF, then
// calls drain and release.
type proc interface {
	// done is closed once the interpreter has exited and what it left
	// running is gone.
	done() <-chan struct{}
	outputs() (stdout, stderr io.Reader)
	// stop ends the tree (SIGTERM, SIGKILL after grace) and returns once
	// the interpreter has exited.
	stop(grace time.Duration)
	// kill ends the tree at once and returns once the interpreter exited.
	kill()
	// drain waits for the exit and for the output readers (read is closed
	// when they are done), for at most wait after the exit.
	drain(read <-chan struct{}, wait time.Duration)
	release()
	// result is how the interpreter ended; call it once done.
	result() engine.Outcome
	// limitEvents is what the limits of the interpreter's processes did
	// so far (none for a remote interpreter).
	limitEvents() cgroup.Events
}

// stagedSources are the generated modules every run writes, built once.
var stagedSources = sync.OnceValue(func() map[string][]byte {
	return map[string][]byte{
		engine.StubName:   []byte(engine.GenerateStub(engine.StubOptions{})),
		engine.RunnerName: []byte(engine.Runner),
	}
})

// Run implements engine.Engine. The script, the generated hermes_tools
// module and the runner go to a private dir (0700) that is first on
// PYTHONPATH; the child runs in job.Workdir in its own process group (a
// job object on Windows), and when ctx ends the whole tree gets SIGTERM,
// then SIGKILL after the grace period. Whatever the outcome, nothing of
// the run is left: no process of the group, no socket, no temp dir.
func (e *Engine) Run(ctx context.Context, job *engine.Job) (engine.Outcome, error) {
	files := map[string][]byte{engine.ScriptName: []byte(job.Code)}
	for name, src := range stagedSources() {
		files[name] = src
	}
	if e.remote() {
		c, srv, err := startRemote(ctx, e.Backend, e.remotePython(), files, []string{engine.RunnerName, engine.ScriptName}, "", job.Env, job.Broker)
		if err != nil {
			return engine.Outcome{}, err
		}
		defer srv.Close()
		return e.supervise(ctx, c, job), nil
	}
	if e.Python == "" {
		return engine.Outcome{}, errors.New("no python interpreter given to the project-mode engine")
	}
	dir, err := stagePrivateDir(e.TempDir, "hermes-project-", files)
	if err != nil {
		return engine.Outcome{}, err
	}
	defer os.RemoveAll(dir)

	srv, err := listenRPC(ctx, e.transport(), dir, job.Broker)
	if err != nil {
		return engine.Outcome{}, err
	}
	defer srv.Close()

	// -u: unbuffered, so output printed before a timeout is not lost. The
	// runner is started as a file so that its own dir, not the session
	// dir, is searched first for hermes_tools; it then puts the session dir
	// first, as `python script.py` there would.
	c, err := startChild(e.Python, []string{"-u", filepath.Join(dir, engine.RunnerName), filepath.Join(dir, engine.ScriptName)},
		job.Workdir, childEnv(job.Env, dir, srv), e.grace(), e.startOptions(job.Workdir, job.ProcessLimits))
	if err != nil {
		return engine.Outcome{}, err
	}
	return e.supervise(ctx, c, job), nil
}

// supervise copies c's output to the job's writers until c ends, stopping
// it when ctx ends, and returns how it ended.
func (e *Engine) supervise(ctx context.Context, c proc, job *engine.Job) engine.Outcome {
	defer c.release()
	stdout, stderr := c.outputs()
	var copies sync.WaitGroup
	for _, p := range []struct {
		r io.Reader
		w io.Writer
	}{{stdout, job.Stdout}, {stderr, job.Stderr}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			io.Copy(p.w, p.r)
		}()
	}
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()

	select {
	case <-c.done():
	case <-ctx.Done():
		c.stop(e.grace())
	}
	c.drain(copied, e.drainWait())
	return withLimits(c.result(), c.limitEvents())
}

// withLimits is o with what the limits of the run's processes did (ev).
func withLimits(o engine.Outcome, ev cgroup.Events) engine.Outcome {
	o.OutOfMemory = ev.OOMKills > 0
	o.ProcessLimitHit = ev.ProcessLimitHits > 0
	return o
}

// startOptions is how a local child in workdir is started: in a tree capped
// by limits (its cgroup's), forked restricted by the engine's Landlock
// policy when it has one.
func (e *Engine) startOptions(workdir string, limits engine.ProcessLimits) proctree.Options {
	opts := proctree.Options{Limits: cgroup.Limits{
		MemoryBytes: int64(limits.MemoryMB) << 20,
		Processes:   limits.Processes,
	}}
	if e.Landlock != nil {
		opts.Launch = e.Landlock.ForWorkdir(workdir).Launch
	}
	return opts
}

func (e *Engine) transport() string {
	if e.Transport == "" {
		return native.DefaultTransport()
	}
	return e.Transport
}

// drainWait is how long output is still read after the child's exit:
// drainTimeout, or the test's own.
func (e *Engine) drainWait() time.Duration {
	if e.drain <= 0 {
		return drainTimeout
	}
	return e.drain
}

func (e *Engine) grace() time.Duration {
	if e.Grace <= 0 {
		return defaultGrace
	}
	return e.Grace
}

// stagePrivateDir makes a private dir (0700) under tempDir (empty: the
// system temp dir) and writes files to it (0600). The path is absolute:
// the child runs in another working dir, so the paths it gets (runner,
// script, PYTHONPATH, socket) must be absolute even when tempDir or TMPDIR
// is relative.
func stagePrivateDir(tempDir, prefix string, files map[string][]byte) (string, error) {
	dir, err := os.MkdirTemp(tempDir, prefix)
	if err != nil {
		return "", fmt.Errorf("creating the private dir: %w", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return dir, nil
}

// childEnv is env with the private dir first on PYTHONPATH (an existing
// PYTHONPATH follows it) and the RPC address and token of srv.
func childEnv(env []string, dir string, srv *Server) []string {
	pythonPath := dir
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok && v != "" {
			pythonPath += string(os.PathListSeparator) + v
		}
	}
	return engine.MergeEnv(env, []string{
		"PYTHONPATH=" + pythonPath,
		"HERMES_RPC_SOCKET=" + srv.Address(),
		"HERMES_RPC_TOKEN=" + srv.Token(),
	})
}

// child is a started interpreter: the process, its process tree and the
// read ends of its stdout and stderr pipes, which the whole tree inherits.
// Whoever starts one reads both pipes until EOF, then calls drain and
// release.
type child struct {
	cmd            *exec.Cmd
	tree           *proctree.Tree
	stdout, stderr *os.File
	// exited is closed once the child has been waited for and whatever it
	// left in its tree has been killed; waitErr is then set.
	exited  chan struct{}
	waitErr error
}

// startChild starts python with args in workdir with env, in a process
// tree of its own (started with opts), with its stdout and stderr on fresh
// pipes. Once python exits, what it left running in its tree is stopped
// with grace.
func startChild(python string, args []string, workdir string, env []string, grace time.Duration, opts proctree.Options) (*child, error) {
	cmd := exec.Command(python, args...)
	cmd.Dir = workdir
	cmd.Env = env
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("creating the stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	tree, err := proctree.StartWith(cmd, opts)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting %s: %w", python, err)
	}
	c := &child{cmd: cmd, tree: tree, stdout: outR, stderr: errR, exited: make(chan struct{})}
	go func() {
		c.waitErr = tree.Wait()
		// The child is gone: whatever it left running in its tree goes
		// too, on every outcome.
		tree.Stop(grace)
		close(c.exited)
	}()
	return c, nil
}

// stop ends the tree and returns once the child has exited and nothing of
// its tree is left: SIGTERM to every process in it, SIGKILL after grace
// (on Windows, the job is terminated at once).
func (c *child) stop(grace time.Duration) {
	c.tree.Stop(grace)
	<-c.exited
}

// kill ends the tree at once and returns once the child has exited.
func (c *child) kill() {
	c.tree.Kill()
	<-c.exited
}

// drain waits until the child has exited and the pipe readers are done
// (read is closed when they are), for at most wait after the exit, then
// closes the read ends.
func (c *child) drain(read <-chan struct{}, wait time.Duration) {
	drainAfter(c.exited, read, wait, func() {
		// A process outside the group still holds the pipes.
		c.stdout.SetReadDeadline(time.Now())
		c.stderr.SetReadDeadline(time.Now())
		c.stdout.Close()
		c.stderr.Close()
	})
	c.stdout.Close()
	c.stderr.Close()
}

// drainAfter waits until exited is closed, then until read is, for at most
// drainTimeout; past that it calls cut, which must end the readers, and
// waits for read.
func drainAfter(exited, read <-chan struct{}, wait time.Duration, cut func()) {
	<-exited
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-read:
	case <-t.C:
		cut()
		<-read
	}
}

// release frees the tree (on Windows, closing the job kills what is left
// in it). Call it once the child has exited.
func (c *child) release() { c.tree.Release() }

// result is how the child ended; call it once it has exited.
func (c *child) result() engine.Outcome { return outcome(c.cmd.ProcessState, c.waitErr) }

func (c *child) done() <-chan struct{} { return c.exited }

func (c *child) limitEvents() cgroup.Events { return c.tree.LimitEvents() }

func (c *child) outputs() (io.Reader, io.Reader) { return c.stdout, c.stderr }

// outcome maps how the child ended.
func outcome(ps *os.ProcessState, waitErr error) engine.Outcome {
	if ps == nil {
		return engine.Outcome{ExitCode: -1, Crash: "python could not be waited for: " + fmt.Sprint(waitErr)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return engine.Outcome{ExitCode: -1, Crash: fmt.Sprintf("Python was killed by signal %d (%s).", int(ws.Signal()), ws.Signal())}
	}
	return engine.Outcome{ExitCode: ps.ExitCode()}
}
