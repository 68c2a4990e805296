package strict

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// TestStrictLeftFiles: a one-shot script that writes files in its private
// dir (the cwd, /tmp, a subdir) gets them listed, with their sizes, and a
// warning saying how to keep them; the engine's own staged files (the
// script, the runner, hermes_tools and their bytecode) are never listed,
// and a script that writes nothing gets neither. Before, such a run said
// success and the files silently went with the dir.
func TestStrictLeftFiles(t *testing.T) {
	res := run(t, `
import os, sqlite3, zipfile
db = sqlite3.connect("analytics.db")
db.execute("create table t (x)")
db.commit()
db.close()
os.makedirs("out", exist_ok=True)
with open("out/report.csv", "w") as f:
    f.write("a,b\n1,2\n")
with zipfile.ZipFile("backup.zip", "w") as z:
    z.writestr("x.txt", "x")
os.makedirs("/tmp", exist_ok=True)
open("/tmp/scratch", "wb").write(b"12345")
print("done")
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "done\n", res.Output)
	var names []string
	sizes := map[string]int64{}
	for _, f := range res.DiscardedFiles {
		names = append(names, f.Path)
		sizes[f.Path] = f.Size
	}
	require.Equal(t, []string{"analytics.db", "backup.zip", "out/report.csv", "tmp/scratch"}, names)
	require.Equal(t, int64(8), sizes["out/report.csv"])
	require.Equal(t, int64(5), sizes["tmp/scratch"])
	require.Positive(t, sizes["analytics.db"])
	require.Zero(t, res.DiscardedFilesOmitted)
	require.Equal(t, "The script left 4 files in strict mode's private dir, which is discarded after the run (see discarded_files): analytics.db, backup.zip, out/report.csv and 1 more. "+
		"To keep output, write it into the working dir with write_file() from hermes_tools (text), or use project mode (with sandbox: wasm to keep the sandbox).", res.Warning)

	// Reading (and importing) what is staged lists nothing.
	res = run(t, "import hermes_tools, _hermes_runner\nprint(open(__file__).read()[:5], sorted(os.listdir('.')) != [])\n", func(r *engine.Request) {
		r.Code = "import os\n" + r.Code
	})
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Empty(t, res.DiscardedFiles)
	require.Empty(t, res.Warning)

	// A failed run lists them too; past the cap, how many more.
	res = run(t, "for i in range(25):\n    open('f%02d.txt' % i, 'w').write('x' * i)\nraise ValueError('late')\n", nil)
	require.Equal(t, config.StatusError, res.Status)
	require.Len(t, res.DiscardedFiles, engine.MaxLeftFiles)
	require.Equal(t, engine.DiscardedFile{Path: "f00.txt", Size: 0}, res.DiscardedFiles[0])
	require.Equal(t, engine.DiscardedFile{Path: "f19.txt", Size: 19}, res.DiscardedFiles[19])
	require.Equal(t, 5, res.DiscardedFilesOmitted)
	require.Contains(t, res.Warning, "The script left 25 files")
	require.Contains(t, res.Warning, "f00.txt, f01.txt, f02.txt and 22 more.")
}

// TestStrictLeftFilesOverWorkdir: over the working dir (project mode
// without a host python) the files stay, and nothing is listed.
func TestStrictLeftFilesOverWorkdir(t *testing.T) {
	dir := t.TempDir()
	res, err := engine.Execute(t.Context(), testEngine(t).Project(ProjectOptions{}), engine.Request{
		Code: "open('kept.txt', 'w').write('x')\n", Mode: config.ModeProject, Workdir: dir,
		Timeout: 30e9, MaxToolCalls: 5, Tools: echoTools,
	})
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Empty(t, res.DiscardedFiles)
	require.FileExists(t, filepath.Join(dir, "kept.txt"))
}

// testKernelLeftFiles: a kernel call lists the files it created or
// changed (the dir lives until the kernel ends, and says so), a call that
// writes nothing lists none, and the call that ends the kernel lists what
// it left, now discarded.
func testKernelLeftFiles(t *testing.T, e *Engine) {
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	res, err := cell(t, k, "open('a.txt', 'w').write('abc')\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, []engine.DiscardedFile{{Path: "a.txt", Size: 3}}, res.DiscardedFiles)
	require.Contains(t, res.Warning, "This call wrote 1 file in the session kernel's private dir, which later calls of this kernel see but which is discarded when the kernel ends")

	res, err = cell(t, k, "print(open('a.txt').read())\n", nil)
	require.NoError(t, err)
	require.Equal(t, "abc\n", res.Output)
	require.Empty(t, res.DiscardedFiles, "already reported, unchanged")
	require.Empty(t, res.Warning)

	res, err = cell(t, k, "open('a.txt', 'a').write('def')\n", nil)
	require.NoError(t, err)
	require.Equal(t, []engine.DiscardedFile{{Path: "a.txt", Size: 6}}, res.DiscardedFiles, "changed")

	// A file an earlier call opened, written by this one.
	res, err = cell(t, k, "f = open('c.txt', 'w')\n", nil)
	require.NoError(t, err)
	require.Equal(t, []engine.DiscardedFile{{Path: "c.txt", Size: 0}}, res.DiscardedFiles)
	res, err = cell(t, k, "f.write('xy'); f.flush()\n", nil)
	require.NoError(t, err)
	require.Equal(t, []engine.DiscardedFile{{Path: "c.txt", Size: 2}}, res.DiscardedFiles)

	res, err = cell(t, k, "open('b.txt', 'w').write('b')\nimport sys\nsys.exit(0)\n", nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, []engine.DiscardedFile{{Path: "b.txt", Size: 1}}, res.DiscardedFiles)
	require.Contains(t, res.Warning, "The script left 1 file in strict mode's private dir, which is discarded after the run")
	requireGone(t, k)
}

// TestStrictHints: an uncaught FileNotFoundError on a path that is in the
// working dir (relative, or absolute on the host) says so; one on a path
// that is nowhere gets no hint. A MemoryError names memory_limit_mb and
// its value.
func TestStrictHints(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "app.log"), []byte("x\n"), 0o644))
	inDir := func(r *engine.Request) { r.Workdir = dir }

	res := run(t, "print(len(open('logs/app.log').read()))\n", inDir)
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "FileNotFoundError")
	require.Equal(t, "The file 'logs/app.log' is in the working dir, but strict mode runs the script in a private dir that holds none of the project's files: read it with read_file() from hermes_tools, or use project mode (with sandbox: wasm to keep the sandbox).", res.Hint)

	res = run(t, "import os\nprint(os.listdir('logs'))\n", inDir)
	require.Contains(t, res.Hint, "The directory 'logs' is in the working dir")
	require.Contains(t, res.Hint, "search_files()")

	if filepath.Separator == '/' {
		res = run(t, fmt.Sprintf("open(%q)\n", filepath.Join(dir, "logs", "app.log")), inDir)
		require.Contains(t, res.Hint, "is in the working dir", res.Error)
	}

	res = run(t, "open('logs/other.log')\n", inDir)
	require.Equal(t, config.StatusError, res.Status)
	require.Empty(t, res.Hint, "not in the working dir either")

	res = run(t, "x = bytearray(300 * 1024 * 1024)\n", func(r *engine.Request) { r.MemoryLimitMB = 64 })
	require.Equal(t, config.StatusError, res.Status)
	require.Contains(t, res.Error, "MemoryError")
	require.Equal(t, "The script ran out of memory: strict mode caps the interpreter's memory at code_execution.memory_limit_mb (64 MiB here). Use less memory (process the data in chunks, drop what is no longer needed) or raise the limit.", res.Hint)
}
