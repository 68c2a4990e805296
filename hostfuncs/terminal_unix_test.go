//go:build unix

package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTerminalRun(t *testing.T) {
	t.Setenv("HERMES_TEST_SECRET_VAR", "leaked")
	tests := []struct {
		name     string
		args     map[string]any
		output   string // exact, unless contains is set
		contains []string
		exit     int
	}{
		{name: "echo", args: map[string]any{"command": "echo hello"}, output: "hello\n"},
		{name: "nulls take defaults", args: map[string]any{"command": "echo ok", "timeout": nil, "workdir": nil}, output: "ok\n"},
		{name: "non-zero exit is not an error", args: map[string]any{"command": "echo partial; exit 3"}, output: "partial\n", exit: 3},
		{name: "stderr combined in order", args: map[string]any{"command": "echo out; echo err 1>&2; echo out2"}, output: "out\nerr\nout2\n"},
		{name: "stdin is empty", args: map[string]any{"command": "cat; echo done"}, output: "done\n"},
		{name: "runs in the working dir", args: map[string]any{"command": "cat marker.txt"}, output: "in workdir"},
		{name: "workdir arg", args: map[string]any{"command": "pwd", "workdir": "sub"}, contains: []string{"/sub\n"}},
		{name: "only the given env", args: map[string]any{"command": `echo "[$HERMES_TEST_SECRET_VAR]"`}, output: "[]\n"},
		// A python a command starts writes no __pycache__ into the tree
		// (it leaves no __pycache__), unless the env sets otherwise (TestCommandEnv).
		{name: "no bytecode written", args: map[string]any{"command": `echo "[$PYTHONDONTWRITEBYTECODE]"`}, output: "[1]\n"},
		{name: "command not found", args: map[string]any{"command": "definitely-not-a-command-xyz"}, contains: []string{"not found"}, exit: 127},
		{name: "ansi stripped", args: map[string]any{"command": `printf '\033[31mred\033[0m \033]0;title\007ok\n'`}, output: "red ok\n"},
		{name: "killed by signal", args: map[string]any{"command": "kill -9 $$"}, output: "", exit: 128 + 9},
		{name: "unicode", args: map[string]any{"command": "printf 'héllo 世界\\n'"}, output: "héllo 世界\n"},
		{name: "fractional timeout", args: map[string]any{"command": "echo fine", "timeout": 2.5}, output: "fine\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl, dir := newTestTools(t)
			writeTestFile(t, dir, "marker.txt", "in workdir")
			require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
			res := callJSON(t, tl, "terminal", tc.args)
			assert.Contains(t, res, "error")
			assert.Nil(t, res["error"])
			assert.Equal(t, float64(tc.exit), res["exit_code"])
			if tc.contains == nil {
				assert.Equal(t, tc.output, res["output"])
			}
			for _, s := range tc.contains {
				assert.Contains(t, res["output"], s)
			}
		})
	}
}

func TestTerminalOutputCap(t *testing.T) {
	tl, _ := newTestTools(t)
	// 100,000 characters: head 20,000 'a', tail 30,000 'b'.
	res := callJSON(t, tl, "terminal", map[string]any{
		"command": `head -c 60000 /dev/zero | tr '\0' a; head -c 40000 /dev/zero | tr '\0' b`,
	})
	require.Nil(t, res["error"])
	out := res["output"].(string)
	notice := "\n\n... [OUTPUT TRUNCATED - 50000 chars omitted out of 100000 total] ...\n\n"
	require.Contains(t, out, notice)
	parts := strings.SplitN(out, notice, 2)
	assert.Equal(t, strings.Repeat("a", 20000), parts[0])
	assert.Equal(t, strings.Repeat("b", 30000), parts[1])
}

func TestTerminalTimeoutKillsGroup(t *testing.T) {
	tl, dir := newTestTools(t)
	start := time.Now()
	res := callJSON(t, tl, "terminal", map[string]any{
		"command": "sleep 300 & echo $! > bg.pid; echo started; sleep 300",
		"timeout": 1,
	})
	// Not the command's 300 s (loose for a loaded machine).
	assert.Less(t, time.Since(start), time.Minute, "loose sanity bound")
	assert.Equal(t, map[string]any{"output": "", "exit_code": float64(124), "error": "Command timed out after 1 seconds"}, res)
	assertProcessGone(t, dir)
}

func TestTerminalKillsBackgroundAfterExit(t *testing.T) {
	tl, dir := newTestTools(t)
	start := time.Now()
	// The background sleep keeps the output pipe open; the call must not
	// wait for it, and it must not survive the call.
	res := callJSON(t, tl, "terminal", map[string]any{"command": "sleep 300 & echo $! > bg.pid; echo done"})
	// Not the background sleep's 300 s (loose for a loaded machine).
	assert.Less(t, time.Since(start), time.Minute, "loose sanity bound")
	assert.Equal(t, map[string]any{"output": "done\n", "exit_code": float64(0), "error": nil}, res)
	assertProcessGone(t, dir)
}

func TestTerminalContextCancel(t *testing.T) {
	tl, dir := newTestTools(t)
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelled once the command has printed (it then writes "ready"), not
	// after a fixed time a loaded machine may not have reached.
	go func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
				break
			}
		}
		cancel()
	}()
	res := tl.Call(ctx, "terminal", json.RawMessage(`{"command": "sleep 300 & echo $! > bg.pid; echo before; : > ready; wait"}`))
	assert.Equal(t, "Command cancelled: context canceled", res["error"])
	assert.Equal(t, terminalCancelExit, res["exit_code"])
	assert.Equal(t, "before\n", res["output"])
	assertProcessGone(t, dir)
}

// assertProcessGone checks that the process whose pid the command wrote to
// bg.pid no longer runs (it may take a moment to be reaped).
func assertProcessGone(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "bg.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || isZombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("background process %d survived", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isZombie reports whether pid has exited but is not reaped yet (Linux).
func isZombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}
