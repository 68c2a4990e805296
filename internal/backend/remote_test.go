package backend

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
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

// localRemote is an exec backend whose prefix is `env`: the remote
// machinery (header, agent, marker kill) against this host, where the
// test can look at the processes and files.
func localRemote(t *testing.T, cwd string) Backend {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the remote machinery is tested on Linux (it kills through /proc); this is " + runtime.GOOS)
	}
	b, err := NewExec(context.Background(), ExecOptions{Prefix: []string{"env"}, Cwd: cwd, Env: []string{"FROM_BACKEND=yes"}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func runOn(t *testing.T, b Backend, cmd Command) (string, int) {
	t.Helper()
	var out bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = &out, &out
	}
	p, err := b.Start(context.Background(), cmd)
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	return out.String(), code
}

func TestRemoteCommand(t *testing.T) {
	dir := t.TempDir()
	b := localRemote(t, dir)
	assert.Equal(t, "exec", b.Name())
	assert.True(t, b.Remote())
	assert.Equal(t, dir, b.Cwd())

	value := "it's \"quoted\"\n$HOME `x` \\ end"
	out, code := runOn(t, b, Command{Argv: []string{"sh", "-c", `printf '%s|%s|%s|%s' "$SECRET" "$FROM_BACKEND" "$(pwd)" "$1"; exit 3`, "sh", "arg with 'quote'"},
		Env: []string{"SECRET=" + value, "PATH=/nowhere", "HOME=/nohome", "bad-name=x"}})
	assert.Equal(t, 3, code)
	assert.Equal(t, value+"|yes|"+dir+"|arg with 'quote'", out)

	// The host's PATH and HOME are the target's business.
	out, _ = runOn(t, b, Command{Shell: `echo "$PATH" "$HOME"`, Env: []string{"PATH=/nowhere", "HOME=/nohome"}})
	assert.NotContains(t, out, "/nowhere")
	assert.NotContains(t, out, "/nohome")

	// Shell, stdout and stderr in one writer keep their order; Dir.
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	out, code = runOn(t, b, Command{Shell: "echo one; echo two >&2; echo three; pwd", Dir: sub})
	assert.Equal(t, 0, code)
	assert.Equal(t, "one\ntwo\nthree\n"+sub+"\n", out)

	// Separate writers stay separate; stdin follows the header.
	var so, se bytes.Buffer
	_, code = runOn(t, b, Command{Shell: "cat; echo err >&2", Stdin: strings.NewReader("from stdin\n"), Stdout: &so, Stderr: &se})
	assert.Equal(t, 0, code)
	assert.Equal(t, "from stdin\n", so.String())
	assert.Equal(t, "err\n", se.String())

	// A signal reports 128+N.
	_, code = runOn(t, b, Command{Shell: "kill -9 $$"})
	assert.Equal(t, 137, code)
}

func TestRemoteInteractive(t *testing.T) {
	b := localRemote(t, "")
	pr, pw := io.Pipe()
	p, err := b.Start(context.Background(), Command{Argv: []string{"cat"}, Interactive: true, Stdout: pw})
	require.NoError(t, err)
	go func() { p.Wait(); pw.Close() }()
	buf := make([]byte, 5)
	for _, msg := range []string{"ping\n", "pong\n"} {
		_, err := io.WriteString(p.Stdin(), msg)
		require.NoError(t, err)
		_, err = io.ReadFull(pr, buf)
		require.NoError(t, err)
		assert.Equal(t, msg, string(buf))
	}
	p.Stdin().Close()
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
}

// A cancelled command's whole tree goes in the target, also what detached
// from it, and no value of its environment was ever on a command line.
func TestRemoteStopKillsTheTree(t *testing.T) {
	dir := t.TempDir()
	b := localRemote(t, dir)
	secret := "s3cr3t-" + newMarker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	ready := filepath.Join(dir, "pids")
	p, err := b.Start(ctx, Command{
		Shell:  `sleep 300 & echo $! > pids.tmp; setsid sh -c 'trap "" TERM; sleep 301' & echo $! >> pids.tmp; mv pids.tmp pids; wait`,
		Env:    []string{"SECRET=" + secret},
		Stdout: &out, Stderr: &out,
	})
	require.NoError(t, err)
	var pids []int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(ready)
		if err != nil {
			return false
		}
		for _, f := range strings.Fields(string(data)) {
			pid, _ := strconv.Atoi(f)
			pids = append(pids, pid)
		}
		return true
	}, 30*time.Second, 10*time.Millisecond)
	require.Len(t, pids, 2)

	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		data, _ := os.ReadFile(c)
		assert.NotContains(t, string(data), secret, "%s", c)
	}

	start := time.Now()
	cancel()
	code, _ := p.Wait()
	assert.NotEqual(t, 0, code)
	// The TERM-ignoring one needed the grace period, then KILL.
	assert.Less(t, time.Since(start), DefaultGrace+20*time.Second)
	for _, pid := range pids {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/environ")
		if err == nil {
			data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			assert.Contains(t, string(data), "zombie", "pid %d still runs", pid)
		}
	}
}

