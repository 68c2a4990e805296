package landlock

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireLandlock skips where the kernel cannot enforce a policy.
func requireLandlock(t *testing.T) {
	t.Helper()
	if st := Probe(); !st.Enforced {
		t.Skipf("Landlock %s", st)
	}
}

// TestPlan: the rules grant every entry beside the way down to a
// protected path, never a directory on the way nor the protected path;
// a symlink is left to where it points; a root inside a protected path
// gets nothing, one without any is granted whole.
func TestPlan(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"home/.hermes/cache/wasm", "home/.hermes/skills", "home/proj", "other", "home/.hermes/profiles/a"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, f := range []string{"home/.bashrc", "home/.hermes/config.yaml", "home/.hermes/SOUL.md"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, f), nil, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(root, "home/.hermes/cache"), filepath.Join(root, "home/link")))
	in := func(rel string) string { return filepath.Join(root, rel) }
	protect := []string{in("home/.hermes/cache"), in("home/.hermes/config.yaml"), in("home/.hermes/profiles"), in("home/.hermes/missing")}

	got := plan([]string{root}, protect)
	require.ElementsMatch(t, []string{
		in("other"), in("home/proj"), in("home/.bashrc"),
		in("home/.hermes/skills"), in("home/.hermes/SOUL.md"),
	}, got)

	require.Empty(t, plan([]string{in("home/.hermes/cache/wasm")}, protect), "a root inside protected state")
	require.Equal(t, []string{in("home/proj")}, plan([]string{in("home/proj"), in("nonexistent")}, protect))
}

// run starts sh -c script with p in dir and returns its combined output
// and wait error.
func run(t *testing.T, p *Policy, dir, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	release, err := p.Launch(nil, cmd.Start)
	require.NoError(t, err)
	err = cmd.Wait()
	release()
	return out.String(), err
}

// TestLaunchRestrictsOnlyTheCommand: the command cannot write the
// protected dir, nor create an entry beside it; it can write elsewhere.
// This process, whose thread forked it, still writes anything, and none
// of its threads is left with no_new_privs.
func TestLaunchRestrictsOnlyTheCommand(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	state := filepath.Join(root, "state")
	require.NoError(t, os.MkdirAll(state, 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "work"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(state, "snapshot.bin"), []byte("good"), 0o600))
	p := &Policy{Protect: []string{state}}

	out, err := run(t, p, filepath.Join(root, "work"),
		`echo bad > ../state/snapshot.bin; echo "state $?"; mkdir ../state/new; echo "mkdir $?"; `+
			`echo x > ../beside; echo "beside $?"; echo ok > mine && echo "work $?"`)
	require.NoError(t, err, out)
	require.Contains(t, out, "state 2")
	require.Contains(t, out, "mkdir 1")
	require.Contains(t, out, "beside 2", "nothing is created directly in a directory that holds protected state")
	require.Contains(t, out, "work 0")
	b, err := os.ReadFile(filepath.Join(state, "snapshot.bin"))
	require.NoError(t, err)
	require.Equal(t, "good", string(b))

	require.NoError(t, os.WriteFile(filepath.Join(state, "snapshot.bin"), []byte("mine"), 0o600), "this process is not restricted")
	require.NoError(t, os.WriteFile(filepath.Join(root, "beside"), nil, 0o600))
	// The runtime ends a released thread once its goroutine has returned.
	deadline := time.Now().Add(20 * time.Second)
	for threadsWithNoNewPrivs(t) > 0 {
		require.True(t, time.Now().Before(deadline), "a restricted thread outlived its command")
		runtime.Gosched()
	}
}

// threadsWithNoNewPrivs counts this process's threads with no_new_privs.
func threadsWithNoNewPrivs(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	n := 0
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err == nil && strings.Contains(string(b), "NoNewPrivs:\t1") {
			n++
		}
	}
	return n
}

// TestLaunchNeverRestrictsTheMainThread: kill(2) checks a process by its
// main thread, so a command forked from a restricted main thread could
// signal this process. Over many launches (a new goroutine often lands
// on the main thread while the caller waits), the command never can, and
// the main thread never gets no_new_privs.
func TestLaunchNeverRestrictsTheMainThread(t *testing.T) {
	requireLandlock(t)
	if !Probe().Signals {
		t.Skip("signals are not scoped on this kernel")
	}
	p := &Policy{Protect: []string{filepath.Join(t.TempDir(), "state")}}
	me := strconv.Itoa(os.Getpid())
	for i := range 40 {
		out, err := run(t, p, "/", "kill -0 "+me+" 2>/dev/null; echo $?")
		require.NoError(t, err)
		require.Equal(t, "1\n", out, "launch %d: the command could signal this process", i)
	}
	b, err := os.ReadFile("/proc/self/task/" + me + "/status")
	require.NoError(t, err)
	require.Contains(t, string(b), "NoNewPrivs:\t0")
}

// TestLaunchScopesSignals: a command can signal what it started, not a
// process of another launch (another run's) nor one of this process's
// own children.
func TestLaunchScopesSignals(t *testing.T) {
	requireLandlock(t)
	if !Probe().Signals {
		t.Skip("signals are not scoped on this kernel")
	}
	p := &Policy{Protect: []string{filepath.Join(t.TempDir(), "state")}}
	other := exec.Command("/bin/sh", "-c", "read x")
	other.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := other.StdinPipe()
	require.NoError(t, err)
	release, err := p.Launch(nil, other.Start)
	require.NoError(t, err)
	defer func() { stdin.Close(); other.Wait(); release() }()
	plain := exec.Command("/bin/sh", "-c", "read x")
	plainIn, err := plain.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, plain.Start())
	defer func() { plainIn.Close(); plain.Wait() }()

	out, err := run(t, p, "/", "sleep 30 & kill $! && echo own-ok; "+
		"kill -0 "+strconv.Itoa(other.Process.Pid)+" 2>/dev/null; echo other $?; "+
		"kill -0 "+strconv.Itoa(plain.Process.Pid)+" 2>/dev/null; echo plain $?")
	require.NoError(t, err, out)
	require.Contains(t, out, "own-ok")
	require.Contains(t, out, "other 1")
	require.Contains(t, out, "plain 1")
}

