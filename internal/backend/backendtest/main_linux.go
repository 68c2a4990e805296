//go:build linux

package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// Main runs the tests of a package and then stops whatever [Docker] and
// [SSH] started (see the package doc). Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(backendtest.Main(m)) }
func Main(m *testing.M) int {
	mainRunning.Store(true)
	code := m.Run()
	stopAll()
	if caught.Load() {
		// A test that failed because the engines stopped ended the run:
		// let the signal's goroutine end the process with the signal.
		time.Sleep(5 * time.Second)
	}
	return code
}

// needMain is the failure of a test that asks for an engine in a package
// whose TestMain does not run Main: nothing would stop the engine.
const needMain = "backendtest: the package's tests must run through backendtest.Main, which stops " +
	"the engines afterwards: add func TestMain(m *testing.M) { os.Exit(backendtest.Main(m)) }"

// errStopping is the failure of a start that comes after Main began to
// stop everything.
var errStopping = errors.New("backendtest: the test process is stopping its engines")

var (
	// mainRunning is set once Main runs the tests.
	mainRunning atomic.Bool

	// stopCtx ends every command this package runs (apt-get,
	// debootstrap, the docker CLI) once stopping begins.
	stopCtx, cancelStop = context.WithCancel(context.Background())

	// regMu guards stopping and cleanups.
	regMu    sync.Mutex
	stopping bool
	// cleanups undo what was started, in reverse order.
	cleanups []func()
	stopOnce sync.Once

	signalsOnce sync.Once
	// caught is set once SIGINT or SIGTERM came in.
	caught atomic.Bool
)

// onStop registers f to run when everything is stopped. It reports false,
// registering nothing, when stopping has begun: the caller then undoes
// what it did itself.
func onStop(f func()) bool {
	regMu.Lock()
	defer regMu.Unlock()
	if stopping {
		return false
	}
	cleanups = append(cleanups, f)
	return true
}

// stopAll runs the cleanups, last registered first. Concurrent calls wait
// for the first one.
func stopAll() {
	stopOnce.Do(func() {
		regMu.Lock()
		stopping = true
		fs := cleanups
		cleanups = nil
		regMu.Unlock()
		cancelStop()
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i]()
		}
	})
}

// watchSignals makes SIGINT and SIGTERM stop everything before the
// process dies of them.
func watchSignals() {
	signalsOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-ch
			caught.Store(true)
			fmt.Fprintf(os.Stderr, "backendtest: %v: stopping the test engines\n", sig)
			stopAll()
			signal.Reset(sig)
			syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		}()
	})
}

// once starts an engine at most once per process and gives every caller
// the same engine or the same failure.
type once[T any] struct {
	o   sync.Once
	v   T
	err error
}

func (s *once[T]) get(tb testing.TB, start func() (T, error)) T {
	tb.Helper()
	if !mainRunning.Load() {
		tb.Fatal(needMain)
	}
	s.o.Do(func() {
		s.err = errors.New("backendtest: the engine's start panicked")
		s.v, s.err = start()
	})
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.v
}

// command runs name with args in a process tree of its own (so that a
// test process that is a child subreaper does not take it for an
// orphan) and returns its stdout; its error holds the command line and
// the tail of its output. env is added to this process's environment.
func command(ctx context.Context, env []string, stdin io.Reader, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	if err := proctree.Run(ctx, cmd); err != nil {
		if ctx.Err() != nil && stopCtx.Err() != nil {
			return "", fmt.Errorf("%w (%s was stopped)", errStopping, testenv.CommandLine(name, args))
		}
		return stdout.String(), fmt.Errorf("%s: %w\n%s", testenv.CommandLine(name, args), err,
			testenv.LastLines(stderr.String()+stdout.String(), 30))
	}
	return stdout.String(), nil
}

