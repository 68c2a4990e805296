package proctree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
)

// needCgroups skips t where this process cannot make cgroups, saying why.
func needCgroups(t *testing.T) cgroup.Status {
	t.Helper()
	st := cgroup.Current()
	if !st.Used {
		t.Skip("cgroups are not used here: " + st.Reason)
	}
	return st
}

func TestTreeStopEndsWhatLeftTheTree(t *testing.T) {
	// Without the subreaper, a daemon that double-forked out of the tree
	// (new session, new group, parent gone: re-parented to init) is out of
	// reach of the group and of the walk: only its cgroup still holds it.
	needCgroups(t)
	dir := t.TempDir()
	tree, wait := startSh(t, dir, `(setsid sh -c 'echo $$ > d; exec sleep 300' &) ; echo ok > ready; exec sleep 300`)
	daemon := readPid(t, dir, "d")
	waitLine(t, dir, "ready")
	p, ok := lookup(daemon)
	require.True(t, ok)
	require.NotEqual(t, tree.Pid(), p.ppid, "the daemon's parent must be gone")
	leaf := cgroupDir(t, tree.Pid())
	start := time.Now()
	// A grace far longer than the bound, so that a loaded machine's
	// slowness cannot pass for a grace waited out.
	tree.Stop(2 * time.Minute)
	require.Less(t, time.Since(start), time.Minute, "the daemon took SIGTERM: no grace waited out")
	wait()
	requireGone(t, daemon)
	require.NotEmpty(t, leaf, "the tree had no cgroup of its own")
	procs, err := os.ReadFile(filepath.Join(leaf, "cgroup.procs"))
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(procs)), "Stop left processes in the tree's cgroup")
}

// cgroupDir is the dir of pid's cgroup v2, in the same hierarchy as this
// process's own cgroup (the parent of the executor's parent cgroup), or ""
// when pid is not in a cgroup below this process's.
func cgroupDir(t *testing.T, pid int) string {
	t.Helper()
	v2 := func(name string) string {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				return p
			}
		}
		require.FailNow(t, "no cgroup v2 line", "%s: %s", name, b)
		return ""
	}
	own, theirs := v2("/proc/self/cgroup"), v2("/proc/"+strconv.Itoa(pid)+"/cgroup")
	rel, ok := strings.CutPrefix(theirs, own)
	if !ok || rel == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(cgroup.Current().Dir), rel)
}

func TestTreeCgroupRemovedOnRelease(t *testing.T) {
	st := needCgroups(t)
	before, _ := filepath.Glob(filepath.Join(st.Dir, "run-*"))
	tree, err := Start(exec.Command("sh", "-c", "exit 0"))
	require.NoError(t, err)
	during, _ := filepath.Glob(filepath.Join(st.Dir, "run-*"))
	require.Len(t, during, len(before)+1, "the tree's leaf cgroup")
	tree.Wait()
	tree.Release()
	after, _ := filepath.Glob(filepath.Join(st.Dir, "run-*"))
	require.ElementsMatch(t, before, after)
}

func TestStartWithLimits(t *testing.T) {
	st := needCgroups(t)
	if st.Processes.By == "" {
		t.Skip("process limits are not enforced here: " + st.Processes.Reason)
	}
	tree, err := StartWith(exec.Command("sh", "-c", `i=0; while [ $i -lt 40 ]; do sleep 300 & i=$((i+1)); done; wait`),
		Options{Limits: cgroup.Limits{Processes: 16}})
	require.NoError(t, err)
	defer tree.Release()
	deadline := time.Now().Add(20 * time.Second)
	for tree.LimitEvents().ProcessLimitHits == 0 {
		require.True(t, time.Now().Before(deadline), "no fork was refused at the limit")
		time.Sleep(10 * time.Millisecond)
	}
	tree.Kill()
	tree.Wait()
	tree.Release()
	require.Positive(t, tree.LimitEvents().ProcessLimitHits, "kept after Release")
}
