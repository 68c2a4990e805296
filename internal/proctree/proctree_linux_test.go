package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests start real processes and switch the subreaper on and off
// for the whole test process: they do not run in parallel.

// withSubreaper runs the test with the subreaper on (off again after).
func withSubreaper(t *testing.T) {
	t.Helper()
	require.NoError(t, EnableSubreaper())
	t.Cleanup(func() {
		require.NoError(t, setSubreaper(false))
		requireNoZombies(t)
	})
}

// startSh starts script with sh -c in dir through Start; the script's
// pid files land in dir.
// The returned function blocks until Wait has returned, and returns its
// error.
func startSh(t *testing.T, dir, script string) (*Tree, func() error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	tree, err := Start(cmd)
	require.NoError(t, err)
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = tree.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		tree.Release()
		<-done
	})
	return tree, func() error { <-done; return waitErr }
}

// waitLine waits (generous deadline) for dir/name to hold a line and
// returns it.
func waitLine(t *testing.T, dir, name string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		require.True(t, time.Now().Before(deadline), "%s never appeared", name)
		time.Sleep(10 * time.Millisecond)
	}
}

// readPid waits for dir/name to hold a pid and returns it; the process is
// killed at the end of the test if it is still there.
func readPid(t *testing.T, dir, name string) int {
	t.Helper()
	pid, err := strconv.Atoi(waitLine(t, dir, name))
	require.NoError(t, err, name)
	require.Greater(t, pid, 1, name)
	t.Cleanup(func() {
		if !gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// gone reports whether pid no longer runs: absent, or a zombie that is not
// ours to reap (a zombie of ours must have been reaped by the sweep).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	p, ok := lookup(pid)
	return !ok || p.zombie && p.ppid != os.Getpid()
}

// requireGone waits (generous deadline) for every pid to be gone.
func requireGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			require.True(t, time.Now().Before(deadline), "process %d survived", pid)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// withMarker lists the live (not zombie) processes whose command line
// contains marker.
func withMarker(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if p, ok := lookup(pid); ok && !p.zombie {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireNoZombies waits (generous deadline) until no child of this
// process is a zombie.
func requireNoZombies(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		procs, ok := snapshot()
		require.True(t, ok)
		var zombies []int
		for _, p := range procs {
			if p.ppid == os.Getpid() && p.zombie {
				zombies = append(zombies, p.pid)
			}
		}
		if len(zombies) == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "zombies left: %v", zombies)
		time.Sleep(10 * time.Millisecond)
	}
}

// detachingScript starts, from a tree's root shell:
//   - a double fork with setsid (the middle process exits at once): p1;
//   - a new session that stays attached to the root by its parent link,
//     with a child of its own: p2 (the session's shell) and p2c;
//   - a child that ignores SIGTERM: p3;
//
// then writes "ready" and waits.
const detachingScript = `
( setsid sleep 300 >/dev/null 2>&1 & echo $! > p1 )
setsid sh -c 'sleep 300 & echo $! > p2c; echo $$ > p2; wait' &
sh -c 'trap "" TERM; echo $$ > p3; exec sleep 300' &
echo ok > ready
wait
`

func TestTreeStopKillsDetachedWithSubreaper(t *testing.T) {
	withSubreaper(t)
	dir := t.TempDir()
	tree, wait := startSh(t, dir, detachingScript)
	pids := []int{tree.Pid()}
	for _, f := range []string{"p1", "p2", "p2c", "p3"} {
		pids = append(pids, readPid(t, dir, f))
	}
	waitLine(t, dir, "ready")
	start := time.Now()
	tree.Stop(time.Second)
	elapsed := time.Since(start)
	// p3 ignores SIGTERM: the grace is waited out, then SIGKILL (not its
	// 300 s sleep: the upper bound is loose for a loaded machine).
	require.GreaterOrEqual(t, elapsed, time.Second)
	require.Less(t, elapsed, time.Minute)
	wait()
	requireGone(t, pids...)
	requireNoZombies(t)
}

// needPython fails the test at once, saying what to install, when there
// is no python3 on PATH (the scripts below need os.fork and os.setpgid).
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		require.FailNow(t, "this test needs python3 on PATH: install it (apt-get install python3, "+
			"dnf install python3, brew install python)", "%v", err)
	}
}

