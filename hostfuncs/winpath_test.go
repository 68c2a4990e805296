package hostfuncs

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWinStripDevicePrefix(t *testing.T) {
	for in, want := range map[string]string{
		`\\?\C:\Users\me\.ssh`: `C:\Users\me\.ssh`,
		`\\.\c:\x`:             `c:\x`,
		`\??\C:\x`:             `C:\x`,
		`//?/C:/x`:             `C:/x`,
		`\\?\UNC\host\share\x`: `\\host\share\x`,
		`\\?\unc\host\share`:   `\\host\share`,
		`\\?\Volume{0-1}\x`:    `\\?\Volume{0-1}\x`, // no drive to name it by
		`\\host\share\x`:       `\\host\share\x`,
		`C:\x`:                 `C:\x`,
		`\\?`:                  `\\?`,
		`\\.\pipe\name`:        `\\.\pipe\name`,
	} {
		assert.Equal(t, want, winStripDevicePrefix(in), in)
	}
}

func TestWinName(t *testing.T) {
	for in, want := range map[string]string{
		".ssh":              ".ssh",
		".ssh.":             ".ssh",
		".netrc. . ":        ".netrc",
		".netrc::$DATA":     ".netrc",
		"authorized_keys:x": "authorized_keys",
		".":                 ".",
		"..":                "..",
		"...":               "",
		"a b":               "a b",
	} {
		assert.Equal(t, want, winName(in), in)
	}
}

// junctionFS is the host's file system with some directories made
// junctions (mount points): Lstat reports them as Go 1.23+ does on Windows
// (a directory with ModeIrregular, not ModeSymlink), and Readlink gives
// their target.
type junctionFS struct {
	backend.FS
	junctions map[string]string
}

type junctionInfo struct{ name string }

func (i junctionInfo) Name() string       { return i.name }
func (i junctionInfo) Size() int64        { return 0 }
func (i junctionInfo) Mode() fs.FileMode  { return fs.ModeDir | fs.ModeIrregular | 0o777 }
func (i junctionInfo) ModTime() time.Time { return time.Time{} }
func (i junctionInfo) IsDir() bool        { return true }
func (i junctionInfo) Sys() any           { return nil }

func (f junctionFS) Lstat(name string) (fs.FileInfo, error) {
	if _, ok := f.junctions[name]; ok {
		return junctionInfo{filepath.Base(name)}, nil
	}
	return f.FS.Lstat(name)
}

func (f junctionFS) Readlink(name string) (string, error) {
	if dest, ok := f.junctions[name]; ok {
		return dest, nil
	}
	return f.FS.Readlink(name)
}

// TestRealPathJunction resolves a junction like a symlink: an unprivileged
// Windows user can make one (mklink /J), and a check that did not follow
// it would judge the junction's path, not the directory written. Another
// irregular directory (a reparse point that is no link: Readlink fails) is
// an ordinary directory.
func TestRealPathJunction(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	home := filepath.Join(dir, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "work", "j"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "work", "cloud"), 0o755))
	fsys := junctionFS{FS: backend.LocalFS, junctions: map[string]string{
		filepath.Join(dir, "work", "j"): filepath.Join(home, ".ssh"),
	}}
	got, err := realPathIn(fsys, pathSyntax{}, filepath.Join(dir, "work", "j", "authorized_keys"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".ssh", "authorized_keys"), got)

	cloud := junctionFS{FS: backend.LocalFS, junctions: map[string]string{}}
	irregular := filepath.Join(dir, "work", "cloud")
	got, err = realPathIn(irregularFS{cloud, irregular}, pathSyntax{}, filepath.Join(irregular, "f"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(irregular, "f"), got)
}

// irregularFS reports dir as an irregular directory that is no link.
type irregularFS struct {
	junctionFS
	dir string
}

