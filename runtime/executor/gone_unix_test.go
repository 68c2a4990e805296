//go:build unix

package executor

import (
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireGone checks that the process pid no longer exists.
func requireGone(t *testing.T, pid string) {
	t.Helper()
	n, err := strconv.Atoi(pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(n, 0), syscall.ESRCH)
	}, 30*time.Second, 20*time.Millisecond, "process %d is still alive", n)
}
