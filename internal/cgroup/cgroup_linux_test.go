package cgroup_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// helperEnv makes the test binary act as an executor (executorHelper)
// instead of running the tests.
const helperEnv = "HERMES_CGROUP_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(executorHelper())
	}
	os.Exit(testenv.MainCheckingCgroups(m.Run))
}

// executorHelper is a stand-in executor: it starts, in a cgroup of its
// own, a shell that leaves a setsid'd sleep behind, prints "daemon PID"
// and "dir P" (its parent cgroup), and blocks until it is killed. Without
// cgroups it prints "none REASON" and exits 3.
func executorHelper() int {
	g := cgroup.New(cgroup.Limits{})
	if g == nil {
		fmt.Println("none", cgroup.Current().Reason)
		return 3
	}
	cmd := exec.Command("/bin/sh", "-c", "setsid sleep 1000 >/dev/null 2>&1 & echo $!; exec sleep 1000")
	out, _ := cmd.StdoutPipe()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := g.Start(cmd); err != nil {
		fmt.Println("error", err)
		return 1
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	fmt.Println("daemon", strings.TrimSpace(line))
	fmt.Println("dir", cgroup.Current().Dir)
	io.Copy(io.Discard, os.Stdin) // until killed
	return 0
}

// needCgroups skips t where this process cannot make cgroups, saying why.
func needCgroups(t *testing.T) cgroup.Status {
	t.Helper()
	st := cgroup.Current()
	if !st.Used {
		t.Skip("cgroups are not used here: " + st.Reason)
	}
	return st
}

// needPython fails t when python3 is missing, saying what to install.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		require.FailNow(t, "this test needs python3 on PATH: install it (apt-get install python3)", "%v", err)
	}
}

// alive reports whether pid runs (a zombie whose parent is not this
// process counts as gone: its parent reaps it).
func alive(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 1 && f[0] != "Z" && f[0] != "X"
}

// waitFor waits (generous deadline) for cond, failing with what.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting until %s", what)
		time.Sleep(10 * time.Millisecond)
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startIn starts name with args in g, in a session of its own, and
// returns the command.
func startIn(t *testing.T, g *cgroup.Group, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, g.Start(cmd))
	return cmd
}

func TestGroupKillEndsDetached(t *testing.T) {
	needCgroups(t)
	g := cgroup.New(cgroup.Limits{})
	require.NotNil(t, g)
	dir := t.TempDir()
	// The daemon leaves the shell's session and group and is re-parented
	// to init: only the cgroup still knows it.
	cmd := startIn(t, g, "/bin/sh", "-c", `(setsid sh -c 'echo $$ > `+dir+`/d; exec sleep 1000' &) ; exec sleep 1000`)
	var daemon int
	waitFor(t, "the daemon wrote its pid", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "d"))
		daemon, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && daemon > 0
	})
	require.Contains(t, g.Pids(), daemon)
	require.Contains(t, g.Pids(), cmd.Process.Pid)
	require.True(t, g.Populated())
	g.Kill()
	cmd.Wait()
	waitFor(t, "the cgroup is empty", func() bool { return !g.Populated() })
	require.False(t, alive(daemon), "the daemon survived cgroup.kill")
	g.Remove()
	require.Empty(t, g.Pids())
}

func TestGroupMemoryLimit(t *testing.T) {
	st := needCgroups(t)
	if st.Memory.By == "" {
		t.Skip("memory limits are not enforced here: " + st.Memory.Reason)
	}
	needPython(t)
	g := cgroup.New(cgroup.Limits{MemoryBytes: 64 << 20})
	require.NotNil(t, g)
	defer g.Remove()
	// 512 MiB at most, in 8 MiB steps (memory it writes to, so it counts).
	cmd := startIn(t, g, "python3", "-c", "x = [bytearray(8 << 20) for _ in range(64)]")
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws := ee.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "python ended with %v, not killed by the OOM killer", err)
	require.GreaterOrEqual(t, g.Events().OOMKills, 1)
	require.Zero(t, g.Events().ProcessLimitHits)
}