func (f irregularFS) Lstat(name string) (fs.FileInfo, error) {
	if name == f.dir {
		return junctionInfo{filepath.Base(name)}, nil
	}
	return f.junctionFS.Lstat(name)
}

func (f irregularFS) Readlink(name string) (string, error) {
	if name == f.dir {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.EINVAL}
	}
	return f.junctionFS.Readlink(name)
}

// TestRealPathWindowsSpellings: on Windows one file has many names; the
// file-safety checks judge the file the OS opens, so none of them reaches
// a protected file: a device prefix, trailing dots and spaces, an NTFS
// stream, another case, an 8.3 short name.
func TestRealPathWindowsSpellings(t *testing.T) {
	if runtime.GOOS != "windows" {
		t.Skip("Windows path spellings (device prefixes, streams, trailing dots, short names): the string rules are tested on every platform by TestWinStripDevicePrefix and TestWinName")
	}
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	ssh := filepath.Join(e.home, ".ssh")
	require.NoError(t, os.Mkdir(ssh, 0o700))
	keys := filepath.Join(ssh, "authorized_keys")
	netrc := filepath.Join(e.home, ".netrc")
	for _, p := range []string{
		`\\?\` + keys,
		`\\.\` + keys,
		filepath.Join(e.home, ".ssh.", "authorized_keys"),
		filepath.Join(e.home, ".ssh ", "authorized_keys"),
		keys + ".",
		keys + "::$DATA",
		filepath.Join(e.home, ".SSH", "Authorized_Keys"),
		netrc + "::$DATA",
		netrc + ":hidden",
		filepath.Join(e.home, ".NETRC"),
		`\\?\` + netrc,
	} {
		got, err := realPath(p)
		require.NoError(t, err, p)
		assert.True(t, pathSyntax{}.key(got) == pathSyntax{}.key(keys) || pathSyntax{}.key(got) == pathSyntax{}.key(netrc), "%s resolved to %s", p, got)
		res := callJSON(t, tl, "write_file", map[string]any{"path": p, "content": "x"})
		assert.Contains(t, res["error"], "is a protected system/credential file.", p)
	}
	assert.NoFileExists(t, keys)
	assert.NoFileExists(t, netrc)

	// A short name (where the volume makes them) is its long name.
	long := filepath.Join(e.home, "a long directory name")
	require.NoError(t, os.Mkdir(long, 0o755))
	short := shortPathName(t, long)
	if strings.EqualFold(short, long) {
		t.Logf("no 8.3 short name for %s on this volume", long)
		return
	}
	got, err := realPath(filepath.Join(short, "new", "file.txt"))
	require.NoError(t, err)
	assert.Equal(t, strings.ToLower(filepath.Join(long, "new", "file.txt")), strings.ToLower(got), "from %s", short)
}

// ReadDir reports the junctions among name's entries as Go 1.23+ does on
// Windows: a directory with ModeIrregular.
func (f junctionFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := f.FS.ReadDir(name)
	for i, e := range entries {
		if _, ok := f.junctions[filepath.Join(name, e.Name())]; ok {
			entries[i] = fs.FileInfoToDirEntry(junctionInfo{e.Name()})
		}
	}
	return entries, err
}

// TestSearchFilesSkipsJunctions: search_files follows no link, so a
// junction in the tree (to ~/.hermes, say, or to its own parent) is not
// walked into, as a symlink is not.
func TestSearchFilesSkipsJunctions(t *testing.T) {
	tl, dir := newTestTools(t)
	writeTestFile(t, dir, "top.txt", "needle\n")
	writeTestFile(t, dir, "j/inner.txt", "needle\n")
	tl.fs = junctionFS{FS: backend.LocalFS, junctions: map[string]string{filepath.Join(dir, "j"): dir}}
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "needle"})
	require.NotContains(t, res, "error")
	assert.Equal(t, float64(1), res["total_count"], res)
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "*.txt", "target": "files"})
	assert.Equal(t, []any{"top.txt"}, res["files"])
}
