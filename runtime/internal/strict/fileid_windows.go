package strict

import (
	"os"
	"syscall"

	"github.com/tetratelabs/wazero/sys"
)

// On Windows an os.FileInfo carries no file identity where wazero can read
// it (sys.NewStat_t reports inode 0 and one link), while wazero's stat of
// an open file asks the handle (GetFileInformationByHandle). Without what
// follows the same file would have two identities, and hard links,
// same-file checks and unlink-while-open could not be told apart. Files
// are opened through the root, so what is identified is what os.Root
// resolves, beneath the root.

// identify fills in st's file identity (volume serial number and file
// index) and link count for the file root resolves at p. A file that
// cannot be opened (access denied) keeps inode 0: unknown.
func identify(root *os.Root, p string, st *sys.Stat_t) {
	f, err := root.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	handleID(f, st)
}

// rootStatFollow is rootStat following a last symlink: one open, the
// file's stat and identity both asked from the handle (opens are what
// costs most on Windows, several times more under wine).
func rootStatFollow(root *os.Root, p string) (sys.Stat_t, error) {
	f, err := root.Open(p)
	if err != nil {
		// What cannot be opened (access denied) is stat-ed by name, its
		// identity unknown.
		fi, err := root.Stat(p)
		if err != nil {
			return sys.Stat_t{}, err
		}
		return sys.NewStat_t(fi), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sys.Stat_t{}, err
	}
	st := sys.NewStat_t(fi)
	handleID(f, &st)
	return st, nil
}

// handleID fills in st's identity and link count from f's handle.
func handleID(f *os.File, st *sys.Stat_t) {
	var d syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &d); err != nil {
		return
	}
	st.Dev = uint64(d.VolumeSerialNumber)
	st.Ino = uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow)
	st.Nlink = uint64(d.NumberOfLinks)
}
