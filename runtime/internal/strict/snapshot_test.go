package strict

import (
	"archive/zip"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// snapshotProbe prints what an interpreter takes from its arguments and
// environment at start-up, and from the C library's environment later.
const snapshotProbe = `
import sys, os, time, json, locale
t0 = time.process_time()
sum(range(200000))
print(json.dumps({
    "argv": sys.argv, "orig_argv": sys.orig_argv, "path": sys.path,
    "environ": sorted(os.environ.items()), "environb": os.environb.get(b"XDG_FOO", b"").decode(),
    "getenv": os.getenv("XDG_FOO"), "tz": [time.tzname, time.timezone, time.strftime("%Z", time.localtime(0))],
    "flags": [sys.flags.no_site, sys.flags.utf8_mode, sys.flags.dont_write_bytecode, sys.flags.isolated],
    "stdout": [sys.stdout.encoding, sys.stdout.errors, sys.stdout.line_buffering, type(sys.stdout.buffer).__name__],
    "prefix": [sys.prefix, sys.exec_prefix], "main": __name__, "cwd": os.getcwd(),
    "listdir": sorted(os.listdir(".")), "locale": locale.setlocale(locale.LC_CTYPE),
    "process_time_grows": time.process_time() > t0, "monotonic": time.monotonic(),
    "hermes_lib": os.path.isdir("/.hermes-lib"),
}, sort_keys=True))
`

// fullStartEngine is an engine that never uses a snapshot, sharing the
// test engine's cache.
func fullStartEngine(t *testing.T) *Engine {
	e := New(Options{CacheDir: testEngine(t).opts.CacheDir, noSnapshot: true})
	t.Cleanup(func() { e.Close(context.Background()) })
	require.NoError(t, e.Warm(context.Background(), 0))
	require.Nil(t, e.snap.Load())
	return e
}

func runOn(t *testing.T, e engine.Engine, code string, env []string, workdir string) engine.Result {
	t.Helper()
	res, err := engine.Execute(context.Background(), e, engine.Request{
		Code: code, Mode: config.ModeStrict, Workdir: workdir, Timeout: 30 * time.Second,
		MaxToolCalls: 5, Env: env, SpillDir: t.TempDir(), Tools: echoTools,
	})
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	return res
}

// TestSnapshotRestoreMatchesFullStart: an interpreter restored from the
// snapshot sees what one started in full sees: its own arguments, sys.path
// (with and without the working dir as root, where -P and PYTHONPATH
// apply), environment (os.environ, os.environb, the C library's getenv
// behind time.localtime), time zone, flags and streams.
func TestSnapshotRestoreMatchesFullStart(t *testing.T) {
	snap := testEngine(t)
	require.NotNil(t, snap.snap.Load(), "the test engine has a snapshot")
	full := fullStartEngine(t)
	env := engine.ChildEnv([]string{"PATH=/usr/bin", "XDG_FOO=bar", "LANG=C.UTF-8", "PYTHONPATH=rel::/abs"}, engine.EnvOptions{}, []string{"TZ=Europe/Paris"}, nil)
	require.True(t, snapshotEligible(append(env, guestEnv...)))

	workdir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(workdir, "data.txt"), []byte("x"), 0o600))
	for _, tc := range []struct {
		name       string
		snap, full engine.Engine
	}{
		{"staging", snap, full},
		{"over the working dir", snap.Project(ProjectOptions{}), full.Project(ProjectOptions{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want map[string]any
			restored := restores.Load()
			require.NoError(t, json.Unmarshal([]byte(runOn(t, tc.snap, snapshotProbe, env, workdir).Output), &got))
			require.Equal(t, restored+1, restores.Load(), "the run was restored from the snapshot")
			require.NoError(t, json.Unmarshal([]byte(runOn(t, tc.full, snapshotProbe, env, workdir).Output), &want))
			require.Equal(t, restored+1, restores.Load(), "the full start was not")
			// A restored instance's clock continues from the snapshot's
			// (made by this process or an earlier one, from 0), not from
			// the host's since boot: clock(), and so process_time, count
			// from the interpreter's start.
			require.Less(t, got["monotonic"].(float64), 600.0)
			delete(got, "monotonic")
			delete(want, "monotonic")
			require.Equal(t, want, got)
			require.Equal(t, true, got["process_time_grows"])
			require.Equal(t, "bar", got["getenv"])
			require.Equal(t, []any{[]any{"CET", "CEST"}, -3600.0, "CET"}, got["tz"])
			require.Equal(t, true, got["hermes_lib"])
		})
	}
}

