package cgroup

import (
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// mount is one cgroup filesystem as /proc/self/mountinfo lists it.
type mount struct {
	// point is where it is mounted; root is the cgroup its root is (as
	// this process's cgroup namespace names it).
	point, root string
	// v2 is true for cgroup2; controllers are a v1 hierarchy's.
	v2          bool
	controllers []string
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a mountinfo
// file (proc(5)): "id parent maj:min root point options [optional...] -
// fstype source superoptions".
func parseMountinfo(text string) []mount {
	var ms []mount
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		sep := -1
		for i, w := range f {
			if w == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 > len(f) {
			continue
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		m := mount{point: unescapeMount(f[4]), root: unescapeMount(f[3]), v2: fstype == "cgroup2"}
		if !m.v2 && sep+3 < len(f) {
			for _, o := range strings.Split(f[sep+3], ",") {
				switch {
				case o == "rw" || o == "ro" || strings.Contains(o, "="):
				default:
					m.controllers = append(m.controllers, o)
				}
			}
		}
		ms = append(ms, m)
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// membership is this process's cgroups as /proc/self/cgroup lists them:
// the v2 path ("" when there is no v2 line) and the v1 path of each v1
// controller.
type membership struct {
	v2    string
	hasV2 bool
	v1    map[string]string
}

// parseProcCgroup reads a /proc/<pid>/cgroup file (cgroups(7)):
// "hierarchy-id:controller,list:path", "0::path" for v2.
func parseProcCgroup(text string) membership {
	m := membership{v1: map[string]string{}}
	for _, line := range strings.Split(text, "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && ctrls == "" {
			m.v2, m.hasV2 = p, true
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c != "" && !strings.HasPrefix(c, "name=") {
				m.v1[c] = p
			}
		}
	}
	return m
}

// dirOf is the directory of the cgroup p (a path as /proc/self/cgroup
// names it) under the mount m, or "" when m does not reach p (its root is
// another branch of the hierarchy, or p climbs out of this process's
// cgroup namespace: "/../..").
func dirOf(m mount, p string) string {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "/..") || strings.HasSuffix(p, " (deleted)") {
		return ""
	}
	root := path.Clean(m.root)
	p = path.Clean(p)
	switch {
	case root == "/":
	case p == root:
		p = "/"
	case strings.HasPrefix(p, root+"/"):
		p = p[len(root):]
	default:
		return ""
	}
	return path.Join(m.point, p)
}

// v2Mount is the cgroup2 mount that reaches the v2 cgroup p, if any.
func v2Mount(ms []mount, p string) (mount, string, bool) {
	for _, m := range ms {
		if m.v2 {
			if d := dirOf(m, p); d != "" {
				return m, d, true
			}
		}
	}
	return mount{}, "", false
}

// v1Dir is the directory of this process's cgroup in the v1 hierarchy
// that has controller c, or "".
func v1Dir(ms []mount, own membership, c string) string {
	p, ok := own.v1[c]
	if !ok {
		return ""
	}
	for _, m := range ms {
		if !m.v2 && slices.Contains(m.controllers, c) {
			if d := dirOf(m, p); d != "" {
				return d
			}
		}
	}
	return ""
}

// MountPoints returns where this process sees cgroup file systems mounted
// (cgroup and cgroup2), for Landlock to protect: a process of a run that
// could write there could move itself out of its tree's cgroup, or lift
// its limits.
func MountPoints() []string {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range parseMountinfo(string(mi)) {
		if !slices.Contains(out, m.point) {
			out = append(out, m.point)
		}
	}
	return out
}
