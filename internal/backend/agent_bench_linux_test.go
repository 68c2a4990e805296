package backend

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
)

// BenchmarkAgent breaks a remote file operation down (docs/performance.md,
// "Remote backends"): one op of
//
//   - roundtrip is a line sent to a shell in the target that answers it
//     with builtins only, over the same kind of open stream as the file
//     agent's: the transport alone;
//
//   - lstat, stat and readfile are the file agent's operations on a small
//     file (one round trip each; the agent forks stat, or head and base64);
//
//   - fork-stat and fork-head-base64 are what the agent forks for them, run
//     in a loop in the target, one remote command per 1000 ops: ms/fork is
//     without the command's start, reported as ms/command-start.
//
//     go test -run XXX -bench Agent -benchtime 200x ./internal/backend/
func BenchmarkAgent(b *testing.B) {
	targets := []struct {
		name string
		new  func(b *testing.B) Backend
	}{
		{"docker", func(b *testing.B) Backend {
			d := backendtest.Docker(b)
			be, err := NewDocker(context.Background(), DockerOptions{Image: d.Image, ClientEnv: d.Env, Session: b.Name()})
			require.NoError(b, err)
			return be
		}},
		{"ssh", func(b *testing.B) Backend {
			s := backendtest.SSH(b)
			be, err := NewSSH(context.Background(), SSHOptions{Host: s.Host, Port: s.Port, User: s.User, Key: s.KeyFile, KnownHosts: s.KnownHostsFile, Cwd: b.TempDir()})
			require.NoError(b, err)
			return be
		}},
	}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			be := tg.new(b)
			b.Cleanup(func() { be.Close() })
			file := be.Cwd() + "/hermes-bench-agent.txt"
			tmp, err := be.FS().WriteTemp(be.Cwd(), "hermes-bench-agent-*", []byte("alpha\nbeta\ngamma\n"), 0o644)
			require.NoError(b, err)
			require.NoError(b, be.FS().Rename(tmp, file))
			b.Cleanup(func() { be.FS().Remove(file) })

			b.Run("roundtrip", func(b *testing.B) {
				pr, pw := io.Pipe()
				p, err := be.Start(context.Background(), Command{Argv: []string{"sh", "-c", `while IFS= read -r l; do printf '%s\n' "$l"; done`}, Dir: "/", Interactive: true, Stdout: pw})
				require.NoError(b, err)
				go func() { p.Wait(); pw.Close() }()
				b.Cleanup(func() { p.Stdin().Close(); p.Wait() })
				out := bufio.NewReader(pr)
				for b.Loop() {
					if _, err := io.WriteString(p.Stdin(), "ping\n"); err != nil {
						b.Fatal(err)
					}
					if line, err := out.ReadString('\n'); err != nil || line != "ping\n" {
						b.Fatalf("%q %v", line, err)
					}
				}
			})
			b.Run("lstat", func(b *testing.B) {
				for b.Loop() {
					if _, err := be.FS().Lstat(file); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("stat", func(b *testing.B) {
				for b.Loop() {
					if _, err := be.FS().Stat(file); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("readfile", func(b *testing.B) {
				for b.Loop() {
					if data, err := be.FS().ReadFile(file); err != nil || len(data) != 17 {
						b.Fatal(len(data), err)
					}
				}
			})
			for _, fork := range []struct{ name, cmd string }{
				{"fork-stat", `stat -L -c 'ok %f %s %Y' -- "$f" > /dev/null`},
				{"fork-head-base64", `head -c 67108865 -- "$f" | base64 -w0 > /dev/null`},
			} {
				b.Run(fork.name, func(b *testing.B) {
					loop := func(n int) string {
						return fmt.Sprintf(`f=%s; i=0; while [ $i -lt %d ]; do %s; i=$((i+1)); done`, shellQuote(file), n, fork.cmd)
					}
					// The remote command's own start, measured with no
					// iteration (the fastest of three), is taken off.
					var start time.Duration
					for i := range 3 {
						began := time.Now()
						benchRun(b, be, loop(0))
						if d := time.Since(began); i == 0 || d < start {
							start = d
						}
					}
					const per = 1000
					b.ResetTimer()
					commands := 0
					for n := b.N; n > 0; n -= per {
						benchRun(b, be, loop(min(n, per)))
						commands++
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed()-time.Duration(commands)*start)/float64(b.N)/1e6, "ms/fork")
					b.ReportMetric(float64(start)/1e6, "ms/command-start")
				})
			}
		})
	}
}

// benchRun runs a shell command on be and fails b if it fails.
func benchRun(b *testing.B, be Backend, shell string) {
	b.Helper()
	var out strings.Builder
	p, err := be.Start(context.Background(), Command{Shell: shell, Stdout: &out, Stderr: &out})
	require.NoError(b, err)
	code, err := p.Wait()
	require.NoError(b, err)
	require.Equal(b, 0, code, out.String())
}
