//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/landlock"
)

// TestServeUnixListen serves two clients at once on a Unix socket (0600,
// removed on exit).
func TestServeUnixListen(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	// A short dir: socket paths are limited to about 104 bytes.
	dir, err := os.MkdirTemp("", "hws-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "serve.sock")
	l := e.startListening("--listen", "unix:"+sock)
	require.Equal(t, sock, waitListening(t, l.stderr, "unix"))
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	one, _ := dialClient(t, "unix", sock)
	two, _ := dialClient(t, "unix", sock)
	// No authenticate needed on a Unix socket (it answers anyway).
	require.JSONEq(t, `{"authenticated": true}`, string(one.call(t, "authenticate", map[string]any{"token": "anything"}).Result))
	// The two clients' calls run at the same time (each waits for the
	// other to start: no elapsed time measured).
	a := one.start("execute", map[string]any{"code": rendezvous("one", "two"), "mode": "project", "workdir": e.workdir, "session": "one"})
	b := two.start("execute", map[string]any{"code": rendezvous("two", "one"), "mode": "project", "workdir": e.workdir, "session": "two"})
	require.Equal(t, "one\n", execResult(t, wait(t, a)).Output)
	require.Equal(t, "two\n", execResult(t, wait(t, b)).Output)
	// A client that goes away does not disturb the other.
	require.NoError(t, nilIfClosed(one))
	res := two.exec(t, map[string]any{"code": "print('still here')", "mode": "strict", "session": "two"})
	require.Equal(t, "still here\n", res.Output)

	// A second server on the same socket is refused while this one runs.
	code, _, errOut := child(t, e.env, "", "serve", "--config", e.conf, "--listen", "unix:"+sock)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "in use by a running server")

	require.Nil(t, two.call(t, "shutdown", nil).Error)
	require.Equal(t, 0, l.exitCode(t), l.stderr.String())
	_, err = os.Stat(sock)
	require.True(t, os.IsNotExist(err), "the socket is removed on exit")
	left, _ := os.ReadDir(e.tmp)
	require.Empty(t, left)

}

