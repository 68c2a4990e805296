//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCtrlC interrupts a running script the way a user at a terminal does.
func TestCtrlC(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--mode", "strict", "-")
	cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "TMPDIR="+tmp, "HERMES_HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader("print('looping', flush=True)\nwhile True:\n    pass\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	time.Sleep(3 * time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, errb.String())
	require.Equal(t, 1, ee.ExitCode())
	var res result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	require.Equal(t, "interrupted", res.Status)
	require.True(t, strings.HasSuffix(res.Output, "[execution interrupted — interrupted by the user (Ctrl-C)]"), res.Output)
	left, _ := os.ReadDir(tmp)
	require.Empty(t, left)
}
