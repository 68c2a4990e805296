package strict

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// A suspended kernel resumes with its variables, imports, functions,
// private files, cell numbers and clock; the resumed instance starts
// nothing again; the suspended one is gone without running its atexit
// functions, which the resumed one runs when it ends.
func testKernelSuspendResume(t *testing.T, e *Engine) {
	spec := engine.KernelSpec{Env: snapEnv}
	k := startKernel(t, e, spec, false)
	okCell(t, k, `
import json, re, sqlite3, time, atexit, os
data = "x" * (1 << 20)
def double(n):
    return 2 * n
os.mkdir("d")
with open("d/notes.txt", "w") as f:
    f.write("kept")
t0 = time.monotonic()
atexit.register(lambda: open("/atexit-ran", "w").close())
`)
	image, _, err := e.SuspendKernel(context.Background(), k)
	require.NoError(t, err)
	t.Logf("image: %d bytes", len(image))
	requireGone(t, k)
	require.Less(t, len(image), 5<<20, "the image is the difference from the snapshot, compressed")

	r, err := e.ResumeKernel(context.Background(), spec, nil, image, nil)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	require.Equal(t, "1048576 42 kept True True\n",
		okCell(t, r, `print(len(data), double(21), open("d/notes.txt").read(), time.monotonic() >= t0, "json" in dir())`))
	require.NotContains(t, okCell(t, r, `print(os.listdir("/"))`), "atexit-ran", "the suspended kernel was not finalised")
	res, err := cell(t, r, `raise ValueError("x")`, nil)
	require.NoError(t, err)
	require.Contains(t, res.Error, `File "<cell 4>"`, "cells go on being numbered from the suspended kernel's")

	// Resumed twice from one image: two kernels that then diverge.
	r2, err := e.ResumeKernel(context.Background(), spec, nil, image, nil)
	require.NoError(t, err)
	defer r2.Close()
	okCell(t, r2, `data = "y"`)
	require.Equal(t, "1048576 1\n", okCell(t, r, `print(len(data), len(__import__("sys").modules["__main__"].data[:1]))`))
	require.Equal(t, "y\n", okCell(t, r2, `print(data)`))
}

// A kernel's open files go with it: an sqlite3 connection, a file being
// written (with what its buffer has not written yet), one read half-way,
// one appended to, one read and written at an offset: the resumed kernel
// reopens each at its descriptor and offset, and the Python objects go on.
// An open directory (an os.scandir iterator) refuses the suspension, and
// the kernel goes on as it was.
func testKernelSuspendOpenFiles(t *testing.T, e *Engine) {
	spec := engine.KernelSpec{Env: snapEnv}
	k := startKernel(t, e, spec, false)
	okCell(t, k, `
import sqlite3, os
db = sqlite3.connect("x.db"); db.execute("create table t(x)"); db.execute("insert into t values (1)"); db.commit()
w = open("w.txt", "w"); w.write("before ")
with open("r.txt", "w") as f:
    f.write("line1\nline2\nline3\n")
r = open("r.txt"); r.readline()
a = open("a.log", "a"); a.write("one\n"); a.flush()
b = open("bin", "wb+"); b.write(b"0123456789"); b.seek(4)
it = os.scandir(".")
`)
	_, _, err := e.SuspendKernel(context.Background(), k)
	require.ErrorIs(t, err, ErrNotSuspendable)
	require.Contains(t, err.Error(), "open directory")
	require.True(t, k.Alive())
	okCell(t, k, `it.close()`)

	copied, _, err := e.CopyKernel(context.Background(), k)
	require.NoError(t, err)
	image, _, err := e.SuspendKernel(context.Background(), k)
	require.NoError(t, err)
	requireGone(t, k)
	const after = `
w.write("after"); w.close()
db.execute("insert into t values (2)"); db.commit()
a.write("two\n"); a.close()
print(open("w.txt").read(), r.readline().strip(), db.execute("select count(*) from t").fetchone()[0], open("a.log").read().split(), b.read(3))
`
	for name, data := range map[string][]byte{"suspended": image, "copied": copied} {
		r, err := e.ResumeKernel(context.Background(), spec, nil, data, nil)
		require.NoError(t, err, name)
		require.Equal(t, "before after line2 2 ['one', 'two'] b'456'\n", okCell(t, r, after), name)
		require.NoError(t, r.Close())
	}
}