// nilIfClosed closes a client's connection.
func nilIfClosed(c *serveClient) error {
	if cl, ok := c.w.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// forgedCLIScript runs a flagged command in strict mode (kind cli), so the
// server asks its client first.
const forgedCLIScript = "from hermes_tools import terminal\nr = terminal('rm -rf ./build')\nprint(r.get('error'))\nprint('after')\n"

// TestServeAnswerFromAnotherConnection: an answer to a request the server
// sent on connection A, sent on connection B with A's real id, is dropped;
// the request still waits for A.
func TestServeAnswerFromAnotherConnection(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	build := filepath.Join(e.workdir, "build")
	require.NoError(t, os.MkdirAll(build, 0o755))
	dir, err := os.MkdirTemp("", "hws-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "serve.sock")
	l := e.startListening("--listen", "unix:"+sock, "--log-level", "debug")
	waitListening(t, l.stderr, "unix")
	a, _ := dialClient(t, "unix", sock)
	b, _ := dialClient(t, "unix", sock)

	call := a.start("execute", map[string]any{"code": forgedCLIScript, "mode": "strict", "workdir": e.workdir, "session": "a", "kind": "cli"})
	ask := a.nextAsk(t)
	requestIDBits(t, ask.ID)
	b.respond(ask.ID, approved("always")(ask))
	waitDropped(t, l.stderr, 1)
	// b's later call is answered: the server has read b's answer by then.
	require.JSONEq(t, `{"closed": true}`, string(b.call(t, "close_session", map[string]any{"session": "nobody"}).Result))
	select {
	case m := <-call:
		t.Fatalf("the call ended on another connection's answer: %s", m.Result)
	default:
	}
	require.DirExists(t, build)
	require.Zero(t, b.asked.Load())

	a.respond(ask.ID, denied(ask))
	res := execResult(t, wait(t, call))
	require.Contains(t, res.Output, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and was denied.")
	require.DirExists(t, build)
	require.Nil(t, a.call(t, "shutdown", nil).Error)
	require.Equal(t, 0, l.exitCode(t), l.stderr.String())
}

// TestServeForgedReplyThroughProc is the forged-reply attack for real: a
// script's terminal command writes approvals for guessed ids into the
// server's own stdin (/proc/$PPID/fd/0, a pipe this test owns) while another
// session's flagged command waits for the client, which says no. The
// forger is a terminal command of another session rather than a helper
// left behind, so that the test does not depend on what outlives a command.
func TestServeForgedReplyThroughProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd/0"); err != nil {
		t.Skip("no /proc/<pid>/fd on this system")
	}
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	build := filepath.Join(e.workdir, "build")
	require.NoError(t, os.MkdirAll(build, 0o755))
	// $1 is the server's pid (the terminal command's $PPID); "go" appears
	// once the victim's approval is asked for.
	const forge = `i=0
while [ ! -e go ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done
ok=no
for n in 0 1 2 3; do
  printf '{"jsonrpc":"2.0","id":"srv-%s","result":{"approved":true,"scope":"always"}}\n' "$n" > "/proc/$1/fd/0" && ok=yes
done
echo $ok > forged
`
	require.NoError(t, os.WriteFile(filepath.Join(e.workdir, "forge.sh"), []byte(forge), 0o600))
	p := e.start("--log-level", "debug")
	p.setAnswer(func(ap approveParams) map[string]any {
		if ap.Session != "victim" {
			t.Errorf("unexpected approve request: %+v", ap)
			return denied(ap)
		}
		// Let the forger write, then say no.
		_ = os.WriteFile(filepath.Join(e.workdir, "go"), nil, 0o600)
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join(e.workdir, "forged")); len(b) > 0 {
				break
			}
		}
		return denied(ap)
	})
	attacker := p.start("execute", map[string]any{"code": "from hermes_tools import terminal\nprint(terminal('sh forge.sh $PPID'))\n", "mode": "strict", "workdir": e.workdir, "session": "attacker"})
	victim := p.start("execute", map[string]any{"code": forgedCLIScript, "mode": "strict", "workdir": e.workdir, "session": "victim", "kind": "cli"})
	resV := execResult(t, wait(t, victim))
	resA := execResult(t, wait(t, attacker))
	require.Equal(t, "success", resA.Status, resA.Output)
	require.Contains(t, resV.Output, "Command blocked: `rm -rf ./build` needs approval (recursive delete) and was denied.")
	require.DirExists(t, build, "a forged approval must not run the command")

	forged, err := os.ReadFile(filepath.Join(e.workdir, "forged"))
	require.NoError(t, err, "the forger did not run: %s", resA.Output)
	// Under Landlock a run's processes get no ptrace access to a process
	// outside their domain, root included: no /proc/<serve>/fd/*.
	landlocked := landlock.Probe().Enforced
	switch strings.TrimSpace(string(forged)) {
	case "yes":
		require.False(t, landlocked, "Landlock let a command open /proc/$PPID/fd/0: %s", resA.Output)
		// The lines reached the server's input: each was dropped.
		waitDropped(t, p.stderr, 4)
	default:
		// Only root can write to a non-dumpable process's fds, and not
		// from a process Landlock restricts.
		require.True(t, os.Geteuid() != 0 || landlocked, "as root the forger can write to /proc/$PPID/fd/0: %s", resA.Output)
		t.Logf("the forger could not open /proc/$PPID/fd/0 (non-dumpable server, or Landlock): %s", resA.Output)
	}
}

// goneScripts are long calls that record the processes they run, in the
// working dir, as "PID START" (START the process's start time, so that a
// reused pid is not taken for it): in strict mode a terminal() command,
// in project mode the kernel's python and a terminal() command.
var goneScripts = map[string]string{
	"strict": `from hermes_tools import terminal
terminal("echo $$ $(cut -d' ' -f22 /proc/$$/stat) > pid-strict-terminal.txt; exec sleep 300")`,
	"project": procStartPy + `import os
from hermes_tools import terminal
with open("pid-project-kernel.tmp", "w") as f:
    f.write("%d %d" % (os.getpid(), proc_start(os.getpid())))
os.rename("pid-project-kernel.tmp", "pid-project-kernel.txt")
terminal("echo $$ $(cut -d' ' -f22 /proc/$$/stat) > pid-project-terminal.txt; exec sleep 300")`,
}

