//go:build unix

// Package trust tells whether a file the executor reads back as its own
// (the interpreter snapshot, the compilation cache, the configuration) may
// hold what another user wrote.
package trust

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Untrusted returns why the file or directory at path may hold what
// another user wrote, or "": it, or a directory above it, is owned by
// neither this user nor root, or is writable by other users (by anyone,
// or by a group that is not this user's own, or through an ACL naming
// other users or groups), except a sticky directory
// such as /tmp, where others cannot rename or remove what is ours. The
// same user's processes can write it whatever this says: against them,
// the protection is Landlock (internal/landlock, SECURITY.md).
func Untrusted(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Sprintf("cannot check %s: %v", path, err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return fmt.Sprintf("cannot check %s: %v", path, err)
	}
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	for p := real; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Sprintf("cannot check %s: %v", p, err)
		}
		sticky := st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0
		switch {
		case st.Uid != uid && st.Uid != 0:
			return fmt.Sprintf("%s is owned by uid %d, neither this user (uid %d) nor root", p, st.Uid, uid)
		case st.Mode&0o002 != 0 && !sticky:
			return fmt.Sprintf("%s is writable by every user", p)
		case st.Mode&0o020 != 0 && !sticky && st.Gid != gid:
			return fmt.Sprintf("%s is writable by its group (gid %d)", p, st.Gid)
		case st.Mode&0o020 != 0 && !sticky && extendedACL(p):
			// With an ACL the group bits are its mask: named users or
			// groups in it may write.
			return fmt.Sprintf("%s has an ACL that may let other users write it (getfacl shows it)", p)
		}
		if filepath.Dir(p) == p {
			return ""
		}
	}
}