func TestGroupProcessLimit(t *testing.T) {
	st := needCgroups(t)
	if st.Processes.By == "" {
		t.Skip("process limits are not enforced here: " + st.Processes.Reason)
	}
	g := cgroup.New(cgroup.Limits{Processes: 20})
	require.NotNil(t, g)
	defer g.Remove()
	// 40 background sleeps: the forks past 20 processes fail.
	cmd := startIn(t, g, "/bin/sh", "-c", `i=0; while [ $i -lt 40 ]; do sleep 1000 & i=$((i+1)); done; echo done`)
	waitFor(t, "a fork was refused", func() bool { return g.Events().ProcessLimitHits > 0 })
	require.LessOrEqual(t, len(g.Pids()), 20)
	g.Kill()
	cmd.Wait()
	waitFor(t, "the cgroup is empty", func() bool { return !g.Populated() })
	g.Remove()
	require.Positive(t, g.Events().ProcessLimitHits, "the events are kept once the group is removed")
}

// startHelper starts the test binary as a stand-in executor with attr and
// returns it with its first line.
func startHelper(t *testing.T, exe string, attr *syscall.SysProcAttr) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.SysProcAttr = attr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		stdin.Close()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(out)
}

// field reads the next line of r, which must start with key, and returns
// the rest.
func field(t *testing.T, r *bufio.Reader, key string) string {
	t.Helper()
	line, err := r.ReadString('\n')
	require.NoError(t, err, "the helper ended before it printed %q", key)
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), key+" ")
	require.True(t, ok, "the helper printed %q, not %q", line, key)
	return rest
}

// requireExecutorDeathCleansUp SIGKILLs the helper executor cmd and waits
// for its daemon and its cgroups to be gone.
func requireExecutorDeathCleansUp(t *testing.T, cmd *exec.Cmd, out *bufio.Reader, parents []string) {
	t.Helper()
	daemon, err := strconv.Atoi(field(t, out, "daemon"))
	require.NoError(t, err)
	p := field(t, out, "dir")
	require.True(t, exists(p), "the helper's parent cgroup %s", p)
	require.True(t, alive(daemon))
	t.Cleanup(func() {
		if alive(daemon) {
			syscall.Kill(daemon, syscall.SIGKILL)
		}
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	waitFor(t, "the daemon is gone", func() bool { return !alive(daemon) })
	name := filepath.Base(p)
	waitFor(t, "the helper's cgroups are removed", func() bool {
		for _, parent := range parents {
			if exists(filepath.Join(parent, name)) {
				return false
			}
		}
		return true
	})
}

func TestExecutorDeathKillsItsCgroups(t *testing.T) {
	st := needCgroups(t)
	cmd, out := startHelper(t, os.Args[0], nil)
	requireExecutorDeathCleansUp(t, cmd, out, st.Parents)
}

// TestDelegatedCgroup runs the stand-in executor as an unprivileged user
// (nobody) in a cgroup delegated to it by hand, as systemd delegates a
// user's own slice: chown of the dir and of its cgroup.procs,
// cgroup.subtree_control and cgroup.threads.
func TestDelegatedCgroup(t *testing.T) {
	st := needCgroups(t)
	if os.Geteuid() != 0 {
		t.Skip("delegating a cgroup by hand needs root")
	}
	const nobody = 65534
	x := filepath.Dir(st.Dir)
	d := filepath.Join(x, fmt.Sprintf("delegated-test-%d", os.Getpid()))
	require.NoError(t, os.Mkdir(d, 0o755))
	t.Cleanup(func() {
		waitFor(t, "the delegated cgroup can be removed", func() bool {
			return os.Remove(d) == nil || !exists(d)
		})
	})
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		require.NoError(t, os.Chown(filepath.Join(d, f), nobody, nobody))
	}
	// nobody must be able to run the test binary.
	bin := filepath.Join(t.TempDir(), "helper")
	require.NoError(t, os.Chmod(filepath.Dir(bin), 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(filepath.Dir(bin)), 0o755))
	src, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, src, 0o755))
	dfd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(dfd)
	attr := func(cgroupFD int, use bool) *syscall.SysProcAttr {
		return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
			UseCgroupFD: use, CgroupFD: cgroupFD}
	}

	t.Run("delegated", func(t *testing.T) {
		cmd, out := startHelper(t, bin, attr(dfd, true))
		requireExecutorDeathCleansUp(t, cmd, out, []string{d})
	})
	t.Run("not delegated", func(t *testing.T) {
		// In the test's own cgroup, root's: no cgroups, and a run goes on
		// without them.
		cmd, out := startHelper(t, bin, attr(0, false))
		reason := field(t, out, "none")
		require.Contains(t, reason, "cannot create a cgroup in "+x)
		require.Contains(t, reason, "permission denied")
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 3, ee.ExitCode())
	})
}

