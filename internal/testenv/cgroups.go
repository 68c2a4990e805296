package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/cgroup"
)

// CgroupsLeft lists what this test process left of its cgroups
// (internal/cgroup): leaves of its parent cgroup still there after the
// tests (a tree never released), then, once cgroup.Shutdown had the
// watcher remove the parent, any dir of this process's left in the
// parents. Call it from TestMain after m.Run; nil where cgroups are not
// used.
func CgroupsLeft() []string {
	st := cgroup.Current()
	if !st.Used {
		return nil
	}
	// Leaves whose removal raced the exit of a thread are retried first:
	// only a tree never released stays.
	cgroup.Settle(10 * time.Second)
	var left []string
	for _, parent := range st.Parents {
		leaves, _ := os.ReadDir(filepath.Join(parent, filepath.Base(st.Dir)))
		for _, l := range leaves {
			if l.IsDir() {
				left = append(left, filepath.Join(parent, filepath.Base(st.Dir), l.Name()))
			}
		}
	}
	cgroup.Shutdown()
	for _, parent := range st.Parents {
		mine, _ := filepath.Glob(filepath.Join(parent, fmt.Sprintf("hermes-%d-*", os.Getpid())))
		left = append(left, mine...)
	}
	return left
}

// MainCheckingCgroups runs the tests, then fails the run (exit status 1)
// when CgroupsLeft finds anything; it returns the exit status for os.Exit.
func MainCheckingCgroups(run func() int) int {
	code := run()
	if left := CgroupsLeft(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "cgroups left behind: %v\n", left)
		if code == 0 {
			code = 1
		}
	}
	return code
}
