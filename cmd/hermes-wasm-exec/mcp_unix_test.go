//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestMCPClientGone: the client of `mcp` goes away while a call runs in
// the connection's session kernel, in each mode: it closes both its pipes,
// or stops reading stdout only. The server ends the call, exits 0 (no
// SIGPIPE death), and leaves no process and no staging dir behind.
func TestMCPClientGone(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the scripts read /proc")
	}
	for _, mode := range []string{"strict", "project"} {
		for _, how := range []string{"both pipes", "stdout only"} {
			t.Run(mode+"/"+how, func(t *testing.T) {
				t.Parallel()
				home, tmp, workdir := t.TempDir(), t.TempDir(), t.TempDir()
				conf := filepath.Join(home, "config.yaml")
				require.NoError(t, os.WriteFile(conf, []byte("code_execution:\n  warm_pool: 0\n"), 0o600))
				cmd := exec.Command(os.Args[0], "mcp", "--mode", mode, "--workdir", workdir, "--config", conf)
				cmd.Env = append(os.Environ(), "HERMES_CLI_MAIN=1", "HERMES_HOME="+home, "TMPDIR="+tmp)
				p := startPiped(t, cmd)
				stdin, outR, stderr, exited := p.stdin, p.out, p.stderr, p.exited

				client := mcp.NewClient(&mcp.Implementation{Name: "hermes-test", Version: "v0.0.1"}, nil)
				// The test, not the SDK, closes stdin: the SDK would when its
				// reader fails.
				cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: nopWriteCloser{stdin}}, nil)
				require.NoError(t, err, stderr.String())
				text, _, isErr := callCode(t, cs, map[string]any{"code": "x = 1"})
				require.False(t, isErr, text)
				go func() {
					_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": goneScripts[mode]}})
				}()
				procs := waitGoneFiles(t, workdir, mode)

				if how == "both pipes" {
					require.NoError(t, stdin.Close())
				}
				require.NoError(t, outR.Close())
				select {
				case <-exited:
				case <-time.After(time.Minute):
					t.Fatalf("mcp did not end when its client went away; stderr:\n%s", stderr.String())
				}
				require.Equal(t, 0, cmd.ProcessState.ExitCode(), "%v; stderr:\n%s", cmd.ProcessState, stderr.String())
				if how == "stdout only" {
					require.Contains(t, stderr.String(), "hermes-wasm-exec mcp: the client is gone (nobody reads stdout any more): shutting down")
				}
				requireProcsGone(t, procs)
				requireEmptyDir(t, tmp)
			})
		}
	}
}

// nopWriteCloser is a writer whose Close does nothing.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
