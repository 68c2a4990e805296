package executor

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cmdcheck"
)

// TestDangerousCommand: the exported check is internal/cmdcheck's (whose
// tests hold the rule table); the attacks the old hand-written lexer let
// through now need approval.
func TestDangerousCommand(t *testing.T) {
	t.Parallel()
	reason, ok := DangerousCommand("sudo rm -rf /")
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
		reason, ok := DangerousCommand(cmd)
		require.True(t, ok, "%q must be flagged", cmd)
		require.NotEmpty(t, reason)
	}
	_, ok = DangerousCommand("ls -la")
	require.False(t, ok)
}

// TestApprovalNonLiteralCommand: a command whose name is only known at run
// time is asked about in a CLI session (it ran unasked before).

// TestCallShell: a call's terminal() commands are checked in the dialect
// of the shell that runs them: this host's (cmd.exe on Windows without Git
// Bash), a remote backend's POSIX sh.
func TestCallShell(t *testing.T) {
	t.Parallel()
	local := cmdcheck.Sh
	if backend.LocalRunsCmd() {
		local = cmdcheck.Cmd
	}
	require.Equal(t, local, (&call{}).shell())
	if runtime.GOOS != "windows" {
		require.Equal(t, cmdcheck.Sh, (&call{}).shell())
	}
	require.Equal(t, cmdcheck.Sh, (&call{backend: remoteStub{}}).shell())
}

// remoteStub is a remote backend for TestCallShell (only its presence
// matters).
type remoteStub struct{ backend.Backend }
