package cpustat

import (
	"os"
	"strconv"
	"strings"
)

// RSS is this process's resident set size in bytes, from
// /proc/self/status (Linux; ok is false elsewhere).
func RSS() (bytes int64, ok bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, found := strings.CutPrefix(line, "VmRSS:"); found {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n << 10, err == nil
			}
		}
	}
	return 0, false
}
