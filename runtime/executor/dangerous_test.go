package executor

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cmdcheck"
)

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
