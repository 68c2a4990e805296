package cgroup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The hierarchies the executor meets, as /proc/self/mountinfo and
// /proc/self/cgroup show them.
const (
	// hybridMounts: v2 at /sys/fs/cgroup/unified for grouping only, the
	// controllers on v1 hierarchies (this test machine).
	hybridMounts = `25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
33 25 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 33 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 33 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 33 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
37 33 0:32 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
38 33 0:33 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
`
	hybridCgroup = `9:name=systemd:/
8:pids:/
4:memory:/process_api/bd4b
1:cpu:/
0::/
`
	// pureMounts: a systemd host with only cgroup v2.
	pureMounts = `30 1 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	pureCgroup = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n"
	// containerMounts: a container without a cgroup namespace, the host's
	// cgroup of the container bind-mounted at /sys/fs/cgroup.
	containerMounts = `500 480 0:26 /system.slice/docker-ab.scope /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw
`
)

func TestDetect(t *testing.T) {
	cases := []struct {
		name, mounts, cgroup string
		// v2 is the executor's v2 cgroup dir ("": none reachable); mem and
		// pids its v1 dirs.
		v2, mem, pids string
	}{
		{name: "hybrid", mounts: hybridMounts, cgroup: hybridCgroup,
			v2: "/sys/fs/cgroup/unified", mem: "/sys/fs/cgroup/memory/process_api/bd4b", pids: "/sys/fs/cgroup/pids"},
		{name: "pure v2", mounts: pureMounts, cgroup: pureCgroup,
			v2: "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope"},
		{name: "container without cgroupns, in its own cgroup", mounts: containerMounts,
			cgroup: "0::/system.slice/docker-ab.scope/init\n", v2: "/sys/fs/cgroup/init"},
		{name: "container without cgroupns, another branch", mounts: containerMounts,
			cgroup: "0::/user.slice\n"},
		{name: "outside the cgroup namespace", mounts: pureMounts, cgroup: "0::/../../sibling\n"},
		{name: "cgroup removed", mounts: pureMounts, cgroup: "0::/a.scope (deleted)\n"},
		{name: "v1 only", mounts: `34 33 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
`, cgroup: "4:memory:/\n", mem: "/sys/fs/cgroup/memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms, own := parseMountinfo(tc.mounts), parseProcCgroup(tc.cgroup)
			_, dir, ok := v2Mount(ms, own.v2)
			require.Equal(t, tc.v2, dir)
			require.Equal(t, tc.v2 != "", ok)
			require.Equal(t, tc.mem, v1Dir(ms, own, "memory"))
			require.Equal(t, tc.pids, v1Dir(ms, own, "pids"))
		})
	}
}

func TestParseMountinfoEscapes(t *testing.T) {
	ms := parseMountinfo(`40 33 0:40 / /mnt/cg\040two rw - cgroup2 none rw` + "\n")
	require.Len(t, ms, 1)
	require.Equal(t, "/mnt/cg two", ms[0].point)
}

func TestKeyed(t *testing.T) {
	events := "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n"
	require.Equal(t, 2, keyed(events, "oom_kill"))
	require.Equal(t, 12, keyed(events, "max"))
	require.Equal(t, 0, keyed(events, "absent"))
	require.Equal(t, 1, keyed("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", "oom_kill"))
}
