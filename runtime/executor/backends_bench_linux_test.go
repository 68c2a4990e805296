package executor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// The remote backends' speed goals live here, never in timed tests
// (docs/performance.md, "Remote backends", has the measured table):
//
//	go test -run XXX -bench 'Remote|DockerExecTrue|SSHTrue' -benchtime 20x ./runtime/executor/

// benchFile is the small file the read_file benchmarks read, in the
// backend's cwd.
const (
	benchFile    = "hermes-bench-small.txt"
	benchContent = "alpha\nbeta\ngamma\n"
)

// benchExecutor is an executor on rc's backend with a warm session:
// benchFile written in the backend's cwd, and the session's kernel (or
// its strict-mode one) started.
func benchExecutor(b *testing.B, rc remoteCase, mode, session string) *executor.Executor {
	b.Helper()
	cfg := rc.cfg(b)
	cfg.CodeExecution.MaxToolCalls = 1 << 30
	ex := newRemoteExecutor(b, rc, cfg)
	res := benchExecute(b, ex, mode, session, fmt.Sprintf("from hermes_tools import write_file\nr = write_file(%q, %q)\nassert 'error' not in r, r\n", benchFile, benchContent))
	require.Empty(b, res.Output)
	return ex
}

func benchExecute(b *testing.B, ex *executor.Executor, mode, session, code string) executor.Result {
	b.Helper()
	res, err := ex.Execute(context.Background(), executor.Request{Mode: mode, Session: session, Code: code})
	require.NoError(b, err)
	require.Equal(b, config.StatusSuccess, res.Status, "%+v", res)
	return res
}

// readLoop is a script making n read_file calls of benchFile and printing
// the seconds they took, measured in the script.
func readLoop(n int) string {
	return fmt.Sprintf(`import time
from hermes_tools import read_file
t0 = time.perf_counter()
for _ in range(%d):
    r = read_file(%q)
t1 = time.perf_counter()
assert "3|gamma" in r.get("content", ""), r
print(t1 - t0)
`, n, benchFile)
}

// BenchmarkRemoteToolCall is a read_file of a small file in the backend's
// cwd, from a script in a warm session: one op is one tool call. The
// script times its loop: ms/read_file is what one call costs the script;
// host-ms/read_file is the part spent in the executor serving it (the
// file agent's round trips), the rest is the way to and from the script.
// The goal: at most 5 ms in project mode with the docker backend
// (Hermes polls a file for 50 to 250 ms).
func BenchmarkRemoteToolCall(b *testing.B) {
	for _, rc := range remoteCases(b) {
		b.Run(rc.name, func(b *testing.B) {
			for _, mode := range []string{config.ModeProject, config.ModeStrict} {
				b.Run(mode, func(b *testing.B) {
					session := "bench-tool-" + rc.name + "-" + mode
					ex := benchExecutor(b, rc, mode, session)
					b.ResetTimer()
					res := benchExecute(b, ex, mode, session, readLoop(b.N))
					b.StopTimer()
					secs, err := strconv.ParseFloat(strings.TrimSpace(res.Output), 64)
					require.NoError(b, err, res.Output)
					b.ReportMetric(secs*1000/float64(b.N), "ms/read_file")
					require.Len(b, res.ToolCalls, b.N)
					var host float64
					for _, c := range res.ToolCalls {
						host += c.DurationMS
					}
					b.ReportMetric(host/float64(b.N), "host-ms/read_file")
				})
			}
		})
	}
}

// BenchmarkRemoteKernelCall is a project-mode call print(1) on a warm
// session kernel in the backend: one op is one Execute.
func BenchmarkRemoteKernelCall(b *testing.B) {
	for _, rc := range remoteCases(b) {
		b.Run(rc.name, func(b *testing.B) {
			session := "bench-kernel-" + rc.name
			cfg := rc.cfg(b)
			ex := newRemoteExecutor(b, rc, cfg)
			res := benchExecute(b, ex, config.ModeProject, session, "print(1)")
			require.NotNil(b, res.Kernel)
			for b.Loop() {
				res := benchExecute(b, ex, config.ModeProject, session, "print(1)")
				if res.Output != "1\n" || res.Kernel == nil || !res.Kernel.Reused {
					b.Fatalf("not a warm kernel's call: %+v", res)
				}
			}
		})
	}
}

// BenchmarkDockerExecTrue is the anchor of the docker backend: a plain
// docker exec CTR true, one op each.
func BenchmarkDockerExecTrue(b *testing.B) {
	d := backendtest.Docker(b)
	ctr := fmt.Sprintf("hermes-bench-true-%d", os.Getpid())
	d.Run(b, "run", "-d", "--init", "--network", "none", "--name", ctr, "--entrypoint", "sh", d.Image, "-c", "while :; do sleep 1000; done")
	b.Cleanup(func() { d.Run(b, "rm", "-f", ctr) })
	for b.Loop() {
		c := exec.Command(d.Docker, "exec", ctr, "true")
		c.Env = append(os.Environ(), d.Env...)
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("docker exec: %v: %s", err, out)
		}
	}
}

// BenchmarkSSHTrue is the anchor of the ssh backend: ssh HOST true over an
// open ControlMaster connection, one op each.
func BenchmarkSSHTrue(b *testing.B) {
	s := backendtest.SSH(b)
	dir, err := os.MkdirTemp("", "hbs-")
	require.NoError(b, err)
	b.Cleanup(func() { os.RemoveAll(dir) })
	control := []string{"-o", "ControlPath=" + filepath.Join(dir, "cm")}
	master := exec.Command("ssh", append(append([]string{"-M", "-N", "-o", "ControlPersist=no"}, control...), s.ClientArgs()...)...)
	require.NoError(b, master.Start())
	b.Cleanup(func() {
		exec.Command("ssh", append(append([]string{"-O", "exit"}, control...), s.ClientArgs()...)...).Run()
		master.Process.Kill()
		master.Wait()
	})
	check := append(append([]string{"-O", "check"}, control...), s.ClientArgs()...)
	require.Eventually(b, func() bool { return exec.Command("ssh", check...).Run() == nil }, 30*time.Second, 20*time.Millisecond, "the ssh master did not start")
	args := append(append([]string{"-o", "ControlMaster=auto"}, control...), append(s.ClientArgs(), "true")...)
	for b.Loop() {
		if out, err := exec.Command("ssh", args...).CombinedOutput(); err != nil {
			b.Fatalf("ssh true: %v: %s", err, out)
		}
	}
}