func TestStaleCgroupsOfDeadExecutorsAreRemoved(t *testing.T) {
	st := needCgroups(t)
	x := st.Parents[0]
	// A dead executor's dirs: its parent cgroup, with a process still in
	// it, and its v1 dirs (pid 4194304 is past any pid_max: not running).
	dead := "hermes-4194304-deadbeef"
	// Kept: a live executor's (its lock held), in X and, as if it ran in
	// another v2 cgroup but the same v1 ones, in the v1 hierarchies only;
	// and one whose pid runs (pid 1: an executor between its mkdir and its
	// lock).
	live, starting := "hermes-4194305-cafe", "hermes-1-0"
	require.NoError(t, os.MkdirAll(filepath.Join(x, dead, "run-1"), 0o755))
	var kept []string
	for _, parent := range st.Parents {
		if parent != x {
			require.NoError(t, os.MkdirAll(filepath.Join(parent, dead, "run-1"), 0o755))
		}
		for _, name := range []string{live, starting} {
			d := filepath.Join(parent, name)
			require.NoError(t, os.Mkdir(d, 0o755))
			t.Cleanup(func() { os.Remove(d) })
			kept = append(kept, d)
			if name == live {
				lock, err := os.Open(d)
				require.NoError(t, err)
				require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_EX))
				t.Cleanup(func() { lock.Close() })
			}
		}
	}
	leaf, err := unix.Open(filepath.Join(x, dead, "run-1"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	left := exec.Command("sleep", "1000")
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: leaf}
	require.NoError(t, left.Start())
	unix.Close(leaf)
	t.Cleanup(func() { left.Process.Kill() })
	waited := make(chan error, 1)
	go func() { waited <- left.Wait() }()

	// The next executor to start (this process, once more) cleans up.
	cgroup.Shutdown()
	require.True(t, cgroup.Current().Used)
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		require.Fail(t, "the dead executor's process was not killed")
	}
	for _, parent := range st.Parents {
		require.False(t, exists(filepath.Join(parent, dead)), "the dead executor's dir in %s", parent)
	}
	for _, d := range kept {
		require.True(t, exists(d), "%s was removed", d)
	}
}

// TestExecutorMovesItselfToEnableControllers runs the stand-in executor
// alone in a cgroup of its own whose children lack a controller it wants
// (cgroup v2's no-internal-process rule: a cgroup with processes cannot
// enable controllers for its children). It moves itself to a leaf, enables
// the controller, and its leaves get it; when it is killed, the watcher
// undoes all of it. hugetlb stands in for memory and pids, which this
// machine's hybrid hierarchy binds to cgroup v1.
func TestExecutorMovesItselfToEnableControllers(t *testing.T) {
	st := needCgroups(t)
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup with a controller to delegate needs root here")
	}
	x := st.Parents[0]
	const c = "hugetlb"
	if _, err := os.Stat(filepath.Join(x, "cgroup.type")); err == nil {
		t.Skip(x + " is not the root cgroup: enabling " + c + " for its children is not this test's to do")
	}
	if !strings.Contains(readFile(t, filepath.Join(x, "cgroup.controllers")), c) {
		t.Skip("no " + c + " controller in " + x)
	}
	if !strings.Contains(readFile(t, filepath.Join(x, "cgroup.subtree_control")), c) {
		require.NoError(t, os.WriteFile(filepath.Join(x, "cgroup.subtree_control"), []byte("+"+c), 0))
		t.Cleanup(func() { os.WriteFile(filepath.Join(x, "cgroup.subtree_control"), []byte("-"+c), 0) })
	}
	own := filepath.Join(x, fmt.Sprintf("alone-test-%d", os.Getpid()))
	require.NoError(t, os.Mkdir(own, 0o755))
	t.Cleanup(func() {
		waitFor(t, "the test cgroup can be removed", func() bool { return os.Remove(own) == nil || !exists(own) })
	})
	require.Contains(t, readFile(t, filepath.Join(own, "cgroup.controllers")), c)
	fd, err := unix.Open(own, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)

	t.Setenv("HERMES_CGROUP_TEST_CONTROLLER", c)
	cmd, out := startHelper(t, os.Args[0], &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd})
	daemonLine, err := out.ReadString('\n')
	require.NoError(t, err)
	dirLine, err := out.ReadString('\n')
	require.NoError(t, err)
	p := strings.TrimPrefix(strings.TrimSpace(dirLine), "dir ")
	require.Equal(t, own, filepath.Dir(p))
	// The executor moved itself next to P; the controller reached the
	// leaves.
	require.Contains(t, readFile(t, fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid)), filepath.Base(p)+".exec")
	require.Contains(t, readFile(t, filepath.Join(own, "cgroup.subtree_control")), c)
	leaves, _ := filepath.Glob(filepath.Join(p, "run-*", c+".*.max"))
	require.NotEmpty(t, leaves, "the leaves have no %s files", c)

	requireExecutorDeathCleansUp(t, cmd, bufio.NewReader(strings.NewReader(daemonLine+dirLine)), []string{own})
	waitFor(t, "the watcher undid the move", func() bool {
		ents, _ := os.ReadDir(own)
		for _, e := range ents {
			if e.IsDir() {
				return false
			}
		}
		return strings.TrimSpace(readFile(t, filepath.Join(own, "cgroup.subtree_control"))) == "" &&
			strings.TrimSpace(readFile(t, filepath.Join(own, "cgroup.procs"))) == ""
	})
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// BenchmarkStart is what a cgroup adds to starting and ending a short
// command: making the leaf (and the v1 leaves with limits), cloning into
// it, removing it.
func BenchmarkStart(b *testing.B) {
	if st := cgroup.Current(); !st.Used {
		b.Skip("cgroups are not used here: " + st.Reason)
	}
	run := func(b *testing.B, g *cgroup.Group) {
		cmd := exec.Command("/bin/true")
		if err := g.Start(cmd); err != nil {
			b.Fatal(err)
		}
		cmd.Wait()
		g.Remove()
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			run(b, nil)
		}
	})
	b.Run("cgroup", func(b *testing.B) {
		for b.Loop() {
			run(b, cgroup.New(cgroup.Limits{}))
		}
	})
	b.Run("cgroup-limits", func(b *testing.B) {
		for b.Loop() {
			run(b, cgroup.New(cgroup.Limits{MemoryBytes: 1 << 30, Processes: 256}))
		}
	})
}