// TestSnapshotFreshRandomness: restored runs do not share random state,
// even when the snapshot imported random (and so seeded it).
func TestSnapshotFreshRandomness(t *testing.T) {
	e := New(Options{CacheDir: testEngine(t).opts.CacheDir, preinit: "import json, random"})
	t.Cleanup(func() { e.Close(context.Background()) })
	require.NoError(t, e.Warm(context.Background(), 0))
	require.NotNil(t, e.snap.Load())
	env := engine.ChildEnv([]string{"PATH=/usr/bin"}, engine.EnvOptions{}, nil, nil)
	code := "import sys, random, os; print('random' in sys.modules, random.random(), os.urandom(8).hex())"
	restored := restores.Load()
	a := runOn(t, e, code, env, t.TempDir()).Output
	b := runOn(t, e, code, env, t.TempDir()).Output
	require.Equal(t, restored+2, restores.Load())
	require.True(t, strings.HasPrefix(a, "True "), a)
	require.NotEqual(t, a, b)
}

// TestSnapshotIneligibleEnvironment: a PYTHON* variable the snapshot did
// not start with (it would have been read at initialisation) gets a full
// start, where it takes effect.
func TestSnapshotIneligibleEnvironment(t *testing.T) {
	env := engine.ChildEnv([]string{"PATH=/usr/bin", "PYTHONWARNINGS=error::DeprecationWarning"}, engine.EnvOptions{Passthrough: []string{"PYTHONWARNINGS"}}, nil, nil)
	require.False(t, snapshotEligible(append(env, guestEnv...)))
	res := runOn(t, testEngine(t), "import sys; print(sys.warnoptions)", env, t.TempDir())
	require.Equal(t, "['error::DeprecationWarning']\n", res.Output)
}

// TestSnapshotFile: the snapshot is kept in the cache dir, a later engine
// loads it rather than making it again, and a damaged file is made again.
func TestSnapshotFile(t *testing.T) {
	dir := t.TempDir()
	// The compiled code comes from the shared cache: copying it would
	// take longer than compiling... so this engine compiles into dir.
	e := New(Options{CacheDir: dir})
	require.NoError(t, e.Warm(context.Background(), 0))
	snap := e.snap.Load()
	require.NotNil(t, snap)
	e.Close(context.Background())
	c := testEngine(t)
	path := e.snapshotPath(c.opts.interpreterSHA256, c.opts.stdlibSHA256)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	loaded, err := unmarshalSnapshot(b, maxMemory)
	require.NoError(t, err)
	require.Equal(t, snap.image, loaded.image)
	t.Logf("snapshot: %d MiB of memory, %d MiB on disk", len(snap.image)>>20, len(b)>>20)

	// Damaged: every check fails, and the next engine writes it again.
	for _, cut := range []int{0, 10, len(b) / 2, len(b) - 1} {
		_, err := unmarshalSnapshot(b[:cut], maxMemory)
		require.ErrorIs(t, err, errBadSnapshot, "cut at %d", cut)
	}
	bad := append([]byte(nil), b...)
	bad[len(bad)/2] ^= 1
	_, err = unmarshalSnapshot(bad, maxMemory)
	require.ErrorIs(t, err, errBadSnapshot)

	// A later engine loads a good file rather than making it again.
	made := snapshotsMade.Load()
	loader := New(Options{CacheDir: dir})
	require.NoError(t, loader.Warm(context.Background(), 0))
	require.Equal(t, made, snapshotsMade.Load())
	require.Equal(t, snap.image, loader.snap.Load().image)
	require.Equal(t, snap.nanotime, loader.snap.Load().nanotime)
	loader.Close(context.Background())

	require.NoError(t, os.WriteFile(path, bad, 0o600))
	e2 := New(Options{CacheDir: dir})
	defer e2.Close(context.Background())
	require.NoError(t, e2.Warm(context.Background(), 0))
	require.NotNil(t, e2.snap.Load())
	require.Equal(t, made+1, snapshotsMade.Load(), "a damaged file is made again")
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = unmarshalSnapshot(again, maxMemory)
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, en := range entries {
		require.NotContains(t, en.Name(), ".snapshot-", "no temp file left")
	}
}

// BenchmarkStrictSnapshotRestore is a one-shot instance from the snapshot,
// start to end (instantiate, restore, run an empty program, end as a
// one-shot run ends); BenchmarkStrictFullStart the same without it (the
// interpreter's own initialisation, and its finalisation).
func BenchmarkStrictSnapshotRestore(b *testing.B) { benchInstanceStart(b, testEngine(b)) }

