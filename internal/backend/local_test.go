package backend

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// syncBuffer is a bytes.Buffer safe for a reader polling it while the
// process writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLocalIdentity(t *testing.T) {
	dir := t.TempDir()
	b := Local(dir)
	assert.Equal(t, config.BackendLocal, b.Name())
	assert.Equal(t, "", b.Target())
	assert.False(t, b.Remote())
	assert.Equal(t, dir, b.Cwd())
	assert.Equal(t, LocalFS, b.FS())
	assert.NoError(t, b.Close())
}

func TestLocalStartRejects(t *testing.T) {
	b := Local(t.TempDir())
	_, err := b.Start(context.Background(), Command{})
	assert.Error(t, err, "neither Argv nor Shell")
	_, err = b.Start(context.Background(), Command{Argv: []string{"true"}, Shell: "true"})
	assert.Error(t, err, "both Argv and Shell")
	_, err = b.Start(context.Background(), Command{Shell: "true", Interactive: true, Stdin: strings.NewReader("x")})
	assert.Error(t, err, "Stdin and Interactive")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Start(ctx, Command{Shell: "true"})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = b.Start(context.Background(), Command{Argv: []string{filepath.Join(t.TempDir(), "no-such-program")}})
	assert.Error(t, err)
}

func TestLocalFSErrorsAreNotExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	fsys := Local(t.TempDir()).FS()
	_, err := fsys.Stat(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fsys.Lstat(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fsys.Readlink(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fsys.ReadDir(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	rc, err := fsys.Open(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Nil(t, rc, "no typed nil")
	_, err = fsys.ReadFile(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, fsys.Remove(missing), fs.ErrNotExist)
	assert.ErrorIs(t, fsys.Rename(missing, missing+"2"), fs.ErrNotExist)
	_, err = fsys.WriteTemp(missing, "x-*", []byte("x"), 0o644)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestLocalFSOperations(t *testing.T) {
	dir := t.TempDir()
	fsys := LocalFS
	sub := filepath.Join(dir, "a", "b")
	require.NoError(t, fsys.MkdirAll(sub, 0o755))
	name, err := fsys.WriteTemp(sub, ".f-*.tmp", []byte("hello"), 0o640)
	require.NoError(t, err)
	assert.Equal(t, sub, filepath.Dir(name))
	assert.True(t, strings.HasPrefix(filepath.Base(name), ".f-") && strings.HasSuffix(name, ".tmp"), name)
	fi, err := fsys.Stat(name)
	require.NoError(t, err)
	if os.PathSeparator == '/' {
		assert.Equal(t, fs.FileMode(0o640), fi.Mode().Perm(), "perm given, not the umask's")
	}
	final := filepath.Join(sub, "f")
	require.NoError(t, fsys.Rename(name, final))
	data, err := fsys.ReadFile(final)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	rc, err := fsys.Open(final)
	require.NoError(t, err)
	buf := make([]byte, 10)
	n, _ := rc.Read(buf)
	assert.Equal(t, "hello", string(buf[:n]))
	require.NoError(t, rc.Close())
	entries, err := fsys.ReadDir(sub)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "f", entries[0].Name())
	require.NoError(t, fsys.Remove(final))
}

func TestLocalWriteTempCleansUpOnFailure(t *testing.T) {
	dir := t.TempDir()
	orig := createTemp
	t.Cleanup(func() { createTemp = orig })
	// The file is created, then the write fails: it must be removed.
	createTemp = func(dir, pattern string) (*os.File, error) {
		f, err := orig(dir, pattern)
		if err == nil {
			f.Close()
		}
		return f, err
	}
	_, err := LocalFS.WriteTemp(dir, ".x-*", []byte("data"), 0o644)
	require.Error(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the temp file is removed")
}

// run starts c in a local backend working in a temp dir and waits for it.
func run(t *testing.T, c Command) (code int, out, errOut string) {
	t.Helper()
	var o, e syncBuffer
	if c.Stdout == nil {
		c.Stdout = &o
	}
	if c.Stderr == nil {
		c.Stderr = &e
	}
	p, err := Local(t.TempDir()).Start(context.Background(), c)
	require.NoError(t, err)
	code, err = p.Wait()
	require.NoError(t, err)
	return code, o.String(), e.String()
}

// shell is the command line for the local shell: unix for sh -c, windows
// for cmd /d /s /c, which has neither ";" nor sh's loops and programs.
// The commands run with an empty environment (no PATH): a Windows
// program is named by its path under %SystemRoot%, which os/exec always
// passes on.
func shell(unix, windows string) string {
	if runtime.GOOS == "windows" {
		return windows
	}
	return unix
}

// lines turns cmd's CRLF line ends into LF.
func lines(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func TestLocalStdinReader(t *testing.T) {
	// sort, the one Windows program that copies its input to its output.
	code, out, _ := run(t, Command{Shell: shell("cat; echo done", `%SystemRoot%\System32\sort.exe& echo done`), Stdin: strings.NewReader("abc\n")})
	assert.Equal(t, 0, code)
	assert.Equal(t, "abc\ndone\n", lines(out))
}

func TestLocalNilWritersDiscard(t *testing.T) {
	p, err := Local(t.TempDir()).Start(context.Background(), Command{Shell: "echo lost; echo lost 1>&2"})
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Nil(t, p.Stdin())
}

func TestLocalWaitAfterStopIsQuick(t *testing.T) {
	var out syncBuffer
	p, err := Local(t.TempDir()).Start(context.Background(), Command{Shell: shell("echo started; sleep 300", `echo started& %SystemRoot%\System32\ping.exe -n 301 127.0.0.1 >nul`), Stdout: &out})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return lines(out.String()) == "started\n" }, time.Minute, 10*time.Millisecond)
	start := time.Now()
	p.Stop(time.Second)
	code, err := p.Wait()
	require.NoError(t, err)
	// Not the command's 300 s (loose for a loaded machine).
	assert.Less(t, time.Since(start), time.Minute)
	assert.NotEqual(t, 0, code)
	p.Stop(0) // after the end: a no-op
}

func TestLocalOutputNotWrittenAfterWait(t *testing.T) {
	// Many writes racing the end of the process; the race detector and
	// the buffer's unguarded use after Wait tell whether one came late.
	var out bytes.Buffer
	p, err := Local(t.TempDir()).Start(context.Background(), Command{Shell: shell("i=0; while [ $i -lt 200 ]; do echo line $i; i=$((i+1)); done", "for /l %i in (0,1,199) do @echo line %i"), Stdout: &out})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	n := out.Len()
	// A window for a late write to show (there is no event for one that
	// must not come): not a wait.
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, n, out.Len())
	assert.Contains(t, lines(out.String()), "line 199\n")
}
