package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// TestStrictHint: a FileNotFoundError on a path that is in the working dir
// (relative, or absolute within it) gets a hint in strict mode only, a
// MemoryError names memory_limit_mb and its value (the default when
// unset), and nothing else gets one.
func TestStrictHint(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "it's.csv"), []byte("a\n"), 0o644))
	exc := func(typ, msg string) *ExitReport { return &ExitReport{Kind: "exception", Type: typ, Message: msg} }
	strict := Request{Mode: config.ModeStrict, Workdir: dir}

	require.Equal(t, `The file "data/it's.csv" is in the working dir, but strict mode runs the script in a private dir that holds none of the project's files: read it with read_file() from hermes_tools, or use project mode (with sandbox: wasm to keep the sandbox).`,
		strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: "data/it's.csv"`)))
	require.Contains(t, strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: './data'`)), "The directory './data' is in the working dir")
	require.Contains(t, strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: 'data' -> 'x'`)), "The directory 'data'", "rename: the first name")
	require.Empty(t, strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: 'data/none.csv'`)))
	require.Empty(t, strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: '../`+filepath.Base(dir)+`/data'`)), "outside the working dir")
	require.Empty(t, strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: 'data\x00'`)), "an escape it does not decode")
	require.Empty(t, strictHint(Request{Mode: config.ModeProject, Workdir: dir}, exc("FileNotFoundError", `[Errno 2] No such file or directory: 'data'`)))
	require.Empty(t, strictHint(Request{Mode: config.ModeProject, Embedded: true, Workdir: dir}, exc("FileNotFoundError", `[Errno 44] No such file or directory: 'data'`)), "its cwd is the working dir")
	if runtime.GOOS != "windows" {
		abs := filepath.Join(dir, "data", "it's.csv")
		require.Contains(t, strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: "`+abs+`"`)), "is in the working dir")
		require.Empty(t, strictHint(strict, exc("FileNotFoundError", `[Errno 44] No such file or directory: '/etc/passwd'`)), "absolute, outside the working dir")
	}

	require.Equal(t, "The script ran out of memory: strict mode caps the interpreter's memory at code_execution.memory_limit_mb (512 MiB here). Use less memory (process the data in chunks, drop what is no longer needed) or raise the limit.",
		strictHint(strict, exc("MemoryError", "")))
	require.Contains(t, strictHint(Request{Mode: config.ModeStrict, MemoryLimitMB: 2048}, exc("MemoryError", "")), "(2048 MiB here)")
	require.Contains(t, strictHint(Request{Mode: config.ModeProject, Embedded: true, MemoryLimitMB: 100}, exc("MemoryError", "")), "the embedded interpreter")
	require.Empty(t, strictHint(Request{Mode: config.ModeProject}, exc("MemoryError", "")), "a host python's memory is not memory_limit_mb's")
	require.Empty(t, strictHint(strict, exc("ValueError", "No such file or directory: 'data'")))
}

func TestPyStringLiteral(t *testing.T) {
	for lit, want := range map[string]string{`'a b'`: "a b", `"it's"`: "it's", `'it\'s'`: "it's", `'C:\\x'`: `C:\x`, `'t\tn'`: "t\tn", `''`: ""} {
		got, ok := pyStringLiteral(lit)
		require.True(t, ok, lit)
		require.Equal(t, want, got, lit)
	}
	for _, lit := range []string{`'\x00'`, `'\u00e9'`, `'`, `'a\'`} {
		_, ok := pyStringLiteral(lit)
		require.False(t, ok, lit)
	}
}

// TestExecuteLeftFiles: an engine's discarded files become the result's
// discarded_files (and _omitted) and a warning after any other one; none
// give neither.
func TestExecuteLeftFiles(t *testing.T) {
	left := &LeftFiles{Files: []DiscardedFile{{"a.db", 10}, {"b/c.zip", 20}}}
	res, err := execFake(t, time.Minute, context.Background(), func(ctx context.Context, job *Job) (Outcome, error) {
		return Outcome{Left: left}, nil
	})
	require.NoError(t, err)
	require.Equal(t, config.StatusSuccess, res.Status)
	require.Equal(t, left.Files, res.DiscardedFiles)
	require.Zero(t, res.DiscardedFilesOmitted)
	require.Equal(t, "The script left 2 files in strict mode's private dir, which is discarded after the run (see discarded_files): a.db, b/c.zip. To keep output, write it into the working dir with write_file() from hermes_tools (text), or use project mode (with sandbox: wasm to keep the sandbox).", res.Warning)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.Contains(t, string(b), `"discarded_files":[{"path":"a.db","size":10},{"path":"b/c.zip","size":20}]`)
	require.NotContains(t, string(b), "discarded_files_omitted")

	left = &LeftFiles{Files: []DiscardedFile{{"x", 1}}, More: 7, Kernel: true}
	res, _ = execFake(t, time.Minute, context.Background(), func(ctx context.Context, job *Job) (Outcome, error) {
		return Outcome{Left: left, ExitCode: 1}, nil
	})
	require.Equal(t, config.StatusError, res.Status)
	require.Equal(t, 7, res.DiscardedFilesOmitted)
	require.Equal(t, "This call wrote 8 files in the session kernel's private dir, which later calls of this kernel see but which is discarded when the kernel ends (see discarded_files): x and 7 more. To keep output, write it into the working dir with write_file() from hermes_tools (text), or use project mode (with sandbox: wasm to keep the sandbox).", res.Warning)

	res, _ = execFake(t, time.Minute, context.Background(), func(ctx context.Context, job *Job) (Outcome, error) { return Outcome{}, nil })
	require.Nil(t, res.DiscardedFiles)
	require.Empty(t, res.Warning)
	b, _ = json.Marshal(res)
	require.NotContains(t, string(b), "discarded_files")
}
