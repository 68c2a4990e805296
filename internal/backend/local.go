package backend

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

// localGrace is the time between SIGTERM and SIGKILL when a local tree is
// stopped without a grace of its own (Stop(0), ctx ended, the command
// exited leaving processes behind): proctree's, the 5 s of
// docs/behaviour.md §5 that every local process tree has.
const localGrace = proctree.DefaultGrace

// localDrainGrace is how long output is still read after a local tree was
// stopped, in case a descendant that escaped it keeps the pipe open.
const localDrainGrace = 2 * time.Second

// Local returns the backend of this host: commands run here in a process
// tree of their own (internal/proctree) with cwd as their default working
// dir, and its FS is package os.
func Local(cwd string) Backend { return &localBackend{cwd: cwd} }

// LocalLandlocked is Local whose commands, and everything they start, may
// write only what the Landlock policy p, for the working dir cwd, allows
// (Linux; see internal/landlock). A nil p restricts nothing.
func LocalLandlocked(cwd string, p *landlock.Policy) Backend {
	b := &localBackend{cwd: cwd}
	if p != nil {
		b.start.Launch = p.ForWorkdir(cwd).Launch
	}
	return b
}

type localBackend struct {
	cwd   string
	start proctree.Options // how commands are forked
}

func (*localBackend) Name() string   { return config.BackendLocal }
func (*localBackend) Target() string { return "" }
func (*localBackend) Remote() bool   { return false }
func (b *localBackend) Cwd() string  { return b.cwd }

// Home is this user's home dir, "" when it cannot be told.
func (b *localBackend) Home() string {
	home, _ := os.UserHomeDir()
	return home
}
func (*localBackend) FS() FS       { return LocalFS }
func (*localBackend) Close() error { return nil }

// Start starts cmd on this host: Shell through the platform shell (sh -c;
// cmd.exe on Windows), Argv directly, in a process tree of its own with
// exactly cmd.Env as its environment. Stdout and Stderr are read through
// pipes of ours (one pipe when they are the same writer, so the order of
// the two streams is kept), never handed to the child as they are, so a
// descendant that outlives the tree cannot hold Wait up for more than the
// drain grace. When ctx ends, and once the command exits, the whole tree
// is stopped.
func (b *localBackend) Start(ctx context.Context, c Command) (Process, error) {
	if (len(c.Argv) == 0) == (c.Shell == "") {
		return nil, errors.New("backend: exactly one of Argv and Shell must be set")
	}
	if c.Interactive && c.Stdin != nil {
		return nil, errors.New("backend: an interactive command takes its input from Process.Stdin, not Command.Stdin")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := shellCommand(c.Shell)
	if len(c.Argv) > 0 {
		cmd = argvCommand(c.Argv)
	}
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = b.cwd
	}
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}

	p := &localProcess{done: make(chan struct{})}
	var childEnds []*os.File // the child's ends, closed here once it runs
	fail := func(err error) (Process, error) {
		for _, f := range childEnds {
			f.Close()
		}
		p.closeOurs()
		return nil, err
	}
	// Stdin: nil is the null device (cmd.Stdin nil); a reader is copied
	// into a pipe of ours so that Wait never waits for the reader.
	var stdinSrc io.Reader
	switch {
	case c.Interactive, c.Stdin != nil:
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		childEnds = append(childEnds, r)
		cmd.Stdin = r
		if c.Interactive {
			p.stdin = &onceCloser{f: w}
		} else {
			p.stdinW, stdinSrc = w, c.Stdin
		}
	}
	outPipe := func(w io.Writer) (*os.File, error) {
		r, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		childEnds = append(childEnds, pw)
		p.readers = append(p.readers, pipeReader{r: r, w: w})
		return pw, nil
	}
	if c.Stdout != nil {
		pw, err := outPipe(c.Stdout)
		if err != nil {
			return fail(err)
		}
		cmd.Stdout = pw
	}
	if c.Stderr != nil {
		if c.Stderr == c.Stdout {
			cmd.Stderr = cmd.Stdout
		} else {
			pw, err := outPipe(c.Stderr)
			if err != nil {
				return fail(err)
			}
			cmd.Stderr = pw
		}
	}
	tree, err := proctree.StartWith(cmd, b.start)
	if err != nil {
		return fail(err)
	}
	for _, f := range childEnds {
		f.Close()
	}
	p.tree, p.cmd = tree, cmd
	p.copied = make(chan struct{})
	go p.copyOutput()
	if stdinSrc != nil {
		go p.feedStdin(stdinSrc)
	}
	go p.run(ctx)
	return p, nil
}

// pipeReader is our end of an output pipe and where its bytes go.
type pipeReader struct {
	r *os.File
	w io.Writer
}