// goneFiles are the files goneScripts write.
var goneFiles = map[string][]string{
	"strict":  {"pid-strict-terminal.txt"},
	"project": {"pid-project-kernel.txt", "pid-project-terminal.txt"},
}

// waitGoneFiles waits until the running calls have written their pid
// files, and returns the processes they name.
func waitGoneFiles(t *testing.T, workdir string, modes ...string) map[string][2]uint64 {
	t.Helper()
	procs := map[string][2]uint64{}
	for _, mode := range modes {
		for _, name := range goneFiles[mode] {
			path := filepath.Join(workdir, name)
			var pid int
			var start uint64
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(path)
				if err != nil {
					return false
				}
				pid, start = parsePidStart(string(b))
				return pid > 1 && start != 0
			}, 2*time.Minute, 20*time.Millisecond, "%s was not written", name)
			procs[name] = [2]uint64{uint64(pid), start}
		}
	}
	return procs
}

// requireProcsGone checks that every recorded process has ended.
func requireProcsGone(t *testing.T, procs map[string][2]uint64) {
	t.Helper()
	for name, p := range procs {
		pid, start := int(p[0]), p[1]
		deadline := time.Now().Add(30 * time.Second)
		for !gone(pid, start) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !gone(pid, start) {
			killIfSame(pid, start)
			t.Errorf("the process of %s (%d) outlived the server", name, pid)
		}
	}
}

// requireEmptyDir checks that the server left nothing in its temp dir (no
// hermes-strict-* or hermes-kernel-* staging dir, no socket).
func requireEmptyDir(t *testing.T, dir string) {
	t.Helper()
	left, _ := os.ReadDir(dir)
	var names []string
	for _, d := range left {
		names = append(names, d.Name())
	}
	require.Empty(t, names, "temp dirs left behind")
}

// TestServeClientGone: the client of `serve` on stdin/stdout goes away
// while a strict and a project session kernel each run a call: it closes
// both its pipes, or stops reading stdout only. The server notices, ends
// the calls and exits 0 (no SIGPIPE death), and leaves no process and no
// staging dir behind.
func TestServeClientGone(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the scripts read /proc")
	}
	for _, how := range []string{"both pipes", "stdout only"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := newServeEnv(t, defaultServeConfig)
			cmd := exec.Command(os.Args[0], "serve", "--config", e.conf)
			cmd.Env = append(os.Environ(), e.env...)
			cmd.Dir = e.workdir
			p := startPiped(t, cmd)
			stdin, outR, stderr, exited := p.stdin, p.out, p.stderr, p.exited
			c := newServeClient(outR, stdin)
			for _, mode := range []string{"strict", "project"} {
				res := c.exec(t, map[string]any{"code": "x = 1", "mode": mode, "session": mode, "workdir": e.workdir})
				require.Equal(t, "success", res.Status, res.Output)
				c.start("execute", map[string]any{"code": goneScripts[mode], "mode": mode, "session": mode, "workdir": e.workdir})
			}
			procs := waitGoneFiles(t, e.workdir, "strict", "project")

			if how == "both pipes" {
				require.NoError(t, stdin.Close())
			}
			require.NoError(t, outR.Close())
			select {
			case <-exited:
			case <-time.After(time.Minute):
				t.Fatalf("serve did not end when its client went away; stderr:\n%s", stderr.String())
			}
			require.Equal(t, 0, cmd.ProcessState.ExitCode(), "%v; stderr:\n%s", cmd.ProcessState, stderr.String())
			require.Contains(t, stderr.String(), "hermes-wasm-exec serve: the client is gone (nobody reads stdout any more): interrupting the running calls and shutting down")
			requireProcsGone(t, procs)
			requireEmptyDir(t, e.tmp)
		})
	}
}