// TestLaunchScopesAbstractSockets: a command cannot connect to an
// abstract Unix socket of a process outside its domain (this one), but
// can to one it made itself.
func TestLaunchScopesAbstractSockets(t *testing.T) {
	requireLandlock(t)
	if !Probe().Sockets {
		t.Skip("abstract Unix sockets are not scoped on this kernel")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to connect with")
	}
	name := fmt.Sprintf("hermes-landlock-test-%d", os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	connect := `import socket
def connect(name):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\0" + name)
        return "ok"
    except OSError as e:
        return type(e).__name__
own = socket.socket(socket.AF_UNIX)
own.bind("\0" + "%s-own")
own.listen(1)
print(connect("%s"), connect("%s-own"))
`
	p := &Policy{Protect: []string{filepath.Join(t.TempDir(), "state")}}
	out, err := run(t, p, "/", python+" -c '"+fmt.Sprintf(connect, name, name, name)+"'")
	require.NoError(t, err, out)
	require.Equal(t, "PermissionError ok\n", out)
}

// TestLaunchKeepsTheThreadUntilReleased: the command's parent-death
// signal fires when the thread that forked it ends, so that thread lives
// until release: a command that outlives the launch is not killed.
func TestLaunchKeepsTheThreadUntilReleased(t *testing.T) {
	requireLandlock(t)
	p := &Policy{Protect: []string{filepath.Join(t.TempDir(), "state")}}
	cmd := exec.Command("/bin/sh", "-c", "echo ready; read x; echo got $x")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	release, err := p.Launch(nil, cmd.Start)
	require.NoError(t, err)
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	// Other launches come and go meanwhile.
	for range 5 {
		_, err := run(t, p, "/", "true")
		require.NoError(t, err)
	}
	_, err = io.WriteString(stdin, "more\n")
	require.NoError(t, err)
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "killed with the thread that forked it")
	release()
	require.Equal(t, "got more\n", string(rest))
}

// TestConfine: under Confine only the working dir, the temp dir and the
// usual devices are writable; protected state inside them is not, and
// nothing is created directly in a working dir that holds some (the
// executor's own state in the user's home, when that is the working
// dir).
func TestConfine(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	wd, tmp, out := filepath.Join(root, "wd"), filepath.Join(root, "tmp"), filepath.Join(root, "out")
	for _, d := range []string{tmp, out, filepath.Join(wd, "proj"), filepath.Join(wd, ".hermes", "cache")} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	t.Setenv("TMPDIR", tmp)
	p := (&Policy{Protect: []string{filepath.Join(wd, ".hermes", "cache")}, Confine: true}).ForWorkdir(wd)
	got, err := run(t, p, wd, `echo a > proj/in; echo "proj $?"; echo a > $TMPDIR/t; echo "tmp $?"; echo a > ../out/x; echo "out $?"; `+
		`echo a > .hermes/cache/x; echo "cache $?"; echo a > new; echo "wd $?"; echo a > /dev/null; echo "null $?"`)
	require.NoError(t, err, got)
	for _, want := range []string{"proj 0", "tmp 0", "out 2", "cache 2", "wd 2", "null 0"} {
		require.Contains(t, got, want)
	}
	require.Contains(t, p.Explain("../out/x", wd), "outside the working dir")
	require.Contains(t, p.Explain(".hermes/cache/x", wd), "the executor's state")
	require.Contains(t, p.Explain("new", wd), "nothing can be created")
	require.Empty(t, p.Explain("proj/in", wd))
}

// TestExplain names the reason of each refusal the default policy makes.
func TestExplain(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	state := filepath.Join(root, "home", ".hermes", "cache")
	require.NoError(t, os.MkdirAll(state, 0o700))
	p := &Policy{Protect: []string{state}}
	require.Contains(t, p.Explain(filepath.Join(state, "snapshot.bin"), "/"), "is the executor's state")
	require.Contains(t, p.Explain("newfile", filepath.Join(root, "home")), "nothing can be created, removed or renamed there")
	require.Empty(t, p.Explain(filepath.Join(root, "home", "proj", "x"), "/"))
	require.Empty(t, (*Policy)(nil).Explain(state, "/"))
}

// BenchmarkLaunch is the cost of a restricted start: /bin/true started and
// reaped plainly, and through a policy protecting a Hermes home in the
// user's home (the rules built from the file system each time).
func BenchmarkLaunch(b *testing.B) {
	home, err := os.UserHomeDir()
	require.NoError(b, err)
	p := &Policy{Protect: []string{filepath.Join(home, ".hermes", "cache"), filepath.Join(home, ".hermes", "config.yaml")}}
	for _, bc := range []struct {
		name   string
		launch func(before func(), start func() error) (func(), error)
	}{
		{"plain", func(_ func(), start func() error) (func(), error) { return func() {}, start() }},
		{"landlocked", p.Launch},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
				release, err := bc.launch(nil, cmd.Start)
				require.NoError(b, err)
				require.NoError(b, cmd.Wait())
				release()
			}
		})
	}
	b.Run("ruleset", func(b *testing.B) {
		h := probe()
		if !h.Enforced {
			b.Skip("no Landlock")
		}
		for b.Loop() {
			fd, err := p.ruleset(h)
			require.NoError(b, err)
			syscall.Close(fd)
		}
	})
}