func BenchmarkStrictFullStart(b *testing.B) {
	e := New(Options{CacheDir: testEngine(b).opts.CacheDir, noSnapshot: true})
	defer e.Close(context.Background())
	benchInstanceStart(b, e)
}

func benchInstanceStart(b *testing.B, e *Engine) {
	ctx := context.Background()
	c, err := e.get(ctx, 0)
	require.NoError(b, err)
	for b.Loop() {
		box, err := e.newSandbox(ctx, c, sandboxSpec{env: engine.BaseInject()})
		require.NoError(b, err)
		var out guestOutput
		mc := box.moduleConfig(&out, &out).WithArgs(box.args("-c", oneShotCommand("", "lambda: None"))...)
		err = e.startWith(box.ctx, c, mc, instanceOptions{snapshot: box.snapshotOK})
		box.close()
		require.Equal(b, 0, outcome(err).ExitCode, "%v", err)
	}
}

// TestSnapshotSharedImageIsCopyOnWrite: on Linux instances map the
// snapshot's image copy-on-write; what one writes reaches neither another
// instance nor the image, which is sealed.
func TestSnapshotSharedImageIsCopyOnWrite(t *testing.T) {
	e := testEngine(t)
	snap := e.snap.Load()
	require.NotNil(t, snap)
	env := engine.ChildEnv([]string{"PATH=/usr/bin"}, engine.EnvOptions{}, nil, nil)
	mapped := mappedRestores.Load()
	a := startKernel(t, e, engine.KernelSpec{Env: env}, false)
	b := startKernel(t, e, engine.KernelSpec{Env: env}, false)
	if goruntime.GOOS == "linux" {
		require.GreaterOrEqual(t, mappedRestores.Load(), mapped+2, "both kernels mapped the image")
	}
	before := append([]byte(nil), snap.image...)
	// Change what the snapshot holds: a module it imported, and its heap.
	res, err := cell(t, a, "import json; json.marker = 'A'; big = ['A' * 100] * 100000; print(len(big))", nil)
	require.NoError(t, err)
	require.Equal(t, "100000\n", res.Output)
	res, err = cell(t, b, "import json; print(getattr(json, 'marker', None), 'big' in globals())", nil)
	require.NoError(t, err)
	require.Equal(t, "None False\n", res.Output)
	require.Equal(t, before, snap.image)
	if goruntime.GOOS == "linux" {
		require.NotNil(t, snap.shared, "the image is shared through a memfd")
		_, err := snap.shared.WriteAt([]byte{1}, 0)
		require.Error(t, err, "the memfd is sealed")
	}
}

// TestSnapshotCopyRestore: where the image is not shared (other systems,
// or a memory that is not a reservation) restore copies it, with the same
// result.
func TestSnapshotCopyRestore(t *testing.T) {
	e := New(Options{CacheDir: testEngine(t).opts.CacheDir, noSharedSnapshot: true})
	t.Cleanup(func() { e.Close(context.Background()) })
	require.NoError(t, e.Warm(context.Background(), 0))
	env := engine.ChildEnv([]string{"PATH=/usr/bin"}, engine.EnvOptions{}, nil, nil)
	restored, mapped := restores.Load(), mappedRestores.Load()
	res := runOn(t, e, "import json, sys; print(json.dumps(sys.argv))", env, t.TempDir())
	require.Equal(t, "[\"/script.py\"]\n", res.Output)
	require.Equal(t, restored+1, restores.Load())
	require.Equal(t, mapped, mappedRestores.Load(), "copied, not mapped")
}

// TestInstanceMounts: every sandbox mounts instanceMounts in that order,
// over a staging dir or a working dir (the snapshot depends on it).
func TestInstanceMounts(t *testing.T) {
	e := testEngine(t)
	c, err := e.get(context.Background(), 0)
	require.NoError(t, err)
	for _, root := range []*projectRoot{nil, {dir: t.TempDir()}} {
		box, err := e.newSandbox(context.Background(), c, sandboxSpec{project: root})
		require.NoError(t, err)
		box.close()
		require.Equal(t, instanceMounts, box.mounts, "project %v", root)
	}
}

