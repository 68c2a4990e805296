//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// waitScript tells the test it runs (started.txt), then waits for go.txt.
const waitScript = `from hermes_tools import write_file, read_file
import time
write_file('started.txt', 'x')
while read_file('go.txt').get('error'):
    time.sleep(0.02)
print('finished')`

type callResult struct {
	res *mcp.CallToolResult
	err error
}

// startWaitingCall starts waitScript in a new session of s and returns
// once the script runs.
func startWaitingCall(t *testing.T, s *httpMCP) <-chan callResult {
	t.Helper()
	cs, err := s.session(t, s.token)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	done := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": waitScript}})
		done <- callResult{res, err}
	}()
	waitFile(t, filepath.Join(s.workdir, "started.txt"), s)
	return done
}

func waitFile(t *testing.T, path string, s *httpMCP) {
	t.Helper()
	pollUntil(t, 2*time.Minute, func() bool {
		_, err := os.Stat(path)
		return err == nil
	}, func() string { return fmt.Sprintf("%s never appeared: %s", path, s.stderr.String()) })
}

// waitDraining waits for /readyz to turn 503 "draining".
func waitDraining(t *testing.T, s *httpMCP) {
	t.Helper()
	var code int
	var body string
	pollUntil(t, time.Minute, func() bool {
		code, body = s.get(t, "/readyz", "")
		return code == http.StatusServiceUnavailable && body == "draining\n"
	}, func() string { return fmt.Sprintf("not draining: %d %s", code, body) })
}

// TestMCPHTTPDrain: on SIGTERM the server turns unready and refuses new
// sessions, lets the running call finish, then exits 0.
func TestMCPHTTPDrain(t *testing.T) {
	t.Parallel()
	s := startHTTPMCP(t, nil, "--drain-timeout", "2m")
	s.waitReady(t)
	done := startWaitingCall(t, s)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	waitDraining(t, s)
	code, _ := s.get(t, "/healthz", "")
	require.Equal(t, http.StatusOK, code)
	_, err := s.session(t, s.token)
	require.Error(t, err, "no new session while draining")
	require.NoError(t, os.WriteFile(filepath.Join(s.workdir, "go.txt"), []byte("go"), 0o600))
	r := <-done
	require.NoError(t, r.err)
	require.False(t, r.res.IsError)
	require.Equal(t, "finished\n", r.res.Content[0].(*mcp.TextContent).Text)
	<-s.exited
	require.Equal(t, 0, s.cmd.ProcessState.ExitCode(), s.stderr.String())
	require.Contains(t, s.stderr.String(), "terminated: draining")
	left, _ := os.ReadDir(s.tmp)
	require.Empty(t, left, "temp dirs left behind")
}

// TestMCPHTTPDrainTimeout: a call still running when the drain timeout
// passes is interrupted with a reason that says so; the exit is clean.
func TestMCPHTTPDrainTimeout(t *testing.T) {
	t.Parallel()
	s := startHTTPMCP(t, nil, "--drain-timeout", "500ms")
	s.waitReady(t)
	done := startWaitingCall(t, s)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	r := <-done
	require.NoError(t, r.err)
	require.True(t, r.res.IsError)
	text := r.res.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, "drained: --drain-timeout passed")
	<-s.exited
	require.Equal(t, 0, s.cmd.ProcessState.ExitCode(), s.stderr.String())
	require.Contains(t, s.stderr.String(), "drain timeout (500ms): interrupting the calls still running")
	left, _ := os.ReadDir(s.tmp)
	require.Empty(t, left, "temp dirs left behind")
}

// TestMCPHTTPSecondSignal: a second SIGTERM while draining stops at once.
func TestMCPHTTPSecondSignal(t *testing.T) {
	t.Parallel()
	s := startHTTPMCP(t, nil, "--drain-timeout", "10m")
	s.waitReady(t)
	startWaitingCall(t, s)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	waitDraining(t, s)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	<-s.exited
	require.Equal(t, 1, s.cmd.ProcessState.ExitCode(), s.stderr.String())
	require.Contains(t, s.stderr.String(), "terminated again: stopping at once")
	left, _ := os.ReadDir(s.tmp)
	require.Empty(t, left, "temp dirs left behind")
}

// TestMCPHTTPUnixSocket: `mcp --http unix:PATH` serves Streamable HTTP on
// a socket only its owner may connect to (0600), which is its
// authentication: no token; the socket is removed at exit.
func TestMCPHTTPUnixSocket(t *testing.T) {
	t.Parallel()
	// A short dir: socket paths are limited to about 104 bytes.
	dir, err := os.MkdirTemp("", "hws-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "mcp.sock")
	s := startHTTPMCP(t, []string{"HERMES_SERVE_TOKEN="}, "--http", "unix:"+sock)
	require.Contains(t, s.stderr.String(), "serving MCP over HTTP on unix:"+sock+" at /mcp")
	require.Contains(t, s.stderr.String(), "an owner-only socket (0600): no token")
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSocket)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	s.waitReady(t)
	code, _ := s.get(t, "/metrics", "")
	require.Equal(t, http.StatusOK, code)
	cs, err := s.session(t, "")
	require.NoError(t, err)
	defer cs.Close()
	text, _, isErr := callCode(t, cs, map[string]any{"code": "print('over a socket')"})
	require.False(t, isErr, text)
	require.Equal(t, "over a socket\n", text)
	require.NoError(t, s.cmd.Process.Signal(os.Interrupt))
	<-s.exited
	require.Equal(t, 0, s.cmd.ProcessState.ExitCode(), s.stderr.String())
	require.NoFileExists(t, sock, "the socket is removed at exit")
	left, _ := os.ReadDir(s.tmp)
	require.Empty(t, left, "%v", left)
}
