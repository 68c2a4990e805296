//go:build unix

package backend

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalShellAndArgv(t *testing.T) {
	code, out, _ := run(t, Command{Shell: "echo hello; echo $((1+2))"})
	assert.Equal(t, 0, code)
	assert.Equal(t, "hello\n3\n", out)

	printf, err := exec.LookPath("printf")
	require.NoError(t, err)
	code, out, _ = run(t, Command{Argv: []string{printf, "%s|%s", "a b; $HOME", "c"}})
	assert.Equal(t, 0, code)
	assert.Equal(t, "a b; $HOME|c", out, "argv is not parsed by a shell")
}

func TestLocalDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	b := Local(dir)
	for _, tc := range []struct{ dir, want string }{{"", dir}, {filepath.Join(dir, "sub"), filepath.Join(dir, "sub")}} {
		var out syncBuffer
		p, err := b.Start(context.Background(), Command{Shell: "pwd -P", Dir: tc.dir, Stdout: &out})
		require.NoError(t, err)
		_, err = p.Wait()
		require.NoError(t, err)
		assert.Equal(t, tc.want+"\n", out.String())
	}
}

func TestLocalEnvExactly(t *testing.T) {
	t.Setenv("HERMES_BACKEND_TEST_SECRET", "leaked")
	env, err := exec.LookPath("env")
	require.NoError(t, err)
	_, out, _ := run(t, Command{Argv: []string{env}, Env: []string{"FOO=bar", "B=c d"}})
	assert.Equal(t, "FOO=bar\nB=c d\n", out)
	_, out, _ = run(t, Command{Argv: []string{env}})
	assert.Equal(t, "", out, "nil Env is an empty environment")
	_, out, _ = run(t, Command{Shell: `echo "[$HERMES_BACKEND_TEST_SECRET]"`})
	assert.Equal(t, "[]\n", out)
}

func TestLocalStdinNullDevice(t *testing.T) {
	code, out, _ := run(t, Command{Shell: "cat; echo done"})
	assert.Equal(t, 0, code)
	assert.Equal(t, "done\n", out)
}

func TestLocalInteractiveRoundTrip(t *testing.T) {
	var out syncBuffer
	p, err := Local(t.TempDir()).Start(context.Background(), Command{
		Shell: "read l; echo got:$l; read m; echo got:$m", Interactive: true, Stdout: &out,
	})
	require.NoError(t, err)
	in := p.Stdin()
	require.NotNil(t, in)
	_, err = in.Write([]byte("one\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return out.String() == "got:one\n" }, time.Minute, 5*time.Millisecond)
	_, err = in.Write([]byte("two\n"))
	require.NoError(t, err)
	require.NoError(t, in.Close())
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "got:one\ngot:two\n", out.String())
	assert.NoError(t, in.Close(), "a second close is fine")

	// Closing stdin gives the process EOF.
	out = syncBuffer{}
	p, err = Local(t.TempDir()).Start(context.Background(), Command{Shell: "cat; echo eof", Interactive: true, Stdout: &out})
	require.NoError(t, err)
	_, err = p.Stdin().Write([]byte("x\n"))
	require.NoError(t, err)
	require.NoError(t, p.Stdin().Close())
	code, err = p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "x\neof\n", out.String())
}

func TestLocalExitCodes(t *testing.T) {
	code, out, _ := run(t, Command{Shell: "echo partial; exit 3"})
	assert.Equal(t, 3, code)
	assert.Equal(t, "partial\n", out)
	code, _, _ = run(t, Command{Shell: "kill -9 $$"})
	assert.Equal(t, 128+9, code)
	code, _, _ = run(t, Command{Shell: "definitely-not-a-command-xyz"})
	assert.Equal(t, 127, code)
}

func TestLocalSameWriterKeepsOrder(t *testing.T) {
	var both syncBuffer
	code, _, _ := run(t, Command{Shell: "echo out; echo err 1>&2; echo out2; echo err2 1>&2", Stdout: &both, Stderr: &both})
	assert.Equal(t, 0, code)
	assert.Equal(t, "out\nerr\nout2\nerr2\n", both.String())

	code, out, errOut := run(t, Command{Shell: "echo out; echo err 1>&2; echo out2"})
	assert.Equal(t, 0, code)
	assert.Equal(t, "out\nout2\n", out)
	assert.Equal(t, "err\n", errOut)
}

// alive reports whether pid names a live process (not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	if runtime.GOOS == "linux" {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// readPid waits for path to hold a pid and returns it.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, time.Minute, 10*time.Millisecond)
	return pid
}

func TestLocalContextEndKillsGrandchild(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	// The grandchild sleeps in a subshell; the shell waits for it. The
	// context ends once the grandchild runs (not at a fixed time, which a
	// loaded machine may reach before the pid is written).
	p, err := Local(dir).Start(ctx, Command{Shell: `(sleep 60 & echo $! > pid; wait); echo never`, Stdout: &out, Stderr: &out})
	require.NoError(t, err)
	pid := readPid(t, pidFile)
	start := time.Now()
	cancel()
	code, err := p.Wait()
	require.NoError(t, err)
	// Not the 60 s sleep (loose for a loaded machine).
	assert.Less(t, time.Since(start), 30*time.Second, "stopped by SIGTERM, not after the sleep")
	assert.Equal(t, 128+int(syscall.SIGTERM), code)
	assert.NotContains(t, out.String(), "never")
	assert.Eventually(t, func() bool { return !alive(pid) }, 30*time.Second, 20*time.Millisecond, "grandchild %d still alive", pid)
}

func TestLocalLeftoversStoppedAfterExit(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	start := time.Now()
	// The background sleep holds the output pipe: Wait must not wait for it.
	p, err := Local(dir).Start(context.Background(), Command{Shell: `sleep 60 & echo $! > pid; echo main done`, Stdout: &out})
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "main done\n", out.String())
	// Not the background sleep's 60 s (loose for a loaded machine).
	assert.Less(t, time.Since(start), 30*time.Second)
	pid := readPid(t, filepath.Join(dir, "pid"))
	assert.Eventually(t, func() bool { return !alive(pid) }, 30*time.Second, 20*time.Millisecond, "background %d still alive", pid)
}

func TestLocalEscapedDescendantDoesNotHoldWait(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	var out syncBuffer
	start := time.Now()
	// setsid leaves the tree's group and session; without a subreaper it
	// may survive the stop and keep the pipe open: Wait gives the output
	// up to the drain grace and returns.
	p, err := Local(dir).Start(context.Background(), Command{Shell: `setsid sh -c 'echo $$ > pid; sleep 60' & sleep 0.2; echo main`, Stdout: &out})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	// Not the escaped sleep's 60 s (loose for a loaded machine).
	assert.Less(t, time.Since(start), localGrace+localDrainGrace+30*time.Second)
	assert.Contains(t, out.String(), "main\n")
	if data, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
