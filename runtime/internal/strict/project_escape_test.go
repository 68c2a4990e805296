package strict

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// The jail tests of strict mode (jailfs_test.go, disk_test.go,
// openfiles_test.go, stdlib_test.go, and the CLI's TestJail), run against
// the sandboxed project mode, whose root is the working dir at its host
// path instead of a private dir.

// projectOver builds the sandboxed project mode's file system over the
// working dir wd (a private tmp beside it), with guard.
func projectOver(t *testing.T, wd string, guard FileGuard) *projectFS {
	t.Helper()
	open := func(d string) *jailFS {
		j, err := newJailFS(d)
		require.NoError(t, err)
		t.Cleanup(func() { j.close() })
		return j
	}
	p, err := newProjectFS(wd, open(wd), open(t.TempDir()), nil, ProjectOptions{Guard: guard})
	require.NoError(t, err)
	return p
}

// TestProjectFSJail is TestJailFS over the working dir: `..` and absolute
// host paths outside it name nothing (the dirs above it are empty but for
// the way down), the guest makes no symlinks, and work inside it works.
func TestProjectFSJail(t *testing.T) {
	outside, secret, wd := jailTree(t)
	p := projectOver(t, wd, fakeGuard{})
	read := jailReader(p)
	g := rel(wd)

	got, errno := read(g + "/ok.txt")
	require.Zero(t, errno)
	require.Equal(t, "inside", got)
	got, errno = read(g + "/sub/../ok.txt")
	require.Zero(t, errno)
	require.Equal(t, "inside", got)

	for _, path := range []string{g + "/../" + filepath.Base(outside) + "/secret.txt", rel(secret), "/../../" + rel(secret),
		g + "/../../../../../../.." + GuestPath(secret), strings.ReplaceAll(g+"/../../"+rel(secret), "/", "\\")} {
		_, errno := read(path)
		require.Equal(t, experimentalsys.ENOENT, errno, path)
		_, errno = p.OpenFile(path, experimentalsys.O_WRONLY|experimentalsys.O_CREAT|experimentalsys.O_TRUNC, 0o600)
		require.NotZero(t, errno, path)
	}
	// (Under the host's /tmp, as in these tests, an outside path is the
	// private tmp's; elsewhere it names nothing.)
	_, errno = p.OpenFile(rel(outside)+"/new.txt", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o600)
	require.NotZero(t, errno)
	require.NotZero(t, p.Mkdir(rel(outside)+"/d", 0o700))
	require.NotZero(t, p.Rename(g+"/ok.txt", rel(outside)+"/stolen.txt"))
	require.NotZero(t, p.Link(g+"/ok.txt", rel(outside)+"/hard"))
	require.NotZero(t, p.Link(rel(secret), g+"/hard"))
	require.NotZero(t, p.Unlink(rel(secret)))
	require.NotZero(t, p.Utimens(rel(secret), 0, 0))
	require.NotZero(t, p.Chmod(rel(secret), 0o777))
	require.Equal(t, experimentalsys.EPERM, p.Symlink("/etc", g+"/etc"))
	require.Equal(t, experimentalsys.EPERM, p.Symlink(outside, g+"/x"))
	_, err := os.Lstat(filepath.Join(wd, "x"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// Above the working dir, only the way down.
	for d := filepath.Dir(wd); ; d = filepath.Dir(d) {
		f, errno := p.OpenFile(rel(d), experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
		require.Zero(t, errno, d)
		ents, errno := f.Readdir(-1)
		require.Zero(t, errno)
		f.Close()
		for _, e := range ents {
			require.True(t, e.Name == "tmp" || strings.HasPrefix(strings.TrimPrefix(GuestPath(wd), GuestPath(d)), "/"+e.Name), "%s lists %s", d, e.Name)
		}
		if filepath.Dir(d) == d || rel(d) == "" || rel(d) == "." {
			break
		}
	}

	// Ordinary work inside the working dir still works.
	f, errno := p.OpenFile(g+"/sub/new.txt", experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC, 0o600)
	require.Zero(t, errno)
	_, errno = f.Write([]byte("hello"))
	require.Zero(t, errno)
	require.Zero(t, f.Close())
	require.Zero(t, p.Mkdir(g+"/sub/d", 0o700))
	require.Zero(t, p.Rename(g+"/sub/new.txt", g+"/sub/d/moved.txt"))
	require.Zero(t, p.Link(g+"/sub/d/moved.txt", g+"/sub/d/hard.txt"))
	require.Zero(t, p.Unlink(g+"/sub/d/hard.txt"))
	got, errno = read(g + "/sub/d/moved.txt")
	require.Zero(t, errno)
	require.Equal(t, "hello", got)
	require.Equal(t, experimentalsys.ENOTEMPTY, p.Rmdir(g+"/sub/d"))
	require.NotZero(t, p.Rmdir(g), "the working dir itself stays")
	require.NotZero(t, p.Rename(g, g+"2"))
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "host secret", string(b))
	entries, _ := os.ReadDir(outside)
	require.Len(t, entries, 1, "nothing was made outside the working dir")
}

// TestProjectFSSymlinks is TestJailFSSymlinks over the working dir:
// symlinks the project holds are never followed, out of it or inside it,
// writes through them are refused and their target untouched; a symlink
// itself may be looked at and removed.
func TestProjectFSSymlinks(t *testing.T) {
	testenv.SkipUnderWine(t, "wine has no symlinks (CreateSymbolicLinkW reports success and makes nothing); the jail's symlink refusal is tested on Linux and on Windows")
	outside, secret, wd := jailTree(t)
	if err := os.Symlink(outside, filepath.Join(wd, "out")); err != nil && runtime.GOOS == "windows" {
		t.Skipf("Windows: making a symlink needs Developer Mode or the SeCreateSymbolicLinkPrivilege, which this account lacks (%v); the jail's symlink refusal is tested on Linux", err)
	} else {
		require.NoError(t, err)
	}
	require.NoError(t, os.Symlink(secret, filepath.Join(wd, "secret-link")))
	require.NoError(t, os.Symlink("ok.txt", filepath.Join(wd, "inner-link")))
	require.NoError(t, os.Symlink("../../../../../../..", filepath.Join(wd, "sub", "up")))
	p := projectOver(t, wd, fakeGuard{})
	read := jailReader(p)
	g := rel(wd)

	for _, path := range []string{"out/secret.txt", "secret-link", "inner-link", "sub/up" + GuestPath(secret)} {
		_, errno := read(g + "/" + path)
		require.Equal(t, experimentalsys.EACCES, errno, path)
		_, errno = p.Stat(g + "/" + path)
		require.Equal(t, experimentalsys.EACCES, errno, path)
	}
	_, errno := p.OpenFile(g+"/secret-link", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, 0o600)
	require.Equal(t, experimentalsys.EACCES, errno)
	_, errno = p.OpenFile(g+"/out/new.txt", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o600)
	require.Equal(t, experimentalsys.EACCES, errno)
	require.Equal(t, experimentalsys.EACCES, p.Mkdir(g+"/out/newdir", 0o700))
	require.Equal(t, experimentalsys.EACCES, p.Unlink(g+"/out/secret.txt"))
	require.Equal(t, experimentalsys.EACCES, p.Rename(g+"/ok.txt", g+"/out/stolen.txt"))
	require.Equal(t, experimentalsys.EACCES, p.Rename(g+"/out/secret.txt", g+"/mine.txt"))
	require.Equal(t, experimentalsys.EACCES, p.Chmod(g+"/secret-link", 0o777))
	require.Equal(t, experimentalsys.EACCES, p.Link(g+"/secret-link", g+"/hard"))
	require.Equal(t, experimentalsys.EACCES, p.Link(g+"/out/secret.txt", g+"/hard"))
	require.Equal(t, experimentalsys.EACCES, p.Utimens(g+"/secret-link", 0, 0))
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "host secret", string(b))
	_, err = os.Stat(filepath.Join(outside, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)

	st, errno := p.Lstat(g + "/secret-link")
	require.Zero(t, errno)
	require.NotZero(t, st.Mode&os.ModeSymlink)
	target, errno := p.Readlink(g + "/secret-link")
	require.Zero(t, errno)
	require.Equal(t, secret, target)
	require.Zero(t, p.Unlink(g+"/secret-link"))
	_, err = os.Stat(secret)
	require.NoError(t, err)
}

// projectRun runs code in the sandboxed project mode over wd.
func projectRun(t testing.TB, wd, code string, mod func(*engine.Request)) engine.Result {
	t.Helper()
	req := engine.Request{Code: code, Mode: config.ModeProject, Embedded: true, Workdir: wd,
		Timeout: 30 * time.Second, MaxToolCalls: 50, SpillDir: t.TempDir(), Tools: echoTools}
	if mod != nil {
		mod(&req)
	}
	res, err := engine.Execute(context.Background(), testEngine(t).Project(ProjectOptions{Guard: fakeGuard{}}), req)
	require.NoError(t, err)
	return res
}

// TestProjectJail is the CLI's TestJail for the sandboxed project mode, in
// the engine: a script's path tricks (`..`, absolute host paths, the
// host's /etc and /proc, symlinks and hard links it tries to make,
// symlinks the project holds) reach nothing outside the working dir, and
// it writes nothing there; the engine's own files (/.hermes-lib) are its
// run's own.
func TestProjectJail(t *testing.T) {
	outside, secret, wd := jailTree(t)
	plant := runtime.GOOS != "windows" && !testenv.UnderWine()
	if plant {
		require.NoError(t, os.Symlink(outside, filepath.Join(wd, "planted")))
		require.NoError(t, os.Symlink(secret, filepath.Join(wd, "planted-file")))
	}
	res := projectRun(t, wd, fmt.Sprintf(`import os, json
OUT, SECRET, PLANT = %q, %q, %v
results = {}
def attempt(name, fn):
    try:
        results[name] = "ALLOWED: " + repr(fn())[:60]
    except Exception as e:
        results[name] = type(e).__name__
attempt("read abs", lambda: open(SECRET).read())
attempt("read dotdot", lambda: open("../../../../../../.." + SECRET).read())
attempt("read etc", lambda: open("/etc/hostname").read())
attempt("read proc", lambda: open("/proc/self/environ").read())
attempt("write abs", lambda: open(OUT + "/written.txt", "w").write("x"))
attempt("write dotdot", lambda: open("/../../../../../" + OUT + "/written2.txt", "w").write("x"))
attempt("mkdir abs", lambda: os.mkdir(OUT + "/d"))
attempt("symlink", lambda: os.symlink(OUT, "esc"))
attempt("hardlink", lambda: os.link(SECRET, "hard"))
attempt("rename out", lambda: os.rename("ok.txt", OUT + "/ok.txt"))
if PLANT:
    attempt("planted dir", lambda: open("planted/secret.txt").read())
    attempt("planted file", lambda: open("planted-file").read())
    attempt("planted write", lambda: open("planted/new.txt", "w").write("x"))
    attempt("planted list", lambda: os.listdir("planted"))
attempt("own file", lambda: open("mine.txt", "w").write("ok"))
print(json.dumps(results, sort_keys=True))
print(sorted(os.listdir("/")))
`, GuestPath(outside), GuestPath(secret), map[bool]string{true: "True", false: "False"}[plant]), nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	lines := strings.SplitN(res.Output, "\n", 2)
	var got map[string]string
	require.NoError(t, jsonUnmarshal(lines[0], &got), res.Output)
	for name, v := range got {
		if name == "own file" {
			require.Equal(t, "ALLOWED: 2", v)
			continue
		}
		require.NotContains(t, v, "ALLOWED", name)
	}
	if plant {
		require.Equal(t, "PermissionError", got["planted dir"])
		require.Equal(t, "PermissionError", got["planted file"])
	}
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "host secret", string(b))
	entries, _ := os.ReadDir(outside)
	require.Len(t, entries, 1, "nothing may be created outside the working dir")
	require.FileExists(t, filepath.Join(wd, "mine.txt"))
	require.NotContains(t, lines[1], "'etc'")
	require.NotContains(t, lines[1], "'proc'")
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestProjectDiskLimit is TestStrictDiskLimit and TestStrictDiskLimitReleases
// over the working dir: what the script adds to the working dir, its /tmp
// and /.hermes-lib shares one code_execution.disk_limit_mb budget (holes
// and ftruncate included), files the working dir held before count only
// when they grow, and what it removes frees its room. The host's working
// dir never grows by more than the limit.
func TestProjectDiskLimit(t *testing.T) {
	wd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(wd, "old.bin"), make([]byte, 3<<20), 0o600))
	res := projectRun(t, wd, diskHelpers+`
fill("a", 2); fill("/tmp/b", 2)
print("shared", nospc(fill, "/.hermes-lib/c", 2))   # 2 + 2 + 2 > 5
os.remove("/tmp/b")
with open("s", "wb") as f:
    print("truncate up", nospc(f.truncate, 6 << 20))
    print("sparse", nospc(os.pwrite, f.fileno(), b"x", 6 << 20))
print("grow old", nospc(fill, "old.bin", 4, "ab"))
os.remove("old.bin")                                # frees what it held
fill("d", 5)
print("entries", nospc(lambda: [os.mkdir("e%d" % i) for i in range(2000)]))
`, withDisk(5))
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "shared True\ntruncate up True\nsparse True\ngrow old True\nentries True\n", res.Output)
	require.LessOrEqual(t, dirSize(t, wd), int64(5<<20)+(3<<20), "the working dir grew by at most the limit")
}