// Both agents: python3's, and sh's for targets without it.
func TestRemoteFS(t *testing.T) {
	for _, agent := range []string{"python", "sh"} {
		t.Run(agent, func(t *testing.T) {
			dir := t.TempDir()
			b := localRemote(t, dir)
			require.True(t, b.(*remote).pythonAgent, "the probe finds this host's python3")
			b.(*remote).pythonAgent = agent == "python"
			testRemoteFS(t, b, dir)
		})
	}
}

func testRemoteFS(t *testing.T, b Backend, dir string) {
	f := b.FS()

	_, err := f.Stat(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = f.ReadFile(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	name := filepath.Join(dir, "a file\nwith newline ")
	data := []byte("binary\x00\xff\n\nend\n\n")
	tmp, err := f.WriteTemp(dir, ".tmp-*", data, 0o640)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(filepath.Base(tmp), ".tmp-"), tmp)
	fi, err := os.Stat(tmp)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), fi.Mode().Perm())
	require.NoError(t, f.Rename(tmp, name))
	got, err := f.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	rc, err := f.Open(name)
	require.NoError(t, err)
	got, _ = io.ReadAll(rc)
	rc.Close()
	assert.Equal(t, data, got)

	fi, err = f.Stat(name)
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), fi.Size())
	assert.Equal(t, fs.FileMode(0o640), fi.Mode())
	assert.False(t, fi.IsDir())
	local, _ := os.Stat(name)
	assert.Equal(t, local.ModTime().Unix(), fi.ModTime().Unix())

	// Every stat answer carries the file's identity: a hard link is the
	// same file, with two links, as this host sees it.
	require.NoError(t, os.Link(name, filepath.Join(dir, "hard")))
	id, err := f.FileID(filepath.Join(dir, "hard"))
	require.NoError(t, err)
	want, ok := IDOf(local)
	require.True(t, ok)
	want.Nlink = 2
	assert.Equal(t, want, id)
	fi, err = f.Lstat(name)
	require.NoError(t, err)
	id, ok = IDOf(fi)
	assert.True(t, ok)
	assert.Equal(t, want, id)
	entries, err := f.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		id, ok := IDOf(info)
		assert.True(t, ok, e.Name())
		assert.Equal(t, e.Name() == "hard" || e.Name() == filepath.Base(name), id == want, e.Name())
	}
	require.NoError(t, os.Remove(filepath.Join(dir, "hard")))
	_, err = f.FileID(filepath.Join(dir, "hard"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, os.Symlink("a file\nwith newline ", filepath.Join(dir, "link")))
	fi, err = f.Lstat(filepath.Join(dir, "link"))
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, fi.Mode().Type())
	dest, err := f.Readlink(filepath.Join(dir, "link"))
	require.NoError(t, err)
	assert.Equal(t, "a file\nwith newline ", dest)
	_, err = f.Readlink(name)
	assert.Error(t, err)

	require.NoError(t, f.MkdirAll(filepath.Join(dir, "d", "e"), 0o755))
	_, err = f.ReadFile(filepath.Join(dir, "d"))
	assert.ErrorContains(t, err, "is a directory")
	entries, err = f.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name()+":"+e.Type().String())
	}
	assert.Equal(t, []string{"a file\nwith newline :----------", "d:d---------", "link:L---------"}, names)

	require.NoError(t, f.Remove(filepath.Join(dir, "link")))
	require.NoError(t, f.Remove(filepath.Join(dir, "d", "e")))
	assert.ErrorIs(t, f.Remove(filepath.Join(dir, "d", "e")), fs.ErrNotExist)
	assert.Error(t, f.Remove(dir)) // not empty
	_, err = os.Lstat(filepath.Join(dir, "link"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// A dead agent is replaced, and a read tried again with the new one;
	// a write, rename or remove is not repeated (it may have happened).
	r := b.(*remote)
	killAgent := func() {
		r.agentMu.Lock()
		r.agent.p.Stop(time.Second)
		r.agentMu.Unlock()
	}
	killAgent()
	_, err = f.Stat(name)
	assert.NoError(t, err)
	killAgent()
	err = f.Rename(name, name+".moved")
	assert.ErrorContains(t, err, "file agent failed")
	_, err = os.Stat(name)
	assert.NoError(t, err, "not renamed")
	_, err = f.Stat(name)
	assert.NoError(t, err, "the next call has a new agent")
}

// What a command leaves running is stopped when it exits, as on this host.
func TestRemoteLeftoversStopped(t *testing.T) {
	dir := t.TempDir()
	b := localRemote(t, dir)
	out, code := runOn(t, b, Command{Shell: `nohup sleep 300 >/dev/null 2>&1 & echo $!`})
	assert.Equal(t, 0, code)
	pid := strings.TrimSpace(out)
	_, err := os.Stat("/proc/" + pid + "/environ")
	if err == nil {
		data, _ := os.ReadFile("/proc/" + pid + "/status")
		assert.Contains(t, string(data), "zombie", "pid %s still runs", pid)
	}
}

// A path holding a NUL byte is refused as package os refuses it: the sh
// agent's read would drop the byte and act on another path (a write to
// ".ss\x00h/authorized_keys" would land in .ssh/authorized_keys, past the
// file-safety checks, which see no ".ssh").
func TestRemoteFSRejectsNUL(t *testing.T) {
	for _, agent := range []string{"python", "sh"} {
		t.Run(agent, func(t *testing.T) {
			dir := t.TempDir()
			b := localRemote(t, dir)
			b.(*remote).pythonAgent = agent == "python"
			f := b.FS()
			require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644))

			_, err := f.Stat(filepath.Join(dir, "fi\x00le"))
			assert.ErrorIs(t, err, syscall.EINVAL)
			_, err = f.ReadFile(filepath.Join(dir, "fi\x00le"))
			assert.ErrorIs(t, err, syscall.EINVAL)
			_, err = f.WriteTemp(filepath.Join(dir, "s\x00ub"), ".tmp-*", []byte("data"), 0o644)
			assert.ErrorIs(t, err, syscall.EINVAL)
			_, err = f.WriteTemp(dir, ".t\x00mp-*", []byte("data"), 0o644)
			assert.ErrorIs(t, err, syscall.EINVAL)
			tmp, err := f.WriteTemp(dir, ".tmp-*", []byte("data"), 0o644)
			require.NoError(t, err)
			err = f.Rename(tmp, filepath.Join(dir, "sub", "new\x00name"))
			assert.ErrorIs(t, err, syscall.EINVAL)
			_, err = os.Stat(filepath.Join(dir, "sub", "newname"))
			assert.ErrorIs(t, err, fs.ErrNotExist, "the rename reached the path without its NUL")
			assert.ErrorIs(t, f.Remove(filepath.Join(dir, "fi\x00le")), syscall.EINVAL)
			_, err = os.Stat(filepath.Join(dir, "file"))
			assert.NoError(t, err, "the remove reached the path without its NUL")
			assert.ErrorIs(t, f.MkdirAll(filepath.Join(dir, "n\x00ew"), 0o755), syscall.EINVAL)
		})
	}
}