// TestServeWriteToGoneClient: a request whose answer cannot be written
// (the client closed its end of stdout but still writes) ends the server
// cleanly instead of killing it with SIGPIPE.
func TestServeWriteToGoneClient(t *testing.T) {
	t.Parallel()
	e := newServeEnv(t, defaultServeConfig)
	cmd := exec.Command(os.Args[0], "serve", "--config", e.conf)
	cmd.Env = append(os.Environ(), e.env...)
	p := startPiped(t, cmd)
	stdin, outR, stderr := p.stdin, p.out, p.stderr
	c := newServeClient(outR, stdin)
	res := c.exec(t, map[string]any{"code": "print(1)", "mode": "strict", "session": "s"})
	require.Equal(t, "1\n", res.Output)
	require.NoError(t, outR.Close())
	// The answer to this goes nowhere (if the server has not already seen
	// that nobody reads).
	_, _ = io.WriteString(stdin, `{"jsonrpc": "2.0", "id": 1, "method": "describe"}`+"\n")
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not end; stderr:\n%s", stderr.String())
	}
	stdin.Close()
	require.Equal(t, 0, cmd.ProcessState.ExitCode(), "%v; stderr:\n%s", cmd.ProcessState, stderr.String())
	requireEmptyDir(t, e.tmp)
}

// pipedCmd is a started front end whose stdout is an os.Pipe, so that a
// test can close its read end while the process runs (exec.Cmd's
// StdoutPipe does not allow that).
type pipedCmd struct {
	stdin  io.WriteCloser
	out    *os.File
	stderr *syncBuffer
	exited chan struct{} // closed once cmd.Wait returned
}

// startPiped starts cmd with its stdin, stdout and stderr captured. At the
// end of the test it closes both pipes and waits for the process (killed
// after a minute).
func startPiped(t *testing.T, cmd *exec.Cmd) *pipedCmd {
	t.Helper()
	p := &pipedCmd{stderr: &syncBuffer{}, exited: make(chan struct{})}
	var err error
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	var outW *os.File
	p.out, outW, err = os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = outW, p.stderr
	require.NoError(t, cmd.Start())
	outW.Close()
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		p.out.Close()
		select {
		case <-p.exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// Durable session kernels across restarts of serve: with
// session_checkpoint: every_call, a serve killed outright (SIGKILL) loses
// only the call in flight; one stopped by SIGTERM suspends its kernels as
// it drains. Each restart's next call of each session resumes it.
func TestServeRestartResumesSessions(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	conf := "code_execution:\n  warm_pool: 0\n  mode: strict\n  session_store: " + store + "\n  session_checkpoint: every_call\n"
	sessions := []string{"s1", "s2", "s3"}
	first := newServeEnv(t, conf)
	p := first.start()
	for i, s := range sessions {
		res := p.exec(t, map[string]any{"code": fmt.Sprintf("x = %d", 40+i), "session": s})
		require.Equal(t, "success", res.Status, res.Output)
		res = p.exec(t, map[string]any{"code": "x += 1", "session": s})
		require.Equal(t, "success", res.Status, res.Output)
	}
	// The call in flight when the process dies: its change is lost, the
	// calls before it are not.
	inFlight := p.start("execute", map[string]any{"code": "x = 999\nopen('/started', 'w').close()\nimport time\ntime.sleep(600)", "session": "s1"})
	pollUntil(t, time.Minute, func() bool {
		return fileInSomeStaging(first.tmp, "started")
	}, p.stderr.String)
	p.kill() // its answer never comes
	_ = inFlight

	second := newServeEnv(t, conf)
	second.workdir = first.workdir // the session's kernel is keyed by its working dir
	p = second.start()
	for i, s := range sessions {
		res := p.exec(t, map[string]any{"code": "print(x)\nx += 10", "session": s})
		require.Equal(t, "success", res.Status, res.Output)
		require.Equal(t, fmt.Sprintf("%d\n", 41+i), res.Output, s)
		require.True(t, res.Kernel.Resumed, "%+v", res.Kernel)
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.waitExit(60*time.Second), p.stderr.String())

	third := newServeEnv(t, strings.Replace(conf, "every_call", "off", 1))
	third.workdir = first.workdir
	p = third.start()
	for i, s := range sessions {
		res := p.exec(t, map[string]any{"code": "print(x)", "session": s})
		require.Equal(t, fmt.Sprintf("%d\n", 51+i), res.Output, s)
		require.True(t, res.Kernel.Resumed, "%+v", res.Kernel)
		require.Equal(t, 4, res.Kernel.ExecutionCount)
	}
}

// fileInSomeStaging reports whether a strict kernel's private dir under
// tmp (a serve's TMPDIR) holds name.
func fileInSomeStaging(tmp, name string) bool {
	found, _ := filepath.Glob(filepath.Join(tmp, "*", name))
	return len(found) > 0
}