// TestProjectDiskLimitKernel is TestStrictDiskLimitKernel over the working
// dir: a kernel's budget spans its cells.
func TestProjectDiskLimitKernel(t *testing.T) {
	wd := t.TempDir()
	k, err := testEngine(t).StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv, DiskLimitMB: 5, Workdir: wd}, &ProjectOptions{Guard: fakeGuard{}})
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	okCell(t, k, diskHelpers+`fill("a", 3)`)
	res, err := cell(t, k, `fill("/tmp/b", 3)`, nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusError, res.Status, res.Output)
	require.Contains(t, res.Output, "No space left on device")
	require.Contains(t, res.Hint, "code_execution.disk_limit_mb")
	require.LessOrEqual(t, dirSize(t, wd), int64(5<<20))
	require.Equal(t, "True\n", okCell(t, k, `os.remove("/tmp/b"); os.remove("a"); fill("b", 4); print(os.path.getsize("b") == 4 << 20)`))
}

// TestProjectOpenFilesLimit is TestStrictOpenFilesLimit over the working
// dir: the guest's descriptors, over the working dir, /tmp, /.hermes-lib
// and the read-only mounts, stop at maxOpenFiles with EMFILE.
func TestProjectOpenFilesLimit(t *testing.T) {
	const most = 3 * maxOpenFiles
	code := fmt.Sprintf(openLoop, most, maxOpenFiles) + `
open("f", "w").close()
open("/tmp/g", "w").close()
hoard("f")
hoard("/tmp/g")
hoard("/.hermes-lib/hermes_tools.py")
hoard("/usr/local/lib/python313.zip")
hoard(".")
a = [os.open("f", os.O_RDONLY) for _ in range(600)]
try:
    b = [os.open("/tmp/g", os.O_RDONLY) for _ in range(600)]
    print("mounts share the limit: False")
except OSError as e:
    print("mounts share the limit:", errno.errorcode[e.errno] == "EMFILE")
`
	res := projectRun(t, t.TempDir(), code, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "f True EMFILE\n/tmp/g True EMFILE\n/.hermes-lib/hermes_tools.py True EMFILE\n"+
		"/usr/local/lib/python313.zip True EMFILE\n. True EMFILE\nmounts share the limit: True\n", res.Output)
}