func BenchmarkNewRemove(b *testing.B) {
	if st := cgroup.Current(); !st.Used {
		b.Skip("cgroups are not used here: " + st.Reason)
	}
	for b.Loop() {
		cgroup.New(cgroup.Limits{}).Remove()
	}
}

// BenchmarkSetup is the first start's extra cost in a process: the
// parent cgroup, the v1 dirs, the look for dead executors' cgroups and
// the watcher's start.
func BenchmarkSetup(b *testing.B) {
	if st := cgroup.Current(); !st.Used {
		b.Skip("cgroups are not used here: " + st.Reason)
	}
	for b.Loop() {
		b.StopTimer()
		cgroup.Shutdown()
		b.StartTimer()
		cgroup.Current()
	}
}

// A launcher that forks on a thread of its own joins that thread to the
// v1 leaves (Join) and lets it end once the command is reaped. Remove
// used to run as the thread was still ending: the v1 leaves stayed
// behind, busy, until a later New or the watcher.
func TestRemoveWaitsForTheForkingThreadToLeave(t *testing.T) {
	st := needCgroups(t)
	g0 := cgroup.New(cgroup.Limits{MemoryBytes: 1 << 30, Processes: 64})
	require.NotNil(t, g0)
	hasV1 := g0.Joiner() != nil
	g0.Remove()
	if !hasV1 {
		t.Skip("no cgroup v1 leaves here: the command is cloned straight into its cgroup")
	}
	leaves := func() []string {
		var left []string
		for _, parent := range st.Parents {
			ents, _ := os.ReadDir(filepath.Join(parent, filepath.Base(st.Dir)))
			for _, e := range ents {
				if e.IsDir() {
					left = append(left, filepath.Join(parent, filepath.Base(st.Dir), e.Name()))
				}
			}
		}
		return left
	}
	for i := 0; i < 20; i++ {
		g := cgroup.New(cgroup.Limits{MemoryBytes: 1 << 30, Processes: 64})
		require.NotNil(t, g)
		cmd := exec.Command("true")
		g.Prepare(cmd)
		started := make(chan error, 1)
		release := make(chan struct{})
		cgroup.OnThreadOfItsOwn(func() {
			g.Join()
			started <- cmd.Start()
			<-release
		})
		require.NoError(t, <-started)
		cmd.Wait()
		close(release)
		g.Remove()
		require.Empty(t, leaves(), "round %d: Remove left the leaves of a group whose forking thread was ending", i)
	}
}
