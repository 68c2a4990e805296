package strict

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// fakeGuard refuses reads of names ending in ".secret" and writes of
// names ending in ".locked", with messages naming the path.
type fakeGuard struct{}

func (fakeGuard) ReadBlock(p string) string {
	if strings.HasSuffix(p, ".secret") {
		return "Access denied: " + p
	}
	return ""
}

// PackageReadBlock refuses ".secret" names too, and nothing for being
// outside a working dir.
func (g fakeGuard) PackageReadBlock(p string) string { return g.ReadBlock(p) }

func (fakeGuard) WriteBlock(p string) string {
	if strings.HasSuffix(p, ".locked") {
		return "Write denied: " + p
	}
	return ""
}

// newTestProjectFS builds a projectFS over a fresh working dir, a private
// tmp and one package dir, and returns it with the three host dirs.
func newTestProjectFS(t *testing.T) (p *projectFS, wd, tmp, pkg string) {
	t.Helper()
	wd, tmp, pkg = t.TempDir(), t.TempDir(), t.TempDir()
	open := func(d string) *jailFS {
		j, err := newJailFS(d)
		require.NoError(t, err)
		t.Cleanup(func() { j.close() })
		return j
	}
	p, err := newProjectFS(wd, open(wd), open(tmp), []*jailFS{open(pkg)}, ProjectOptions{Guard: fakeGuard{}, Packages: []string{pkg}})
	require.NoError(t, err)
	return p, wd, tmp, pkg
}

func rel(host string) string { return strings.TrimPrefix(GuestPath(host), "/") }