// TestProjectStdlibReadOnly is TestStrictStdlibReadOnly over the working
// dir: the standard library is read-only and alone under /usr/local/lib,
// and /.hermes-lib is the run's own (what a script writes there is gone
// with it: the next run stages its own).
func TestProjectStdlibReadOnly(t *testing.T) {
	wd := t.TempDir()
	code := `
import os, sys
print(os.listdir("/usr/local/lib"), sys.prefix)
` + stdlibWriteProbe + `import hermes_tools
print(getattr(hermes_tools, "TAMPERED", False))
with open("/.hermes-lib/hermes_tools.py", "a") as f:
    f.write("\nTAMPERED = True\n")
`
	for range 2 {
		res := projectRun(t, wd, code, nil)
		require.Equal(t, config.StatusSuccess, res.Status, res.Output)
		require.Equal(t, "['python313.zip'] /usr/local\nread-only True\nno new files\nFalse\n", res.Output)
	}
}

// TestProjectDiskLimitSparse: a sparse file the working dir holds frees
// only the disk space it takes when the script removes it, renames over
// it, truncates it or closes it after unlinking it. Before, the budget
// gave back its apparent size: deleting a 10 GB sparse file (a VM image
// taking a few KB) let a script write 10 GB under a 2 MiB limit.
func TestProjectDiskLimitSparse(t *testing.T) {
	wd := t.TempDir()
	for _, name := range []string{"a.img", "b.img", "c.img", "d.img"} {
		f, err := os.Create(filepath.Join(wd, name))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(10<<30))
		require.NoError(t, f.Close())
	}
	fi, err := os.Stat(filepath.Join(wd, "a.img"))
	require.NoError(t, err)
	if a := allocated(fi); a < 0 || a >= 1<<20 {
		t.Skipf("this file system does not report a sparse file's blocks (%d bytes of 10 GB): the budget counts apparent sizes here", a)
	}
	res := projectRun(t, wd, diskHelpers+`
os.remove("a.img")
print("remove", nospc(fill, "x", 3))
os.remove("x")
open("y", "w").close(); os.rename("y", "b.img")
print("rename over", nospc(fill, "x", 3))
os.remove("x")
with open("c.img", "r+b") as f: f.truncate(0)
print("truncate", nospc(fill, "x", 3))
os.remove("x")
f = open("d.img", "rb"); os.remove("d.img"); f.close()
print("unlink while open", nospc(fill, "x", 3))
`, withDisk(2))
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "remove True\nrename over True\ntruncate True\nunlink while open True\n", res.Output)
	require.LessOrEqual(t, dirSize(t, wd), int64(2<<20))
}

// TestProjectLibIsPerKernel: /.hermes-lib, where the generated modules are
// staged, is each kernel's own: what one session's kernel writes there
// (its hermes_tools, their bytecode) never reaches another's, over the
// same working dir.
func TestProjectLibIsPerKernel(t *testing.T) {
	wd := t.TempDir()
	start := func() engine.Kernel {
		k, err := testEngine(t).StartKernel(context.Background(), engine.KernelSpec{Env: kernelEnv, Workdir: wd}, &ProjectOptions{Guard: fakeGuard{}})
		require.NoError(t, err)
		t.Cleanup(func() { k.Close() })
		return k
	}
	k1, k2 := start(), start()
	okCell(t, k1, `import os, glob
with open("/.hermes-lib/hermes_tools.py", "a") as f:
    f.write("\nTAMPERED = True\n")
for p in glob.glob("/.hermes-lib/__pycache__/*"):
    os.remove(p)
`)
	check := `import importlib, hermes_tools
importlib.reload(hermes_tools)
print(getattr(hermes_tools, "TAMPERED", False))`
	require.Equal(t, "True\n", okCell(t, k1, check), "its own kernel sees it")
	require.Equal(t, "False\n", okCell(t, k2, check), "another kernel does not")
}
