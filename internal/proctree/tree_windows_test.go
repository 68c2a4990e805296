package proctree

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// These tests build process trees out of this test binary: run with
// helperEnv set, it plays one part of the tree (see helperMain) instead of
// running the tests. Every process writes "<part> <pid>" to its stdout, a
// pipe shared by the whole tree, once it runs; the tests read those lines
// instead of waiting for a while.

// helperEnv selects the part the test binary plays.
const helperEnv = "HERMES_PROCTREE_HELPER"

func TestMain(m *testing.M) {
	if part := os.Getenv(helperEnv); part != "" {
		os.Exit(helperMain(part))
	}
	os.Exit(m.Run())
}

// helperMain plays part:
//
//   - root: waits for a line on stdin (the test writes it once the root
//     is in its job), then starts a stay and an orphaner, and sleeps.
//   - stay: sleeps.
//   - orphaner: starts a stay and exits at once, leaving it orphaned.
//   - host: starts a root through Start, as the executor starts a
//     command, tells it to go on, and sleeps (the test kills it).
//
// The sleeps are an hour: a part ends only when it is killed.
func helperMain(part string) int {
	say := func() { fmt.Printf("%s %d\n", part, os.Getpid()) }
	switch part {
	case "root":
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "root: stdin:", err)
			return 90
		}
		say()
		for _, p := range []string{"stay", "orphaner"} {
			if err := helperCmd(p).Start(); err != nil {
				fmt.Fprintln(os.Stderr, "root: starting", p, err)
				return 91
			}
		}
	case "stay":
		say()
	case "orphaner":
		say()
		if err := helperCmd("stay").Start(); err != nil {
			fmt.Fprintln(os.Stderr, "orphaner: starting stay:", err)
			return 91
		}
		return 0
	case "host":
		root := helperCmd("root")
		in, err := root.StdinPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "host:", err)
			return 90
		}
		tree, err := Start(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "host: Start:", err)
			return 91
		}
		say()
		io.WriteString(in, "go\n")
		_ = tree // held, never stopped: the host is killed
	default:
		fmt.Fprintf(os.Stderr, "unknown part %q\n", part)
		return 99
	}
	time.Sleep(time.Hour) // the helper stays until the test kills it: not a wait
	return 92
}

// helperCmd is this binary playing part, writing to this process's
// stdout and stderr.
func helperCmd(part string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+part)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd
}

// treeWatch reads the lines of a tree's shared stdout pipe.
type treeWatch struct {
	lines chan string
	eof   chan struct{} // closed when every writer of the pipe is gone
}

// watchPipe starts reading r.
func watchPipe(r *os.File) *treeWatch {
	w := &treeWatch{lines: make(chan string, 16), eof: make(chan struct{})}
	go func() {
		defer close(w.eof)
		defer r.Close()
		s := bufio.NewScanner(r)
		for s.Scan() {
			w.lines <- s.Text()
		}
	}()
	return w
}

// parts waits for want lines and returns the pids they name by part; it
// opens a handle to each process (which also keeps its pid from being
// reused), closed at the end of the test.
func (w *treeWatch) parts(t *testing.T, want int) map[string][]windows.Handle {
	t.Helper()
	got := map[string][]windows.Handle{}
	timeout := time.After(30 * time.Second)
	for i := 0; i < want; i++ {
		var line string
		select {
		case line = <-w.lines:
		case <-timeout:
			t.Fatalf("only %d of %d processes of the tree reported", i, want)
		}
		part, pidStr, ok := strings.Cut(line, " ")
		pid, err := strconv.Atoi(pidStr)
		require.True(t, ok && err == nil, "line %q", line)
		if part == "orphaner" || part == "host" {
			// Gone already or killed by the test: not the tree's to end.
			got[part] = append(got[part], 0)
			continue
		}
		h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
		require.NoError(t, err, "opening %s (pid %d)", part, pid)
		t.Cleanup(func() { windows.CloseHandle(h) })
		got[part] = append(got[part], h)
	}
	return got
}

// live is the handles of the processes that must be running until the
// tree is ended: the root, its stay and the orphaned stay.
func live(t *testing.T, parts map[string][]windows.Handle) []windows.Handle {
	t.Helper()
	require.Len(t, parts["root"], 1)
	require.Len(t, parts["stay"], 2, "the root's stay and the orphaned one")
	require.Len(t, parts["orphaner"], 1)
	hs := append(append([]windows.Handle{}, parts["root"]...), parts["stay"]...)
	for _, h := range hs {
		ev, err := windows.WaitForSingleObject(h, 0)
		require.NoError(t, err)
		require.Equal(t, uint32(windows.WAIT_TIMEOUT), ev, "a process of the tree ended before it was stopped")
	}
	return hs
}

