//go:build !unix

package testenv

import "testing"

// Unprivileged reports true: there is no root to leave here, so the rest
// of t runs in this process (see the Unix version).
func Unprivileged(t *testing.T) bool {
	t.Helper()
	return true
}

// UnprivilegedRerun reports false: Unprivileged starts no child here.
func UnprivilegedRerun() bool { return false }