func TestTreeStopWithoutSubreaperKillsAttached(t *testing.T) {
	// Without the subreaper, the walk of the process table still finds
	// every process attached to the tree by parent links, whatever its
	// group or session.
	needPython(t)
	dir := t.TempDir()
	tree, wait := startSh(t, dir, `
setsid sh -c 'sleep 300 & echo $! > p2c; echo $$ > p2; wait' &
python3 -c 'import os, time; os.setpgid(0, 0); open("p4", "w").write("%d\n" % os.getpid()); time.sleep(300)' &
wait
`)
	pids := []int{tree.Pid(), readPid(t, dir, "p2"), readPid(t, dir, "p2c"), readPid(t, dir, "p4")}
	start := time.Now()
	// A grace far longer than the bound, so that a loaded machine's
	// slowness cannot pass for a grace waited out.
	tree.Stop(2 * time.Minute)
	require.Less(t, time.Since(start), time.Minute, "every process took SIGTERM: no grace waited out")
	wait()
	requireGone(t, pids...)
}

func TestTreeOrphansSweptWhenRootExits(t *testing.T) {
	// The root exits at once, leaving a setsid'd daemon and a nohup'd one
	// behind; its SIGCHLD sweeps them, without any Stop.
	needPython(t)
	withSubreaper(t)
	dir := t.TempDir()
	// The double-forked daemon is adopted, and may be swept, before it
	// gets to record its pid: it is found by a marker in its command line.
	marker := fmt.Sprintf("proctree-daemon-%d-%d", os.Getpid(), time.Now().UnixNano())
	_, wait := startSh(t, dir, `
setsid sleep 300 >/dev/null 2>&1 & echo $! > p1
python3 -c 'import os, sys, time
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): sys.exit(0)
time.sleep(300)' `+marker+` &
`)
	p1 := readPid(t, dir, "p1")
	require.NoError(t, wait())
	requireGone(t, p1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := withMarker(marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			require.Fail(t, "the double-forked daemon survived", "pids %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	requireNoZombies(t)
}

func TestTreeSweepSparesRegisteredChildren(t *testing.T) {
	// While orphans are swept on every SIGCHLD, each command started
	// through Start still gets its own exit status from Wait.
	withSubreaper(t)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := "exit 3"
			if i%2 == 0 {
				script = "setsid sleep 300 >/dev/null 2>&1 & exit 3"
			}
			tree, err := Start(exec.Command("sh", "-c", script))
			if err != nil {
				errs <- err
				return
			}
			err = tree.Wait()
			tree.Release()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.Fail(t, "a command's exit status was lost", "%v", err)
	}
	requireNoZombies(t)
}

func TestTreeKillCutsStopShort(t *testing.T) {
	dir := t.TempDir()
	tree, wait := startSh(t, dir, `trap "" TERM; echo $$ > p; while :; do sleep 1; done`)
	readPid(t, dir, "p")
	stopped := make(chan struct{})
	go func() {
		tree.Stop(time.Minute)
		close(stopped)
	}()
	// Kill once the Stop is under way (in its grace: nothing here takes
	// SIGTERM).
	deadline := time.Now().Add(30 * time.Second)
	for {
		tree.mu.Lock()
		stopping := tree.stopping
		tree.mu.Unlock()
		if stopping {
			break
		}
		require.True(t, time.Now().Before(deadline), "the Stop never began")
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	tree.Kill()
	<-stopped
	// Not the Stop's minute of grace (loose for a loaded machine).
	require.Less(t, time.Since(start), 30*time.Second)
	wait()
	requireGone(t, tree.Pid())
}

// TestStartWithLaunch: Options.Launch forks the command (through the
// start it is given) and its release is called once, after the command
// is reaped, not before; a Launch error is Start's.
func TestStartWithLaunch(t *testing.T) {
	var calls, releases int
	reapedBefore := false
	var tree *Tree
	launch := func(before func(), start func() error) (func(), error) {
		if before != nil {
			before()
		}
		calls++
		return func() {
			releases++
			reapedBefore = tree.cmd.ProcessState != nil
		}, start()
	}
	cmd := exec.Command("sh", "-c", "exit 3")
	var err error
	tree, err = StartWith(cmd, Options{Launch: launch})
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.Zero(t, releases)
	var exit *exec.ExitError
	require.ErrorAs(t, tree.Wait(), &exit)
	require.Equal(t, 3, exit.ExitCode())
	require.Equal(t, 1, releases)
	require.True(t, reapedBefore, "released before the command was reaped")
	tree.Release()
	require.Equal(t, 1, releases, "released twice")

	boom := errors.New("boom")
	_, err = StartWith(exec.Command("sh", "-c", "true"), Options{Launch: func(func(), func() error) (func(), error) { return nil, boom }})
	require.ErrorIs(t, err, boom)
}