// fileTail is the last n lines of the file at path, at most its last 8 KB.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const most = 8 << 10
	if st, err := f.Stat(); err == nil && st.Size() > most {
		f.Seek(st.Size()-most, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return testenv.LastLines(string(b), n)
}

// daemon is a long-running process of this package: dockerd or sshd.
type daemon struct {
	name    string
	tree    *proctree.Tree
	exited  chan struct{} // closed once it exited and was reaped
	log     *logWatch
	logPath string
	once    sync.Once
}

// startDaemon starts path with args, its stdout and stderr going to the
// file logPath; ready waits for a line containing marker.
func startDaemon(name, logPath, marker string, env []string, path string, args ...string) (*daemon, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	lw := &logWatch{f: f, marker: []byte(marker), seen: make(chan struct{})}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = lw, lw
	// Something it started and left behind may hold the log pipe open:
	// Wait closes it this long after the daemon exited.
	cmd.WaitDelay = 5 * time.Second
	tree, err := proctree.Start(cmd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", testenv.CommandLine(path, args), err)
	}
	d := &daemon{name: name, tree: tree, exited: make(chan struct{}), log: lw, logPath: logPath}
	go func() {
		tree.Wait()
		f.Close()
		close(d.exited)
	}()
	return d, nil
}

// ready waits until the daemon logged its marker. It fails when the daemon
// exits first, timeout passes or stopping begins, with the log's tail.
func (d *daemon) ready(timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var why string
	select {
	case <-d.log.seen:
		return nil
	case <-d.exited:
		why = "exited"
	case <-timer.C:
		why = fmt.Sprintf("was not ready after %v", timeout)
	case <-stopCtx.Done():
		return errStopping
	}
	return fmt.Errorf("backendtest: %s %s; the end of its log (%s):\n%s", d.name, why, d.logPath, fileTail(d.logPath, 30))
}

// stop ends the daemon's process tree: SIGTERM, then SIGKILL after grace.
func (d *daemon) stop(grace time.Duration) {
	d.once.Do(func() {
		d.tree.Stop(grace)
		<-d.exited
		d.tree.Release()
	})
}

// logWatch is a daemon's log: it goes to a file, and seen is closed once a
// line containing marker was written.
type logWatch struct {
	f      *os.File
	marker []byte
	seen   chan struct{}

	mu   sync.Mutex
	line []byte // the current line so far; nil once marker was seen
	done bool
}

func (l *logWatch) Write(p []byte) (int, error) {
	n, err := l.f.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return n, err
	}
	l.line = append(l.line, p...)
	if bytes.Contains(l.line, l.marker) {
		l.done, l.line = true, nil
		close(l.seen)
		return n, err
	}
	if i := bytes.LastIndexByte(l.line, '\n'); i >= 0 {
		l.line = append(l.line[:0], l.line[i+1:]...)
	}
	if len(l.line) > 64<<10 { // a line that long is no marker line
		l.line = l.line[:0]
	}
	return n, err
}

// removeDir unmounts whatever is still mounted under dir, deepest first
// and detached, and then removes dir; it refuses to remove a dir that
// still has a mount under it (a bind mount of /dev, say), and reports
// that on stderr.
func removeDir(dir string) {
	for range 3 {
		mounts := mountsUnder(dir)
		if len(mounts) == 0 {
			break
		}
		sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
		for _, m := range mounts {
			syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	if left := mountsUnder(dir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "backendtest: not removing %s: still mounted under it: %s\n", dir, strings.Join(left, " "))
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "backendtest: %v\n", err)
	}
}

// mountsUnder lists the mount points at or under dir (a path without
// symbolic links), as /proc/self/mountinfo has them.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var mounts []string
	for line := range strings.SplitSeq(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		m := unescapeMountinfo(fields[4])
		if m == dir || strings.HasPrefix(m, dir+"/") {
			mounts = append(mounts, m)
		}
	}
	return mounts
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tempDir makes a fresh temp dir whose name starts with prefix, its path
// without symbolic links (as mountinfo shows it), removed when everything
// is stopped. It first removes the dirs of that prefix that a test
// process killed unannounced left behind: those whose daemon's pidfile
// (a file named pidfile in it) names a process that is not that daemon.
func tempDir(prefix, pidfile string) (string, error) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range old {
		if stale(dir, pidfile) {
			removeDir(dir)
		}
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return registerDir(dir)
}

// registerDir resolves dir's symbolic links and has it removed when
// everything is stopped.
func registerDir(dir string) (string, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if !onStop(func() { removeDir(dir) }) {
		removeDir(dir)
		return "", errStopping
	}
	return dir, nil
}

// stale reports whether dir's daemon is gone: the pid in its pidfile is
// not a process whose command line names dir (the daemon removes the
// file when it exits normally, and a test process removes its dirs).
func stale(dir, pidfile string) bool {
	b, err := os.ReadFile(filepath.Join(dir, pidfile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return errors.Is(err, os.ErrNotExist) || err == nil && !bytes.Contains(cmdline, []byte(dir))
}
