package cmdcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDangerousSummary: the reasons of a command that matches several
// rules are joined with "; ", and the attacks the old hand-written lexer
// let through need approval.
func TestDangerousSummary(t *testing.T) {
	t.Parallel()
	reason, ok := Dangerous("sudo rm -rf /")
	require.True(t, ok)
	require.Equal(t, "runs as another user (sudo/su); delete of /, ~ or a top-level directory", reason)
	for _, cmd := range []string{
		"$(echo rm) -rf x",
		"`echo rm` -rf x",
		"a=rm; $a -rf x",
		"${RM:-rm} -rf x",
		"echo cm0gLXJmIHg= | base64 -d | sh",
		"eval ls",
		"rm -rf 'x",
	} {
		reason, ok := Dangerous(cmd)
		require.True(t, ok, "%q must be flagged", cmd)
		require.NotEmpty(t, reason)
	}
	_, ok = Dangerous("ls -la")
	require.False(t, ok)
}
