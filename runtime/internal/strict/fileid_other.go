//go:build !windows

package strict

import (
	"os"

	"github.com/tetratelabs/wazero/sys"
)

// identify is a no-op where an os.FileInfo carries the device, inode and
// link count (see the Windows version).
func identify(*os.Root, string, *sys.Stat_t) {}

// rootStatFollow is rootStat following a last symlink.
func rootStatFollow(root *os.Root, p string) (sys.Stat_t, error) {
	fi, err := root.Stat(p)
	if err != nil {
		return sys.Stat_t{}, err
	}
	return sys.NewStat_t(fi), nil
}
