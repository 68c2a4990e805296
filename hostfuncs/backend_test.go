package hostfuncs

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
)

// prefixFS is a remote target's file system for tests: its POSIX paths are
// served from a host dir, and every call is recorded.
type prefixFS struct {
	t    *testing.T
	root string
	mu   sync.Mutex
	log  []string
}

func (f *prefixFS) host(op, name string) string {
	f.mu.Lock()
	f.log = append(f.log, op+" "+name)
	f.mu.Unlock()
	if !path.IsAbs(name) {
		f.t.Errorf("%s of a path that is not an absolute POSIX path: %q", op, name)
	}
	return filepath.Join(f.root, filepath.FromSlash(name))
}

func (f *prefixFS) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *prefixFS) Stat(name string) (fs.FileInfo, error)  { return os.Stat(f.host("Stat", name)) }
func (f *prefixFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(f.host("Lstat", name)) }
func (f *prefixFS) FileID(name string) (backend.FileID, error) {
	return backend.LocalFS.FileID(f.host("FileID", name))
}
func (f *prefixFS) Readlink(name string) (string, error) {
	return os.Readlink(f.host("Readlink", name))
}
func (f *prefixFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return os.ReadDir(f.host("ReadDir", name))
}
func (f *prefixFS) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(f.host("ReadFile", name))
}
func (f *prefixFS) Rename(o, n string) error {
	return os.Rename(f.host("Rename", o), f.host("Rename", n))
}
func (f *prefixFS) Remove(name string) error { return os.Remove(f.host("Remove", name)) }
func (f *prefixFS) MkdirAll(name string, perm fs.FileMode) error {
	return os.MkdirAll(f.host("MkdirAll", name), perm)
}

func (f *prefixFS) Open(name string) (io.ReadCloser, error) {
	// Not an *os.File: the tools must not rely on one.
	data, err := os.ReadFile(f.host("Open", name))
	if err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader(string(data))), nil
}

func (f *prefixFS) WriteTemp(dir, pattern string, data []byte, perm fs.FileMode) (string, error) {
	name, err := backend.LocalFS.WriteTemp(f.host("WriteTemp", dir), pattern, data, perm)
	if err != nil {
		return "", err
	}
	return path.Join(dir, filepath.Base(name)), nil
}

// fakeRemote is a remote backend over a prefixFS whose commands are
// recorded and answered by run.
type fakeRemote struct {
	fs   *prefixFS
	cwd  string
	mu   sync.Mutex
	cmds []backend.Command
	run  func(c backend.Command) (out string, code int)
}

func (b *fakeRemote) Name() string   { return "fake" }
func (b *fakeRemote) Target() string { return "fake-target" }
func (b *fakeRemote) Remote() bool   { return true }
func (b *fakeRemote) Cwd() string    { return b.cwd }
func (b *fakeRemote) Home() string   { return "/home/u" }
func (b *fakeRemote) FS() backend.FS { return b.fs }
func (b *fakeRemote) Close() error   { return nil }

func (b *fakeRemote) Start(ctx context.Context, c backend.Command) (backend.Process, error) {
	b.mu.Lock()
	b.cmds = append(b.cmds, c)
	b.mu.Unlock()
	out, code := b.run(c)
	if c.Stdout != nil {
		io.WriteString(c.Stdout, out)
	}
	return fakeProc{code: code}, nil
}

type fakeProc struct{ code int }

func (fakeProc) Stdin() io.WriteCloser    { return nil }
func (p fakeProc) Wait() (int, error)     { return p.code, nil }
func (fakeProc) Stop(grace time.Duration) {}

// newRemoteTools returns tools acting on a fake remote target whose
// working dir is /srv/app, served from a host temp dir (returned).
func newRemoteTools(t *testing.T, opts Options) (*Tools, *fakeRemote, string) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "srv", "app"), 0o755))
	b := &fakeRemote{fs: &prefixFS{t: t, root: root}, cwd: "/srv/app",
		run: func(c backend.Command) (string, int) { return "remote output\n", 0 }}
	opts.backend = b
	if opts.Workdir == "" {
		opts.Workdir = t.TempDir() // the host's: not used by a remote backend
	}
	tl, err := New(opts)
	require.NoError(t, err)
	return tl, b, root
}

