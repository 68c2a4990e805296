package proctree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestTreeStopAfterReapSparesRecycledPid: once a tree's command is reaped
// and its group is empty, its pid may go to a new tree (another run under
// serve) that leads a group of that id; stopping the old tree must not
// signal the new one. The pid is recycled on purpose through
// /proc/sys/kernel/ns_last_pid.
func TestTreeStopAfterReapSparesRecycledPid(t *testing.T) {
	const lastPid = "/proc/sys/kernel/ns_last_pid"
	// Writing it needs CAP_SYS_ADMIN, whatever its mode bits say: probe
	// with a write of the value it holds.
	cur, err := os.ReadFile(lastPid)
	if err == nil {
		err = os.WriteFile(lastPid, cur, 0)
	}
	if err != nil {
		t.Skipf("recycling a pid needs write access to %s (run the test as root): %v", lastPid, err)
	}
	old, err := Start(exec.Command("true"))
	require.NoError(t, err)
	require.NoError(t, old.Wait())
	defer old.Release()
	pid := old.Pid()

	// Other processes on the machine (and the Go runtime's threads) take
	// pids too: try until the new command gets the old pid.
	var recycled *Tree
	for range 200 {
		require.NoError(t, os.WriteFile(lastPid, []byte(strconv.Itoa(pid-1)), 0))
		tr, err := Start(exec.Command("sleep", "300"))
		require.NoError(t, err)
		if tr.Pid() == pid {
			recycled = tr
			break
		}
		syscall.Kill(tr.Pid(), syscall.SIGKILL) // our child, not reaped: the pid is its own
		tr.Wait()
		tr.Release()
	}
	require.NotNil(t, recycled, "pid %d was never recycled (another process took it?)", pid)
	defer recycled.Release()

	old.Stop(time.Second)

	// A SIGTERM from the old tree's Stop would have ended the sleep before
	// this SIGKILL (the first fatal signal sets how a process ends).
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	recycled.Wait()
	ws := recycled.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGKILL, ws.Signal(), "the new tree was signalled by the old tree's Stop")
}

// ttyHelperEnv makes the test binary run TestTTYHelperProcess as a helper.
const ttyHelperEnv = "PROCTREE_TTY_HELPER"

// TestTreeStartsWithoutControllingTerminal: a command started through Start
// cannot open the controlling terminal of the program that started it (so
// it cannot push input into it with TIOCSTI), and leads a session of its
// own. The starting program runs on a pseudo-terminal that is its
// controlling terminal.
func TestTreeStartsWithoutControllingTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer ptmx.Close()
	fd := int(ptmx.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)) // unlockpt
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)                       // ptsname
	require.NoError(t, err)
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer pts.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTTYHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), ttyHelperEnv+"=1")
	cmd.Stdin = pts
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Run(), out.String())

	got := out.String()
	require.Contains(t, got, "helper has a terminal", got)
	require.Contains(t, got, "refused", "the started command opened the terminal:\n%s", got)
	require.Contains(t, got, "No such device or address", got)
	var sid, pid int
	_, err = fmt.Sscanf(got[strings.Index(got, "sid="):], "sid=%d pid=%d", &sid, &pid)
	require.NoError(t, err, got)
	require.Equal(t, pid, sid, "the command leads a session of its own")
}

// TestTTYHelperProcess is run by TestTreeStartsWithoutControllingTerminal
// in a child on a pseudo-terminal; on its own it does nothing.
func TestTTYHelperProcess(t *testing.T) {
	if os.Getenv(ttyHelperEnv) != "1" {
		return
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		fmt.Println("the helper has no controlling terminal, the test is broken:", err)
		os.Exit(3)
	}
	tty.Close()
	fmt.Println("helper has a terminal")
	cmd := exec.Command("sh", "-c", `if (: </dev/tty); then echo opened; else echo refused; fi
echo "sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$"`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	tree, err := Start(cmd)
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(3)
	}
	err = tree.Wait()
	tree.Release()
	fmt.Print(out.String())
	if err != nil {
		fmt.Println("wait:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// TestSubreaperOffEndsSweeper: turning the subreaper off ends the SIGCHLD
// sweeper (no goroutine or signal subscription left behind), and turning
// it on again starts a new one.
func TestSubreaperOffEndsSweeper(t *testing.T) {
	// sweepers counts the goroutines, other than this test's, running code
	// of this package.
	sweepers := func() int {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		n := 0
		for _, g := range bytes.Split(buf, []byte("\n\n")) {
			if bytes.Contains(g, []byte("internal/proctree.")) && !bytes.Contains(g, []byte("internal/proctree.Test")) {
				n++
			}
		}
		return n
	}
	requireSweepers := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for sweepers() != want {
			require.True(t, time.Now().Before(deadline), "want %d sweeper goroutines, have %d", want, sweepers())
			time.Sleep(10 * time.Millisecond)
		}
	}
	requireSweepers(0)
	for range 2 {
		require.NoError(t, EnableSubreaper())
		require.NoError(t, EnableSubreaper()) // idempotent: still one
		requireSweepers(1)
		require.NoError(t, setSubreaper(false))
		requireSweepers(0)
	}
}

// TestTreeStopAfterReapEndsWhatTheCommandLeft: the command exits, leaving
// a process in its group; a Stop after Wait (as every caller does) still
// ends it, through the walk: the group is proven the tree's by what was
// left in it when the command exited.
func TestTreeStopAfterReapEndsWhatTheCommandLeft(t *testing.T) {
	dir := t.TempDir()
	tree, wait := startSh(t, dir, `sleep 300 & echo $! > p`)
	p := readPid(t, dir, "p")
	require.NoError(t, wait())
	start := time.Now()
	// A grace far longer than the bound, so that a loaded machine's
	// slowness cannot pass for a grace waited out.
	tree.Stop(2 * time.Minute)
	require.Less(t, time.Since(start), time.Minute, "SIGTERM was taken: no grace waited out")
	requireGone(t, p)
}
