package native

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

	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
)

// DefaultGrace is how long a stopped script's process tree gets between
// SIGTERM and SIGKILL (SPEC §5).
const DefaultGrace = 5 * time.Second

// drainTimeout bounds how long output is still read after the tree is
// gone: only a process that left the group (setsid) can hold the pipes
// longer, and its output is not waited for.
const drainTimeout = 2 * time.Second

// Engine is project mode's engine: the script runs in a native python
// child in the session's working dir and calls tools over the RPC server.
// It implements shared.Engine and is safe for concurrent use.
type Engine struct {
	// Python is the interpreter to run (see Resolve).
	Python string
	// Transport is TransportUnix or TransportTCP; empty means
	// DefaultTransport().
	Transport string
	// TempDir is the parent of the private per-run dirs; empty means
	// os.TempDir().
	TempDir string
	// Grace is the time between SIGTERM and SIGKILL; zero means
	// DefaultGrace.
	Grace time.Duration
}

// stagedSources are the generated modules every run writes, built once.
var stagedSources = sync.OnceValue(func() map[string][]byte {
	return map[string][]byte{
		shared.StubName:   []byte(shared.GenerateStub(shared.StubOptions{})),
		shared.RunnerName: []byte(shared.Runner),
	}
})

// Run implements shared.Engine. The script, the generated hermes_tools
// module and the runner go to a private dir (0700) that is first on
// PYTHONPATH; the child runs in job.Workdir in its own process group (a
// job object on Windows), and when ctx ends the whole tree gets SIGTERM,
// then SIGKILL after the grace period. Whatever the outcome, nothing of
// the run is left: no process of the group, no socket, no temp dir.
func (e *Engine) Run(ctx context.Context, job *shared.Job) (shared.Outcome, error) {
	if e.Python == "" {
		return shared.Outcome{}, errors.New("no python interpreter given to the project-mode engine")
	}
	dir, err := os.MkdirTemp(e.TempDir, "hermes-project-")
	if err != nil {
		return shared.Outcome{}, fmt.Errorf("creating the private dir: %w", err)
	}
	// The child runs in job.Workdir, so the paths it gets (runner, script,
	// PYTHONPATH, socket) must be absolute even when TempDir or TMPDIR is
	// relative.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	defer os.RemoveAll(dir)
	files := map[string][]byte{shared.ScriptName: []byte(job.Code)}
	for name, src := range stagedSources() {
		files[name] = src
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			return shared.Outcome{}, fmt.Errorf("writing %s: %w", name, err)
		}
	}

	transport := e.Transport
	if transport == "" {
		transport = DefaultTransport()
	}
	srv, err := Listen(ctx, transport, dir, job.Broker)
	if err != nil {
		return shared.Outcome{}, err
	}
	defer srv.Close()

	pythonPath := dir
	for _, kv := range job.Env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok && v != "" {
			pythonPath += string(os.PathListSeparator) + v
		}
	}
	env := shared.MergeEnv(job.Env, []string{
		"PYTHONPATH=" + pythonPath,
		"HERMES_RPC_SOCKET=" + srv.Address(),
		"HERMES_RPC_TOKEN=" + srv.Token(),
	})

	// -u: unbuffered, so output printed before a timeout is not lost. The
	// runner is started as a file so that its own dir, not the session
	// dir, is searched first for hermes_tools; it then puts the session dir
	// first, as `python script.py` there would.
	cmd := exec.Command(e.Python, "-u", filepath.Join(dir, shared.RunnerName), filepath.Join(dir, shared.ScriptName))
	cmd.Dir = job.Workdir
	cmd.Env = env
	prepare(cmd)
	outR, outW, err := os.Pipe()
	if err != nil {
		return shared.Outcome{}, fmt.Errorf("creating the stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return shared.Outcome{}, fmt.Errorf("creating the stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return shared.Outcome{}, fmt.Errorf("starting %s: %w", e.Python, err)
	}
	tree, err := attach(cmd.Process)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		outR.Close()
		errR.Close()
		return shared.Outcome{}, err
	}
	defer tree.release()

	var copies sync.WaitGroup
	for _, p := range []struct {
		r *os.File
		w io.Writer
	}{{outR, job.Stdout}, {errR, job.Stderr}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			io.Copy(p.w, p.r)
		}()
	}

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		tree.terminate()
		grace := e.Grace
		if grace <= 0 {
			grace = DefaultGrace
		}
		if !gracefulTerminate {
			grace = 0
		}
		t := time.NewTimer(grace)
		select {
		case waitErr = <-waited:
		case <-t.C:
			tree.kill()
			waitErr = <-waited
		}
		t.Stop()
	}
	// The child is gone: whatever it left running in its group goes too.
	tree.kill()

	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		// A process outside the group still holds the pipes.
		outR.SetReadDeadline(time.Now())
		errR.SetReadDeadline(time.Now())
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	return outcome(cmd.ProcessState, waitErr), nil
}

// outcome maps how the child ended.
func outcome(ps *os.ProcessState, waitErr error) shared.Outcome {
	if ps == nil {
		return shared.Outcome{ExitCode: -1, Crash: "python could not be waited for: " + fmt.Sprint(waitErr)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return shared.Outcome{ExitCode: -1, Crash: fmt.Sprintf("Python was killed by signal %d (%s).", int(ws.Signal()), ws.Signal())}
	}
	return shared.Outcome{ExitCode: ps.ExitCode()}
}