func TestRemoteFileToolsGoThroughTheBackend(t *testing.T) {
	tl, b, root := newRemoteTools(t, Options{})
	assert.Equal(t, "/srv/app", tl.Workdir())
	writeTestFile(t, root, "srv/app/notes.txt", "one\ntwo\n")

	res := callJSON(t, tl, "read_file", map[string]any{"path": "notes.txt"})
	assert.Equal(t, "1|one\n2|two", res["content"], res)
	assert.Contains(t, b.fs.calls(), "Stat /srv/app/notes.txt")
	assert.Contains(t, b.fs.calls(), "Open /srv/app/notes.txt")

	res = callJSON(t, tl, "read_file", map[string]any{"path": "/srv/app/note.txt"})
	assert.Equal(t, "File not found: /srv/app/note.txt", res["error"])
	assert.Equal(t, []any{"notes.txt"}, res["similar_files"])

	res = callJSON(t, tl, "write_file", map[string]any{"path": "out/new.txt", "content": "hello"})
	require.Nil(t, res["error"], res)
	assert.Equal(t, "/srv/app/out/new.txt", res["resolved_path"])
	assert.Equal(t, true, res["dirs_created"])
	data, err := os.ReadFile(filepath.Join(root, "srv", "app", "out", "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	assert.Contains(t, b.fs.calls(), "WriteTemp /srv/app/out")

	res = callJSON(t, tl, "patch", map[string]any{"path": "out/new.txt", "old_string": "hello", "new_string": "bye"})
	require.Equal(t, true, res["success"], res)
	assert.Contains(t, res["diff"], "a/out/new.txt")
	data, err = os.ReadFile(filepath.Join(root, "srv", "app", "out", "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "bye", string(data))

	res = callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": "*** Begin Patch\n*** Add File: v4a/added.txt\n+line\n*** End Patch\n"})
	require.Equal(t, true, res["success"], res)
	assert.Equal(t, []any{"/srv/app/v4a/added.txt"}, res["files_added"])
	assert.FileExists(t, filepath.Join(root, "srv", "app", "v4a", "added.txt"))

	writeTestFile(t, root, "srv/app/.gitignore", "ignored.txt\n")
	writeTestFile(t, root, "srv/app/ignored.txt", "two\n")
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "two"})
	require.Nil(t, res["error"], res)
	assert.Equal(t, []any{map[string]any{"path": "notes.txt", "line": float64(2), "content": "two"}}, res["matches"])
	assert.Contains(t, b.fs.calls(), "ReadFile /srv/app/.gitignore")

	// "~" is the target's home, learnt from the target.
	writeTestFile(t, root, "home/u/f.txt", "home file")
	res = callJSON(t, tl, "read_file", map[string]any{"path": "~/f.txt"})
	assert.Equal(t, "1|home file", res["content"], res)
}

func TestRemoteTerminal(t *testing.T) {
	tl, b, root := newRemoteTools(t, Options{Env: []string{"A=b"}})
	require.NoError(t, os.MkdirAll(filepath.Join(root, "srv", "app", "sub"), 0o755))
	res := callJSON(t, tl, "terminal", map[string]any{"command": "echo hi", "workdir": "sub"})
	assert.Equal(t, map[string]any{"output": "remote output\n", "exit_code": float64(0), "error": nil}, res)
	require.Len(t, b.cmds, 1)
	c := b.cmds[0]
	assert.Equal(t, "echo hi", c.Shell)
	assert.Equal(t, "/srv/app/sub", c.Dir)
	assert.Equal(t, []string{"A=b", "PYTHONDONTWRITEBYTECODE=1"}, c.Env, "the given env, and no bytecode written")
	assert.Same(t, c.Stdout.(*outputCapture), c.Stderr.(*outputCapture), "one writer: one stream")
	assert.Contains(t, b.fs.calls(), "Stat /srv/app/sub")

	res = callJSON(t, tl, "terminal", map[string]any{"command": "echo hi", "workdir": "missing"})
	assert.Equal(t, "Working directory does not exist: missing", res["error"])
}

func TestRemoteFileSafety(t *testing.T) {
	host := t.TempDir()
	tl, _, root := newRemoteTools(t, Options{WriteSafeRoot: host})
	writeTestFile(t, root, "root/.hermes/auth.json", "{}")
	writeTestFile(t, root, "srv/app/.env", "SECRET=1")

	for _, p := range []string{"/home/u/.ssh/authorized_keys", "/root/.aws/credentials", "/etc/passwd", "/home/u/.netrc"} {
		res := callJSON(t, tl, "write_file", map[string]any{"path": p, "content": "x"})
		assert.Contains(t, res["error"], "is a protected system/credential file", p)
	}
	res := callJSON(t, tl, "write_file", map[string]any{"path": "/root/.hermes/config.yaml", "content": "x"})
	assert.Contains(t, res["error"], "Refusing to write to Hermes config file", res)
	res = callJSON(t, tl, "write_file", map[string]any{"path": "/root/.hermes/profiles/p1/.env", "content": "x"})
	assert.Contains(t, res["error"], "is a protected system/credential file", res)
	res = callJSON(t, tl, "write_file", map[string]any{"path": "/etc/hosts", "content": "x"})
	assert.Contains(t, res["error"], "Refusing to write to sensitive system path", res)

	res = callJSON(t, tl, "read_file", map[string]any{"path": "/root/.hermes/auth.json"})
	assert.Contains(t, res["error"], "is a Hermes credential store", res)
	res = callJSON(t, tl, "read_file", map[string]any{"path": ".env"})
	assert.Contains(t, res["error"], "is a secret-bearing environment file", res)

	// HERMES_WRITE_SAFE_ROOT names this host's dirs: it does not confine
	// a remote target's writes.
	res = callJSON(t, tl, "write_file", map[string]any{"path": "ok.txt", "content": "x"})
	assert.Nil(t, res["error"], res)
	assert.FileExists(t, filepath.Join(root, "srv", "app", "ok.txt"))

	// Confinement is to the target's working dir.
	tl, _, _ = newRemoteTools(t, Options{ConfineToWorkdir: true})
	res = callJSON(t, tl, "read_file", map[string]any{"path": "/etc/hostname"})
	assert.Contains(t, res["error"], "outside the session working directory /srv/app", res)
}

func TestRemoteWorkdirMustBeAbsolute(t *testing.T) {
	b := &fakeRemote{fs: &prefixFS{t: t, root: t.TempDir()}, cwd: "relative"}
	_, err := New(Options{Workdir: t.TempDir(), backend: b})
	assert.ErrorContains(t, err, "not absolute")
}

func TestPathSyntaxRel(t *testing.T) {
	px := pathSyntax{posix: true}
	for _, tc := range []struct{ base, targ, want string }{
		{"/a/b", "/a/b", "."},
		{"/a/b", "/a/b/c/d", "c/d"},
		{"/a/b", "/a/x", "../x"},
		{"/", "/a", "a"},
		{"/a/b/c", "/", "../../.."},
	} {
		got, err := px.rel(tc.base, tc.targ)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc)
		want, _ := filepath.Rel(tc.base, tc.targ)
		if filepath.Separator == '/' {
			assert.Equal(t, want, got, "as filepath.Rel")
		}
	}
	_, err := px.rel("/a", "b")
	assert.Error(t, err)
	assert.True(t, px.isLocal("a/b"))
	assert.False(t, px.isLocal("../a"))
	assert.False(t, px.isLocal("/a"))
	assert.False(t, px.isLocal(""))
	assert.True(t, px.within("/a/b", "/a"))
	assert.False(t, px.within("/ab", "/a"))
}
