package trust

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// setACL gives path a POSIX access ACL (the xattr's binary form, as
// setfacl writes it): owner rw, a named user uid rw, group r, mask rw,
// other nothing.
func setACL(t *testing.T, path string, uid uint32) {
	t.Helper()
	const undefined = 0xffffffff
	entries := []struct {
		tag, perm uint16
		id        uint32
	}{
		{0x01, 6, undefined}, // ACL_USER_OBJ
		{0x02, 6, uid},       // ACL_USER
		{0x04, 4, undefined}, // ACL_GROUP_OBJ
		{0x10, 6, undefined}, // ACL_MASK
		{0x20, 0, undefined}, // ACL_OTHER
	}
	b := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	if err := unix.Lsetxattr(path, "system.posix_acl_access", b, 0); errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("the file system of %s has no POSIX ACLs", path)
	} else {
		require.NoError(t, err)
	}
}

// TestUntrustedACL: a snapshot whose mode says 0660 with this user's own
// group, but whose ACL lets another user write it, is not trusted (the
// mode bits alone passed it). A file
// without an extended ACL, or whose ACL mask has no write, still is.
func TestUntrustedACL(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o700))
	snap := filepath.Join(root, "snapshot.bin")
	require.NoError(t, os.WriteFile(snap, nil, 0o600))
	require.Empty(t, Untrusted(snap))
	setACL(t, snap, 4242)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(snap, &st))
	require.Equal(t, uint32(0o660), st.Mode&0o777, "the mask shows as the group bits")
	require.Contains(t, Untrusted(snap), snap+" has an ACL that may let other users write it")

	require.NoError(t, os.Chmod(snap, 0o640)) // the mask loses write
	require.Empty(t, Untrusted(snap))
}