func TestProjectFSRoutes(t *testing.T) {
	p, wd, tmp, pkg := newTestProjectFS(t)
	require.NoError(t, os.WriteFile(filepath.Join(wd, "a.txt"), []byte("work"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "mod.py"), []byte("X = 1"), 0o600))

	// The working dir at its host path, read-write.
	f, errno := p.OpenFile(rel(wd)+"/a.txt", experimentalsys.O_RDONLY, 0)
	require.Zero(t, errno)
	f.Close()
	f, errno = p.OpenFile(rel(wd)+"/new.txt", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o600)
	require.Zero(t, errno)
	f.Close()
	require.FileExists(t, filepath.Join(wd, "new.txt"))

	// /tmp is the private tmp (the working dir, under the host's /tmp in
	// these tests, stays the working dir).
	f, errno = p.OpenFile("tmp/scratch", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o600)
	require.Zero(t, errno)
	f.Close()
	require.FileExists(t, filepath.Join(tmp, "scratch"))

	// A package dir is read-only.
	f, errno = p.OpenFile(rel(pkg)+"/mod.py", experimentalsys.O_RDONLY, 0)
	require.Zero(t, errno)
	f.Close()
	_, errno = p.OpenFile(rel(pkg)+"/evil.py", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o600)
	require.NotZero(t, errno)
	require.Equal(t, experimentalsys.EROFS, p.Unlink(rel(pkg)+"/mod.py"))

	// Nothing else of the host is there.
	for _, g := range []string{"etc/passwd", "usr/bin/env", rel(filepath.Dir(wd)) + "/other"} {
		_, errno = p.Stat(g)
		require.Equal(t, experimentalsys.ENOENT, errno, g)
	}
	_, errno = p.OpenFile("etc/new", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o600)
	require.Equal(t, experimentalsys.EACCES, errno)

	// The dirs above the mounts list only the way down, and are read-only.
	d, errno := p.OpenFile(".", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
	require.Zero(t, errno)
	ents, errno := d.Readdir(-1)
	require.Zero(t, errno)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	require.Contains(t, names, "tmp")
	require.Contains(t, names, strings.Split(rel(wd), "/")[0])
	d.Close()
	st, errno := p.Stat(rel(filepath.Dir(wd)))
	require.Zero(t, errno)
	require.True(t, st.Mode.IsDir())
	require.Equal(t, experimentalsys.EEXIST, p.Mkdir(rel(filepath.Dir(wd)), 0o755))
	require.NotZero(t, p.Unlink(rel(wd)), "a mount point is not removed")
	require.NotZero(t, p.Rename(rel(wd)+"/a.txt", "tmp/a.txt"), "no rename across mounts")
}

func TestProjectFSGuard(t *testing.T) {
	p, wd, _, _ := newTestProjectFS(t)
	require.NoError(t, os.WriteFile(filepath.Join(wd, "k.secret"), []byte("s"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(wd, "c.locked"), []byte("c"), 0o600))
	g := rel(wd)

	_, errno := p.OpenFile(g+"/k.secret", experimentalsys.O_RDONLY, 0)
	require.Equal(t, experimentalsys.EACCES, errno, "read refused")
	_, errno = p.OpenFile(g+"/k.secret", experimentalsys.O_WRONLY|experimentalsys.O_APPEND, 0)
	require.Zero(t, errno, "a write-only open does not read it")
	_, errno = p.OpenFile(g+"/k.secret", experimentalsys.O_RDWR, 0)
	require.Equal(t, experimentalsys.EACCES, errno, "read-write reads it")
	_, errno = p.OpenFile(g+"/c.locked", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, 0)
	require.Equal(t, experimentalsys.EACCES, errno, "write refused")
	_, errno = p.OpenFile(g+"/c.locked", experimentalsys.O_RDONLY, 0)
	require.Zero(t, errno, "reading it is allowed")
	require.Equal(t, experimentalsys.EACCES, p.Unlink(g+"/c.locked"))
	require.Equal(t, experimentalsys.EACCES, p.Rename(g+"/k.secret", g+"/plain.txt"), "moving it reads it")
	require.Equal(t, experimentalsys.EACCES, p.Link(g+"/k.secret", g+"/alias.txt"), "a second name reads it")
	require.Equal(t, experimentalsys.EACCES, p.Mkdir(g+"/d.locked", 0o755))

	refused, total := p.takeRefusals()
	require.Equal(t, 7, total)
	require.Equal(t, []string{
		"Access denied: " + filepath.Join(wd, "k.secret"),
		"Write denied: " + filepath.Join(wd, "c.locked"),
		"Write denied: " + filepath.Join(wd, "d.locked"),
	}, refused, "each distinct refusal once, in order")
	refused, _ = p.takeRefusals()
	require.Empty(t, refused, "taken")
	for i := range MaxRefusals + 3 {
		p.OpenFile(g+"/"+strings.Repeat("x", i+1)+".secret", experimentalsys.O_RDONLY, 0)
	}
	refused, total = p.takeRefusals()
	require.Len(t, refused, MaxRefusals)
	require.Equal(t, MaxRefusals+3, total)
}

func TestProjectFSRefusesWorkdirs(t *testing.T) {
	j, err := newJailFS(t.TempDir())
	require.NoError(t, err)
	defer j.close()
	root := "/"
	if runtime.GOOS == "windows" {
		root = `C:\`
	}
	for _, wd := range []string{root, "/usr/local/lib/x", "/usr/share", "/.hermes-lib"} {
		if runtime.GOOS == "windows" && wd != root {
			continue
		}
		_, err := newProjectFS(wd, j, j, nil, ProjectOptions{})
		require.Error(t, err, wd)
		require.Contains(t, err.Error(), "working dir", wd)
	}
}

func TestGuestPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		require.Equal(t, "/c/Users/me/proj", GuestPath(`C:\Users\me\proj`))
		require.Equal(t, "/d/x", GuestPath(`D:\x\`))
		return
	}
	require.Equal(t, "/home/me/proj", GuestPath("/home/me/proj/"))
}

// TestProjectEngine runs scripts over a working dir: the cwd and paths are
// the host's, the guard's refusals reach the result, writes count against
// the disk budget, and /tmp is private.
func TestProjectEngine(t *testing.T) {
	e := testEngine(t)
	wd := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(wd, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wd, "data", "in.csv"), []byte("a,b\n1,2\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(wd, "key.secret"), []byte("s"), 0o600))
	run := func(code string, limitMB int) engine.Result {
		t.Helper()
		res, err := engine.Execute(t.Context(), e.Project(ProjectOptions{Guard: fakeGuard{}}), engine.Request{
			Code: code, Mode: config.ModeProject, Embedded: true, Workdir: wd, DiskLimitMB: limitMB,
			Timeout: 60e9, MaxToolCalls: 5, Tools: echoTools,
		})
		require.NoError(t, err)
		return res
	}
	res := run(`import os, csv, tempfile
print(os.getcwd())
print(list(csv.reader(open(os.path.join(os.getcwd(), "data/in.csv")))))
print(sorted(f for _, _, fs in os.walk(".") for f in fs))
with tempfile.NamedTemporaryFile(delete=False) as f:
    f.write(b"private")
print(os.path.dirname(f.name))
print(os.path.basename(f.name))
open("out.txt", "w").write("kept")
`, 0)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, config.SandboxWasm, res.Sandbox)
	lines := strings.Split(res.Output, "\n")
	require.Equal(t, []string{GuestPath(wd), "[['a', 'b'], ['1', '2']]", "['in.csv', 'key.secret']", "/tmp"}, lines[:4])
	require.NoFileExists(t, filepath.Join(os.TempDir(), lines[4]), "the guest's /tmp is private")
	require.FileExists(t, filepath.Join(wd, "out.txt"))

	res = run("print(open('key.secret').read())\n", 0)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "PermissionError")
	require.Equal(t, "The sandbox's file-safety rules refused it: Access denied: "+filepath.Join(wd, "key.secret"), res.Hint)
	require.Contains(t, res.Warning, "The sandbox refused 1 file access by the file tools' rules")

	res = run("open('big.bin', 'wb').write(b'x' * (3 << 20))\n", 1)
	require.Equal(t, config.StatusError, res.Status, res.Output)
	require.Contains(t, res.Error, "No space left on device")
}

// placeGuard refuses by location, as the file tools' rules refuse a Hermes
// home's stores and the executor's cache: reads of what lies in readDir,
// writes of what lies in writeDir, and reads of names ending in ".secret"
// anywhere (a rule that moves with the file).
type placeGuard struct{ readDir, writeDir string }

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

func (g placeGuard) ReadBlock(p string) string {
	if within(p, g.readDir) || strings.HasSuffix(p, ".secret") {
		return "Access denied: " + p
	}
	return ""
}

func (g placeGuard) PackageReadBlock(p string) string { return g.ReadBlock(p) }

func (g placeGuard) WriteBlock(p string) string {
	if within(p, g.writeDir) {
		return "Write denied: " + p
	}
	return ""
}

// TestProjectFSRenameDirs: renaming a dir renames every path below it, and
// each is judged at its old and new path. Before, only the dir itself was
// judged, so a script moved a Hermes home (or the dir above the executor's
// cache) aside, read its stores or wrote its config (or planted code in the
// cache) under the new name, and moved it back. A dir above another mount
// is not renamed: under a new name a package dir's read-only files were
// the working dir's.
func TestProjectFSRenameDirs(t *testing.T) {
	wd, tmp := t.TempDir(), t.TempDir()
	home := filepath.Join(wd, "proj", "home")
	store := filepath.Join(home, "store")
	cache := filepath.Join(wd, "proj", "cachewrap", "cache")
	pkg := filepath.Join(wd, ".venv", "lib", "site-packages")
	for _, d := range []string{store, cache, pkg, filepath.Join(wd, "plain", "sub"), filepath.Join(wd, "evil")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{filepath.Join(store, "token.json"), filepath.Join(cache, "code"), filepath.Join(pkg, "mod.py"),
		filepath.Join(wd, "plain", "sub", "a.txt"), filepath.Join(wd, "plain", "k.secret"), filepath.Join(wd, "evil", "code")} {
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o600))
	}
	open := func(d string) *jailFS {
		j, err := newJailFS(d)
		require.NoError(t, err)
		t.Cleanup(func() { j.close() })
		return j
	}
	p, err := newProjectFS(wd, open(wd), open(tmp), []*jailFS{open(pkg)},
		ProjectOptions{Guard: placeGuard{readDir: store, writeDir: cache}, Packages: []string{pkg}})
	require.NoError(t, err)
	g := rel(wd)

	require.Equal(t, experimentalsys.EACCES, p.Rename(g+"/proj/home", g+"/proj/h2"), "its store would be readable as h2/store")
	require.Equal(t, experimentalsys.EACCES, p.Rename(g+"/proj", g+"/p2"), "and from further up")
	require.Equal(t, experimentalsys.EACCES, p.Rename(g+"/proj/cachewrap", g+"/proj/cw2"), "the cache would be writable as cw2/cache")
	require.Equal(t, experimentalsys.EACCES, p.Rename(g+"/evil", g+"/proj/cachewrap/cache/evil"), "nor moved into it")
	require.Equal(t, experimentalsys.EPERM, p.Rename(g+"/.venv", g+"/venv2"), "a dir above a package mount")
	require.Equal(t, experimentalsys.EPERM, p.Rename(g+"/.venv/lib", g+"/.venv/lib2"))
	for _, d := range []string{"proj/home/store/token.json", "proj/cachewrap/cache/code", ".venv/lib/site-packages/mod.py"} {
		require.FileExists(t, filepath.Join(wd, filepath.FromSlash(d)), "nothing moved")
	}
	refused, _ := p.takeRefusals()
	require.Equal(t, []string{
		"Access denied: " + store,
		"Write denied: " + cache,
		"Write denied: " + filepath.Join(cache, "evil"),
	}, refused)

	// A dir whose protected names keep their protection moves.
	require.Zero(t, p.Rename(g+"/plain", g+"/plain2"))
	require.FileExists(t, filepath.Join(wd, "plain2", "sub", "a.txt"))
	require.FileExists(t, filepath.Join(wd, "plain2", "k.secret"))
	refused, _ = p.takeRefusals()
	require.Empty(t, refused)
}