// localProcess is a command started by the local backend.
type localProcess struct {
	tree    *proctree.Tree
	cmd     *exec.Cmd
	readers []pipeReader
	stdin   *onceCloser // Interactive: the caller's end of the stdin pipe
	stdinW  *os.File    // Command.Stdin: the end feedStdin writes

	// gate orders writes to the caller's writers against the end of the
	// process: once closed is set (before Wait returns) none happens.
	gate   sync.Mutex
	closed bool

	copied chan struct{} // closed when every output pipe hit EOF or an error
	done   chan struct{} // closed when the tree is gone and output copied
	code   int
	err    error

	graceMu sync.Mutex
	grace   time.Duration // of the first Stop; 0 until then
}

func (p *localProcess) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}

func (p *localProcess) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

func (p *localProcess) Stop(grace time.Duration) {
	p.tree.Stop(p.stopGrace(grace))
}

// stopGrace returns the grace of a stop: the first Stop's, else grace,
// and localGrace for zero.
func (p *localProcess) stopGrace(grace time.Duration) time.Duration {
	p.graceMu.Lock()
	defer p.graceMu.Unlock()
	if p.grace == 0 {
		p.grace = grace
	}
	if p.grace <= 0 {
		return localGrace
	}
	return p.grace
}

// run waits for the command, stops its tree (at once when ctx ends, and
// after the command exited for whatever it left behind), gives the output
// up to localDrainGrace more to be read, and records the exit status.
func (p *localProcess) run(ctx context.Context) {
	var waitErr error
	waited := make(chan struct{})
	go func() {
		waitErr = p.tree.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
		p.tree.Stop(p.stopGrace(0))
		<-waited
	}
	// Whatever the command left in its tree is stopped too: it would
	// otherwise hold the output pipes open.
	p.tree.Stop(p.stopGrace(0))
	drain := time.NewTimer(localDrainGrace)
	select {
	case <-p.copied:
	case <-drain.C:
	}
	drain.Stop()
	p.gate.Lock()
	p.closed = true
	p.gate.Unlock()
	p.closeOurs()
	p.tree.Release()
	p.code = exitCodeOf(p.cmd.ProcessState)
	if p.cmd.ProcessState == nil {
		p.err = waitErr
		if p.err == nil {
			p.err = errors.New("backend: the exit status of the command is unknown")
		}
	}
	close(p.done)
}

// closeOurs closes our ends of the pipes.
func (p *localProcess) closeOurs() {
	for _, r := range p.readers {
		r.r.Close()
	}
	if p.stdin != nil {
		p.stdin.Close()
	}
	if p.stdinW != nil {
		p.stdinW.Close()
	}
}

// copyOutput copies every output pipe to its writer until EOF (or until
// run closes it), through the gate.
func (p *localProcess) copyOutput() {
	var wg sync.WaitGroup
	for _, pr := range p.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := pr.r.Read(buf)
				if n > 0 {
					p.gate.Lock()
					if !p.closed {
						pr.w.Write(buf[:n]) // a failing writer only loses output: keep draining
					}
					p.gate.Unlock()
				}
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(p.copied)
}

// feedStdin copies Command.Stdin into the process's stdin pipe and closes
// it (EOF), or stops when the pipe is closed by run.
func (p *localProcess) feedStdin(src io.Reader) {
	io.Copy(p.stdinW, src)
	p.stdinW.Close()
}

// onceCloser is the caller's end of an interactive stdin pipe: closing it
// more than once (the caller and run) is not an error.
type onceCloser struct {
	f    *os.File
	once sync.Once
	err  error
}

func (c *onceCloser) Write(b []byte) (int, error) { return c.f.Write(b) }

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.err = c.f.Close() })
	return c.err
}

// argvCommand runs argv directly (the program is looked up in this
// process's PATH, as exec.Command does).
func argvCommand(argv []string) *exec.Cmd {
	return exec.Command(argv[0], argv[1:]...)
}

// createTemp is os.CreateTemp; a test replaces it to make a write fail.
var createTemp = os.CreateTemp

// LocalFS is this host's file system: package os.
var LocalFS FS = localFS{}

type localFS struct{}

func (localFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (localFS) Lstat(name string) (fs.FileInfo, error)     { return os.Lstat(name) }
func (localFS) FileID(name string) (FileID, error)         { return localFileID(name) }
func (localFS) Readlink(name string) (string, error)       { return os.Readlink(name) }
func (localFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (localFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (localFS) Rename(oldname, newname string) error       { return os.Rename(oldname, newname) }
func (localFS) Remove(name string) error                   { return os.Remove(name) }

func (localFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

// Open opens name for reading; the result is an *os.File.
func (localFS) Open(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return f, nil
}

// WriteTemp creates the temp file (os.CreateTemp), writes data, gives it
// perm, syncs and closes it. On any failure the temp file is removed and
// the error is the os one as is (a *fs.PathError for most).
func (localFS) WriteTemp(dir, pattern string, data []byte, perm fs.FileMode) (_ string, err error) {
	f, err := createTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	name := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(name)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return "", err
	}
	if err = f.Chmod(perm); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	return name, nil
}
