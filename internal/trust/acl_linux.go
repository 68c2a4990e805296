package trust

import "golang.org/x/sys/unix"

// extendedACL reports whether path has a POSIX access ACL beyond its mode
// bits: named users or groups, which may write it when the ACL's mask (the
// mode's group bits then) has write. A file system without ACLs has none.
func extendedACL(path string) bool {
	n, err := unix.Lgetxattr(path, "system.posix_acl_access", nil)
	return err == nil && n > 0
}