// requireEnded waits (generous deadline) for every process to end and
// returns their exit codes.
func requireEnded(t *testing.T, hs []windows.Handle) []uint32 {
	t.Helper()
	var codes []uint32
	for i, h := range hs {
		ev, err := windows.WaitForSingleObject(h, 10_000)
		require.NoError(t, err)
		require.Equal(t, uint32(windows.WAIT_OBJECT_0), ev, "process %d of %d survived", i+1, len(hs))
		var code uint32
		require.NoError(t, windows.GetExitCodeProcess(h, &code))
		codes = append(codes, code)
	}
	return codes
}

// requireEOF waits for the tree's stdout pipe to end: no process of the
// tree holds it any more.
func (w *treeWatch) requireEOF(t *testing.T) {
	t.Helper()
	for {
		select {
		case line := <-w.lines:
			t.Errorf("unexpected output: %q", line)
		case <-w.eof:
			return
		case <-time.After(time.Minute):
			t.Fatal("the tree's stdout pipe is still open")
		}
	}
}

// startTree starts a root through Start with its stdout on a pipe, and
// lets it go on once it is in its job.
// The channel is closed once Wait has returned, its error in *waitErr.
func startTree(t *testing.T) (tree *Tree, watch *treeWatch, waited chan struct{}, waitErr *error) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	root := helperCmd("root")
	root.Stdout = w
	in, err := root.StdinPipe()
	require.NoError(t, err)
	t.Cleanup(func() { in.Close() })
	tree, err = Start(root)
	w.Close()
	require.NoError(t, err)
	waited, waitErr = make(chan struct{}), new(error)
	go func() {
		*waitErr = tree.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		tree.Release()
		<-waited
	})
	_, err = io.WriteString(in, "go\n")
	require.NoError(t, err)
	return tree, watchPipe(r), waited, waitErr
}

// TestTreeStopTerminatesJob: Stop ends the root, its child and a grandchild
// whose parent had exited (on Windows nothing re-parents it; the job
// holds it) at once, whatever the grace: all three exit with the job's
// termination code 1, and the command's Wait returns.
func TestTreeStopTerminatesJob(t *testing.T) {
	tree, watch, waited, waitErr := startTree(t)
	hs := live(t, watch.parts(t, 4))
	start := time.Now()
	tree.Stop(time.Minute)
	require.Less(t, time.Since(start), 30*time.Second, "Stop terminates the job without a grace")
	require.Equal(t, []uint32{1, 1, 1}, requireEnded(t, hs))
	select {
	case <-waited:
		var ee *exec.ExitError
		require.ErrorAs(t, *waitErr, &ee)
		require.Equal(t, 1, ee.ExitCode())
	case <-time.After(time.Minute):
		t.Fatal("Wait did not return after Stop")
	}
	watch.requireEOF(t)
}

// TestTreeJobCloseKills: closing the job's handle, without terminating it
// first, kills every process in it (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE).
func TestTreeJobCloseKills(t *testing.T) {
	tree, watch, _, _ := startTree(t)
	hs := live(t, watch.parts(t, 4))
	tree.sys.release()
	requireEnded(t, hs)
	watch.requireEOF(t)
}

// TestTreeDiesWithHost: a host that started a tree and is killed (it
// never stops the tree) takes the tree with it: the system closes the
// host's job handle.
func TestTreeDiesWithHost(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	host := helperCmd("host")
	host.Stdout = w
	require.NoError(t, host.Start())
	w.Close()
	hostDone := make(chan struct{})
	go func() {
		host.Wait()
		close(hostDone)
	}()
	t.Cleanup(func() {
		host.Process.Kill()
		<-hostDone
	})
	watch := watchPipe(r)
	parts := watch.parts(t, 5)
	require.Len(t, parts["host"], 1)
	hs := live(t, parts)
	require.NoError(t, host.Process.Kill())
	<-hostDone
	requireEnded(t, hs)
	watch.requireEOF(t)
}

// Regression: a command that exits before it is put in its job (a short
// script under load) made Start fail with "assigning the child to its job
// object: Access denied". attach is given a command that has certainly
// exited: it succeeds without a job, and Wait gives the exit code.
func TestAttachAfterExit(t *testing.T) {
	cmd := exec.Command(os.Getenv("COMSPEC"), "/d", "/c", "exit 3")
	prepare(cmd)
	// Not suspended, as prepare starts it: it runs, and ends, at once.
	cmd.SysProcAttr.CreationFlags &^= windows.CREATE_SUSPENDED
	require.NoError(t, cmd.Start())
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(cmd.Process.Pid))
	require.NoError(t, err)
	ev, err := windows.WaitForSingleObject(h, windows.INFINITE)
	windows.CloseHandle(h)
	require.NoError(t, err)
	require.Equal(t, uint32(windows.WAIT_OBJECT_0), ev)

	sys, err := attach(cmd)
	require.NoError(t, err)
	require.Zero(t, sys.job, "an exited command gets no job")
	sys.stop(nil, time.Second) // nothing to stop
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 3, exit.ExitCode())
}