// A sandboxed project-mode kernel (over a working dir) suspends and
// resumes over the same dir: its state, its cwd, a project file it was
// reading, its private tmp's files; over another dir, or as a strict
// kernel, its image is refused.
func testKernelSuspendOverWorkdir(t *testing.T, e *Engine) {
	wd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(wd, "data.txt"), []byte("a\nb\n"), 0o644))
	spec := engine.KernelSpec{Env: snapEnv, Workdir: wd}
	k := startKernel(t, e, spec, true)
	okCell(t, k, `import os
cwd = os.getcwd()
f = open('data.txt'); f.readline()
open('/tmp/t.txt', 'w').write('in tmp')
g = open('/tmp/t.txt')
`)
	image, _, err := e.SuspendKernel(context.Background(), k)
	require.NoError(t, err)
	requireGone(t, k)
	_, err = e.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv, Workdir: t.TempDir()}, &ProjectOptions{}, image, nil)
	require.ErrorIs(t, err, ErrImageStale, "over another dir")
	_, err = e.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, image, nil)
	require.ErrorIs(t, err, ErrImageStale, "as a strict kernel")
	r, err := e.ResumeKernel(context.Background(), spec, &ProjectOptions{}, image, nil)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, "True b in tmp\n", okCell(t, r, "print(cwd == os.getcwd(), f.readline().strip(), g.read())"))
}

// A damaged or foreign image is refused, and nothing starts.
func testKernelImageRefused(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: snapEnv}, false)
	okCell(t, k, `x = 1`)
	image, _, err := e.SuspendKernel(context.Background(), k)
	require.NoError(t, err)
	for name, bad := range map[string][]byte{
		"flipped":   flip(image, len(image)/2),
		"truncated": image[:len(image)-10],
		"empty":     nil,
		"other":     []byte("PK\x03\x04"),
	} {
		_, err := e.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, bad, nil)
		require.ErrorIs(t, err, ErrImageDamaged, name)
	}
	stale := []byte(strings.Replace(string(image), "image 2\n", "image 0\n", 1))
	_, err = e.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, stale, nil)
	require.ErrorIs(t, err, ErrImageStale)

	// An image of the first format (a store written before images kept
	// open files) still resumes.
	v1 := []byte(strings.Replace(string(image[:len(image)-4]), imageFormat, imageFormatV1, 1))
	v1 = binary.LittleEndian.AppendUint32(v1, crc32.Checksum(v1, castagnoli))
	r, err := e.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, v1, nil)
	require.NoError(t, err)
	require.Equal(t, "1\n", okCell(t, r, "print(x)"))
	require.NoError(t, r.Close())
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x40
	return out
}

// benchKernelState is the idle kernel: the usual imports and 1 MB
// of data.
const benchKernelState = "import json, re, sqlite3\nimport random\ndata = [random.random() for _ in range(40000)]\nblob = json.dumps(data)[:1 << 20]"

// BenchmarkStrictKernelSuspend: suspending an idle kernel (the probe of
// its descriptors, the memory's difference from the snapshot, the private
// dir, encoding and compression: fast, s2, the default; small, zstd), and
// the image's size.
func BenchmarkStrictKernelSuspend(b *testing.B) {
	for _, small := range []bool{false, true} {
		b.Run(map[bool]string{false: "fast", true: "small"}[small], func(b *testing.B) {
			e := testEngine(b)
			var size, raw int
			for b.Loop() {
				b.StopTimer()
				k := startKernel(b, e, engine.KernelSpec{Env: snapEnv}, false)
				okCell(b, k, benchKernelState)
				b.StartTimer()
				img, err := k.suspend(context.Background())
				require.NoError(b, err)
				image, err := img.marshal(small)
				require.NoError(b, err)
				size, raw = len(image), len(img.Data)
			}
			b.ReportMetric(float64(size)/(1<<20), "image-MiB")
			b.ReportMetric(float64(raw)/(1<<20), "changed-MiB")
		})
	}
}

// BenchmarkStrictKernelResume: resuming that kernel (decoding, a new
// instance from the snapshot with the image written over it) until it is
// ready for its next cell, from each kind of image.
func BenchmarkStrictKernelResume(b *testing.B) {
	for _, small := range []bool{false, true} {
		b.Run(map[bool]string{false: "fast", true: "small"}[small], func(b *testing.B) {
			e := testEngine(b)
			k := startKernel(b, e, engine.KernelSpec{Env: snapEnv}, false)
			okCell(b, k, benchKernelState)
			img, err := k.suspend(context.Background())
			require.NoError(b, err)
			image, err := img.marshal(small)
			require.NoError(b, err)
			for b.Loop() {
				r, err := e.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, image, nil)
				require.NoError(b, err)
				b.StopTimer()
				r.Close()
				b.StartTimer()
			}
		})
	}
}

