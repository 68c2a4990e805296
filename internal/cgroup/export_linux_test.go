package cgroup

import "os"

// extraControllerEnv names a controller the test binary enables as well,
// as it enables memory and pids (TestExecutorMovesItselfToEnableControllers):
// hugetlb, the one controller the v2 side of a hybrid hierarchy has,
// stands in for them where they are bound to cgroup v1.
const extraControllerEnv = "HERMES_CGROUP_TEST_CONTROLLER"

func init() {
	if c := os.Getenv(extraControllerEnv); c != "" {
		limitControllers = append(limitControllers, c)
	}
}