// oneShotEndProbe leaves open the files, objects with finalisers and
// atexit callbacks a script may rely on the interpreter's exit to finish.
const oneShotEndProbe = `
import atexit, gzip, json, zipfile
f = open("left.txt", "w"); f.write("a text file left open")
b = open("left.bin", "wb", buffering=1 << 16); b.write(b"x" * 100)
g = gzip.open("left.gz", "wt"); g.write("a gzip file left open")
z = zipfile.ZipFile("left.zip", "w"); z.writestr("a", "a zip file left open")
json.kept = open("kept.txt", "w"); json.kept.write("a file a module keeps")
class Cycle:
    def __init__(self):
        self.me = self
        self.f = open("cycle.txt", "w")
        self.f.write("a file in a reference cycle")
Cycle()
class Finalised:
    def __init__(self):
        self.f = open("del.txt", "w")
    def __del__(self):
        self.f.write("__del__ ran")
        self.f.close()
obj = Finalised()
def bye():
    print("atexit ran")
    with open("atexit.txt", "w") as f:
        f.write("atexit ran")
atexit.register(bye)
print("done")
`

// TestOneShotEnd: a one-shot run restored from the snapshot ends the
// quick way (no interpreter teardown) and still finishes what a script
// left to its exit, as a full start's finalisation does: files left open
// (anywhere: a module global, a module of the snapshot, a reference
// cycle) have their data and are closed (a gzip or zip file is
// complete), __del__ methods and atexit callbacks run; and it exits with
// the same status.
func TestOneShotEnd(t *testing.T) {
	snap, full := testEngine(t), fullStartEngine(t)
	env := engine.ChildEnv([]string{"PATH=/usr/bin"}, engine.EnvOptions{}, nil, nil)
	want := map[string]string{
		"left.txt": "a text file left open", "left.bin": strings.Repeat("x", 100),
		"kept.txt": "a file a module keeps", "cycle.txt": "a file in a reference cycle",
		"del.txt": "__del__ ran", "atexit.txt": "atexit ran",
	}
	for _, e := range []*Engine{snap, full} {
		dir := t.TempDir()
		restored := restores.Load()
		res := runOn(t, e.Project(ProjectOptions{}), oneShotEndProbe, env, dir)
		require.Equal(t, "done\natexit ran\n", res.Output)
		if e == snap {
			require.Equal(t, restored+1, restores.Load())
		}
		for name, content := range want {
			if name == "cycle.txt" && e == full {
				// A full start's finalisation may close the raw file
				// before the buffer over it (CPython bpo-17852): the
				// quick end does better.
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err, name)
			require.Equal(t, content, string(b), "%s, restored %v", name, e == snap)
		}
		if e == snap {
			// A full start's teardown loses a gzip file's trailer in
			// CPython 3.13 as a native 3.13 does ("RuntimeError: lost
			// gzip_file": GzipFile's write buffer reaches it through a
			// weak reference that the teardown has already cleared).
			// The quick end closes it first.
			gz, err := os.Open(filepath.Join(dir, "left.gz"))
			require.NoError(t, err)
			r, err := gzip.NewReader(gz)
			require.NoError(t, err)
			b, err := io.ReadAll(r)
			require.NoError(t, err, "the gzip stream is complete")
			require.Equal(t, "a gzip file left open", string(b))
			gz.Close()
		}
		zr, err := zip.OpenReader(filepath.Join(dir, "left.zip"))
		require.NoError(t, err, "the zip file has its central directory")
		require.Len(t, zr.File, 1)
		zr.Close()
	}

	for _, tc := range []struct {
		code   string
		status int
		output string
	}{
		{"import sys; sys.exit(3)", 3, ""},
		{"import sys; sys.exit(None)", 0, ""},
		{"import sys; sys.exit('bye')", 1, "bye\n"},
		{"import sys; sys.stdout.write('no newline'); sys.exit(True)", 1, "no newline"},
		{"import atexit, sys; atexit.register(sys.exit, 5); print('x')", 0, "x\n"},
		{"import os; print('x', flush=True); os._exit(4)", 4, "x\n"},
		{"import sys\nclass W:\n    def write(self, s): sys.__stdout__.write(s.upper())\n    def flush(self): pass\nsys.stdout = W()\nprint('w')", 0, "W\n"},
		{"import sys\nclass W:\n    def write(self, s): return len(s)\n    def flush(self): raise OSError('no')\nsys.stdout = W()", 120, ""},
	} {
		for _, e := range []*Engine{snap, full} {
			res, err := engine.Execute(context.Background(), e, engine.Request{
				Code: tc.code, Mode: config.ModeStrict, Workdir: t.TempDir(), Timeout: 30 * time.Second,
				Env: env, SpillDir: t.TempDir(),
			})
			require.NoError(t, err)
			require.NotNil(t, res.ExitCode, tc.code)
			require.Equal(t, tc.status, *res.ExitCode, "%s: %s", tc.code, res.Output)
			require.Contains(t, res.Output, tc.output, tc.code)
		}
	}
}