// Small images (zstd): smaller than the default's, marked as such, and
// resumed by any engine; damage is caught.
func testKernelSmallImages(t *testing.T, e *Engine) {
	spec := engine.KernelSpec{Env: snapEnv}
	k := startKernel(t, e, spec, false)
	okCell(t, k, benchKernelState)
	img, err := k.capture(context.Background(), false)
	require.NoError(t, err)
	fast, err := img.marshal(false)
	require.NoError(t, err)
	small, err := img.marshal(true)
	require.NoError(t, err)
	t.Logf("fast %d, small %d bytes", len(fast), len(small))
	require.Less(t, len(small), len(fast)*3/4)
	require.True(t, bytes.HasPrefix(small, []byte(imageFormatZstd)))
	r, err := e.ResumeKernel(context.Background(), spec, nil, small, nil)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, "True\n", okCell(t, r, "print(len(blob) > 500000 and 'sqlite3' in dir())"))
	_, err = e.ResumeKernel(context.Background(), spec, nil, flip(small, len(small)/2), nil)
	require.ErrorIs(t, err, ErrImageDamaged)
}

// An image made against another snapshot (another process's: snapshots
// differ from one making to the next) resumes when the base function gives
// that snapshot, and is refused as stale without it.
func TestStrictKernelResumeOnAnotherSnapshot(t *testing.T) {
	e := testEngine(t)
	k := startKernel(t, e, engine.KernelSpec{Env: snapEnv}, false)
	okCell(t, k, "x = 'from the first process'")
	image, sum, err := e.SuspendKernel(context.Background(), k)
	require.NoError(t, err)
	encoded, err := e.EncodedSnapshot(sum)
	require.NoError(t, err)

	other := New(Options{CacheDir: e.opts.CacheDir, TempDir: t.TempDir()})
	defer other.Close(context.Background())
	require.NoError(t, other.Warm(context.Background(), 0))
	c, err := other.get(context.Background(), 0)
	require.NoError(t, err)
	fresh, err := other.makeSnapshot(context.Background(), c)
	require.NoError(t, err)
	other.snap.Store(fresh)
	require.NotEqual(t, sum, fresh.digest(), "a snapshot made again differs")

	_, err = other.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, image, nil)
	require.ErrorIs(t, err, ErrImageStale)
	asked := 0
	base := func(s string) ([]byte, error) {
		asked++
		require.Equal(t, sum, s)
		return encoded, nil
	}
	for range 2 {
		r, err := other.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, image, base)
		require.NoError(t, err)
		require.Equal(t, "from the first process\n", okCell(t, r, "print(x)"))
		require.NoError(t, r.Close())
	}
	require.Equal(t, 1, asked, "the loaded snapshot is kept for the next resume")
	again, err := other.EncodedSnapshot(sum)
	require.NoError(t, err)
	require.Equal(t, encoded, again)

	bad := func(string) ([]byte, error) { return flip(encoded, len(encoded)/2), nil }
	other.base = nil
	_, err = other.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, image, bad)
	require.ErrorIs(t, err, ErrImageDamaged)
}

// A copy of a kernel (a fork) has its state while the kernel goes on; the
// two then diverge, and the copy's random stream is its own.
func testKernelCopy(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: snapEnv}, false)
	okCell(t, k, "import random\nx = 41\nopen('f', 'w').write('file')")
	image, _, err := e.CopyKernel(context.Background(), k)
	require.NoError(t, err)
	require.True(t, k.Alive(), "the kernel goes on")
	c, err := e.ResumeKernel(context.Background(), engine.KernelSpec{Env: snapEnv}, nil, image, nil)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "42 file\n", okCell(t, c, "x += 1\nprint(x, open('f').read())"))
	require.Equal(t, "41\n", okCell(t, k, "print(x)"))
	require.NotEqual(t, okCell(t, k, "print(random.random())"), okCell(t, c, "print(random.random())"))
}

// A script cannot renumber descriptors through the tool channel: the
// renumber op is the host's, for a resumed kernel's reopen step only.
// Before, a script's {"op":"renumber","to":2^25} had wazero grow the
// host's descriptor table by hundreds of MiB (2^31: 16 GiB).
func TestStrictRenumberRefusedOutsideReopen(t *testing.T) {
	e := testEngine(t)
	k := startKernel(t, e, engine.KernelSpec{Env: snapEnv}, false)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	out := okCell(t, k, `import _hermes_host
f = open('x', 'w')
print(_hermes_host.call(b'{"op":"renumber","from":%d,"to":%d}\n' % (f.fileno(), 1 << 25)))
print(_hermes_host.call(b'{"op":"renumber","from":%d,"to":%d}\n' % (f.fileno(), 1)))`)
	goruntime.ReadMemStats(&after)
	require.Equal(t, 2, strings.Count(out, `"errno":63`), out)
	require.Less(t, int64(after.HeapSys)-int64(before.HeapSys), int64(64<<20), "the host's descriptor table did not grow")
	require.Equal(t, "ok\n", okCell(t, k, "f.write('still'); f.close(); print('ok')"))
}
