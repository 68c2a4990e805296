package hostfuncs

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// shortPathName is p's 8.3 short form (p itself where the volume has
// none).
func shortPathName(t *testing.T, p string) string {
	t.Helper()
	u, err := syscall.UTF16PtrFromString(p)
	require.NoError(t, err)
	buf := make([]uint16, 1024)
	n, err := syscall.GetShortPathName(u, &buf[0], uint32(len(buf)))
	require.NoError(t, err)
	return syscall.UTF16ToString(buf[:n])
}
