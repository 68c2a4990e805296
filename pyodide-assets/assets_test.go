package pyodideassets

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const notPinned = "dist/python.wasm and dist/" + StdlibName + " are committed and must match the pins: restore them with `" + RestoreCommand + "`"

// realDist returns python.wasm and the stdlib zip from the dist directory on
// disk; both are committed, so the test fails unless they match the pins.
func realDist(t *testing.T) (wasm, stdlib []byte) {
	t.Helper()
	wasm, werr := os.ReadFile(filepath.Join("dist", "python.wasm"))
	stdlib, serr := os.ReadFile(filepath.Join("dist", StdlibName))
	require.NoError(t, errors.Join(werr, serr), notPinned)
	require.NoError(t, errors.Join(Verify(wasm), VerifyStdlib(stdlib)), notPinned)
	return wasm, stdlib
}

// realEmbedded returns the embedded python.wasm, which must match the pins.
func realEmbedded(t *testing.T) []byte {
	t.Helper()
	b, err := embeddedAsset("dist/python.wasm")
	require.NoError(t, err, notPinned)
	require.NoError(t, Verify(b), notPinned)
	return b
}

func assertVerifyError(t *testing.T, err error, what string) *VerifyError {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrCorrupt)
	var ve *VerifyError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.What, what)
	assert.NotEqual(t, ve.Want, ve.Got)
	assert.Contains(t, err.Error(), "corrupt or truncated")
	assert.Contains(t, err.Error(), "`"+RestoreCommand+"`")
	assert.Contains(t, err.Error(), "`"+RebuildCommand+"`")
	assert.Contains(t, err.Error(), ve.Want)
	assert.Contains(t, err.Error(), ve.Got)
	return ve
}

func TestVerifyPins(t *testing.T) {
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	assert.Regexp(t, hex64, SHA256)
	assert.Regexp(t, hex64, StdlibSHA256)
	assert.GreaterOrEqual(t, Size, 0)
	assert.GreaterOrEqual(t, StdlibSize, 0)
}

func TestVerifyRejectsWrongSize(t *testing.T) {
	for _, c := range []struct {
		verify func([]byte) error
		what   string
		size   int
	}{
		{Verify, "python.wasm size", Size},
		{VerifyStdlib, StdlibName + " size", StdlibSize},
	} {
		lengths := []int{1, 100, c.size + 1}
		if c.size > 0 {
			lengths = append(lengths, 0, c.size-1)
		}
		for _, n := range lengths {
			if n == c.size {
				continue
			}
			ve := assertVerifyError(t, c.verify(make([]byte, n)), c.what)
			assert.Equal(t, c.what, ve.What)
			assert.Equal(t, strconv.Itoa(c.size)+" bytes", ve.Want)
			assert.Equal(t, strconv.Itoa(n)+" bytes", ve.Got)
		}
	}
}

func TestVerifyRejectsWrongHash(t *testing.T) {
	for _, c := range []struct {
		verify    func([]byte) error
		what, sum string
		size      int
	}{
		{Verify, "python.wasm sha256", SHA256, Size},
		{VerifyStdlib, StdlibName + " sha256", StdlibSHA256, StdlibSize},
	} {
		b := make([]byte, c.size) // the right size, all zeros: not the pinned bytes
		ve := assertVerifyError(t, c.verify(b), c.what)
		assert.Equal(t, c.what, ve.What)
		assert.Equal(t, c.sum, ve.Want)
		sum := sha256.Sum256(b)
		assert.Equal(t, hex.EncodeToString(sum[:]), ve.Got)
	}
}

func TestVerifyReal(t *testing.T) {
	wasm, stdlib := realDist(t)
	require.NoError(t, Verify(wasm))
	require.NoError(t, VerifyStdlib(stdlib))

	corrupted := bytes.Clone(wasm)
	corrupted[len(corrupted)/2] ^= 0x01
	assertVerifyError(t, Verify(corrupted), "sha256")
	assertVerifyError(t, Verify(wasm[:len(wasm)-1]), "size")
	assertVerifyError(t, VerifyStdlib(wasm), "size")
}

func TestVerifyErrorMessage(t *testing.T) {
	err := error(&VerifyError{What: "python.wasm sha256", Want: "aaaa", Got: "bbbb"})
	assert.True(t, errors.Is(err, ErrCorrupt))
	assert.Equal(t,
		"pyodideassets: python.wasm sha256 mismatch, the file is corrupt or truncated: want aaaa, got bbbb; restore the committed file with `git checkout -- pyodide-assets/dist` or rebuild it with `make assets-rebuild`, then rebuild the binary",
		err.Error())
}

func TestLoadInterpreterOverrideMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope", "python.wasm")
	b, err := loadInterpreter(p, fromFS(fstest.MapFS{}))
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), InterpreterEnv)
}

func TestLoadInterpreterOverrideCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "python.wasm")
	require.NoError(t, os.WriteFile(p, []byte("\x00asm\x01\x00\x00\x00\x01\x01\x00"), 0o644))
	b, err := loadInterpreter(p, fromFS(fstest.MapFS{}))
	assert.Nil(t, b)
	assertVerifyError(t, err, "python.wasm")
	assert.NotErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
}

func TestLoadInterpreterOverrideIsDirectory(t *testing.T) {
	dir := t.TempDir()
	b, err := loadInterpreter(dir, fromFS(fstest.MapFS{}))
	assert.Nil(t, b)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrMissing)
	assert.NotErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), dir)
}

func TestLoadInterpreterEmbeddedMissing(t *testing.T) {
	b, err := loadInterpreter("", fromFS(fstest.MapFS{"dist/README.md": {Data: []byte("readme")}}))
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)
	assert.Equal(t, "pyodideassets: the Python interpreter is missing (pyodide-assets/dist/python.wasm and python313.zip are committed files): "+
		"restore them with `git checkout -- pyodide-assets/dist` or rebuild them with `make assets-rebuild`, then rebuild the binary", err.Error())
}

func TestLoadInterpreterEmbeddedCorrupt(t *testing.T) {
	b, err := loadInterpreter("", fromFS(fstest.MapFS{"dist/python.wasm": {Data: []byte("\x00asm\x01\x00\x00\x00")}}))
	assert.Nil(t, b)
	assertVerifyError(t, err, "python.wasm")
	assert.NotContains(t, err.Error(), InterpreterEnv, "no override was involved")
}

// The embedded copy is not hashed at load (the binary is the unit of
// integrity): a copy of the right length loads, and VerifyLoaded's check,
// which doctor runs, catches it.
func TestEmbeddedLoadChecksLengthOnly(t *testing.T) {
	same := make([]byte, Size)
	b, err := loadInterpreter("", fromFS(fstest.MapFS{"dist/python.wasm": {Data: same}}))
	require.NoError(t, err)
	assert.Len(t, b, Size)
	assertVerifyError(t, Verify(b), "python.wasm")
	require.NoError(t, VerifyLoaded(), "the real embedded files match their pins")
}

func TestLoadAssetStdlib(t *testing.T) {
	// The embedded zip: missing, then corrupt.
	b, err := loadAsset("", fromFS(fstest.MapFS{"dist/python.wasm": {Data: []byte("x")}}), StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)

	b, err = loadAsset("", fromFS(fstest.MapFS{"dist/" + StdlibName: {Data: []byte("PK\x05\x06")}}), StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	assertVerifyError(t, err, StdlibName)

	// An override next to $HERMES_WASM_INTERPRETER: missing, then corrupt.
	p := filepath.Join(t.TempDir(), StdlibName)
	b, err = loadAsset(p, fromFS(fstest.MapFS{}), StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)

	require.NoError(t, os.WriteFile(p, []byte("not the stdlib"), 0o644))
	b, err = loadAsset(p, fromFS(fstest.MapFS{}), StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	assertVerifyError(t, err, StdlibName)
	assert.NotErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
}

func TestLoadAssetReal(t *testing.T) {
	want := realEmbedded(t)
	b, err := loadInterpreter("", embeddedAsset)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, b))

	wasm, stdlib := realDist(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python.wasm"), wasm, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, StdlibName), stdlib, 0o644))
	b, err = loadInterpreter(filepath.Join(dir, "python.wasm"), fromFS(fstest.MapFS{}))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(wasm, b))
	b, err = loadAsset(filepath.Join(dir, StdlibName), fromFS(fstest.MapFS{}), StdlibName, VerifyStdlib)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(stdlib, b))
}

// TestInterpreter is the only test that calls the cached Interpreter: the
// committed module is embedded and verifies.
func TestInterpreter(t *testing.T) {
	t.Setenv(InterpreterEnv, "")
	b, err := Interpreter()
	require.NoError(t, err, notPinned)
	assert.Len(t, b, Size)
	b2, err2 := Interpreter()
	assert.Equal(t, err, err2, "the result is cached")
	assert.Equal(t, len(b), len(b2))
	if len(b) > 0 {
		assert.Same(t, &b[0], &b2[0], "the bytes are cached, not re-read")
	}
}

// TestStdlibOverrideDir is the only test that calls the cached Stdlib: with
// $HERMES_WASM_INTERPRETER set, it looks for the zip next to that file. The
// cache is reset around the call so the test does not depend on the order.
func TestStdlibOverrideDir(t *testing.T) {
	reset := func() { stdlibOnce, stdlibBytes, stdlibErr = sync.Once{}, nil, nil }
	reset()
	t.Cleanup(reset)

	dir := t.TempDir()
	t.Setenv(InterpreterEnv, filepath.Join(dir, "python.wasm"))
	b, err := Stdlib()
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), filepath.Join(dir, StdlibName))
	assert.Contains(t, err.Error(), InterpreterEnv)

	// Cached: a zip that appears later is not read by this process.
	require.NoError(t, os.WriteFile(filepath.Join(dir, StdlibName), []byte("late"), 0o644))
	_, err2 := Stdlib()
	assert.Equal(t, err, err2)
}

// writeTree creates the files (slash-separated path -> content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// TestStdlibZipReal: the pinned standard library is a zip of deflated
// .pyc in name order with one fixed timestamp, without tests, IDLE,
// tkinter or ensurepip, and the time zone database as the package tzdata.
func TestStdlibZipReal(t *testing.T) {
	_, b := realDist(t)
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		require.Equal(t, zip.Deflate, f.Method, f.Name)
		require.True(t, strings.HasSuffix(f.Name, ".pyc") || strings.HasPrefix(f.Name, "tzdata/"), f.Name)
		require.Equal(t, time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC), f.Modified.UTC(), f.Name)
		for _, skipped := range []string{"test/", "idlelib/", "tkinter/", "ensurepip/", "/tests/"} {
			require.False(t, strings.HasPrefix(f.Name, skipped) || strings.Contains(f.Name, "/"+skipped), f.Name)
		}
	}
	require.True(t, sort.StringsAreSorted(names))
	for _, want := range []string{"json/__init__.pyc", "sqlite3/__init__.pyc", "asyncio/__init__.pyc", "_sysconfigdata__wasi_wasm32-wasi.pyc", "lzma.pyc",
		"tzdata/__init__.pyc", "tzdata/zones", "tzdata/zoneinfo/__init__.pyc", "tzdata/zoneinfo/America/__init__.pyc",
		"tzdata/zoneinfo/America/Argentina/__init__.pyc", "tzdata/zoneinfo/America/Argentina/Buenos_Aires", "tzdata/zoneinfo/UTC", "tzdata/zoneinfo/tzdata.zi"} {
		require.Contains(t, names, want)
	}

	// Every zone the list names is a TZif file, and every TZif file is listed.
	zones, err := fs.ReadFile(zr, "tzdata/zones")
	require.NoError(t, err)
	listed := strings.Fields(string(zones))
	require.Greater(t, len(listed), 500)
	var tzif []string
	for _, f := range zr.File {
		zone, ok := strings.CutPrefix(f.Name, "tzdata/zoneinfo/")
		if !ok {
			continue
		}
		head := make([]byte, 4)
		r, err := f.Open()
		require.NoError(t, err)
		_, _ = io.ReadFull(r, head)
		r.Close()
		if string(head) == "TZif" {
			tzif = append(tzif, zone)
		}
	}
	require.Equal(t, listed, tzif)
}

func TestRecipeHash(t *testing.T) {
	h := RecipeHash()
	assert.Regexp(t, `^[0-9a-f]{64}$`, h)
	assert.Equal(t, h, RecipeHash(), "stable across calls")
	empty := sha256.Sum256(nil)
	assert.NotEqual(t, hex.EncodeToString(empty[:]), h, "the recipe files are hashed")
}

// TestRecipePinned is the CI-sized provenance check: the recipe in cpython/
// is the one the committed files were built from. A recipe change without a
// rebuild and re-pin fails here (and in `make assets`).
func TestRecipePinned(t *testing.T) {
	require.Equal(t, RecipeSHA256, RecipeHash(),
		"pyodide-assets/cpython changed since the committed build: run `%s REPIN=1` (about 4 minutes, as root) and commit pyodide-assets/dist with the new pins", RebuildCommand)
	require.NoError(t, Check("dist"))
}

// TestCheck: the committed dist passes; a copy with a file missing, a file
// damaged, or both, fails with every problem named, each with its remedy.
func TestCheck(t *testing.T) {
	wasm, stdlib := realDist(t)
	dist := t.TempDir()
	writeTree(t, dist, map[string]string{"python.wasm": string(wasm), StdlibName: string(stdlib)})
	require.NoError(t, verifyDir(dist)) // Check adds the recipe, which TestRecipePinned covers

	require.NoError(t, os.Remove(filepath.Join(dist, StdlibName)))
	err := Check(dist)
	require.ErrorIs(t, err, ErrMissing)
	assert.NotErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), filepath.Join(dist, StdlibName)+" does not exist")
	assert.Contains(t, err.Error(), RestoreCommand)

	damaged := bytes.Clone(wasm)
	damaged[len(damaged)/2] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dist, "python.wasm"), damaged, 0o644))
	err = Check(dist)
	require.ErrorIs(t, err, ErrMissing)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), filepath.Join(dist, "python.wasm")+": pyodideassets: python.wasm sha256 mismatch")
	assert.Contains(t, err.Error(), RebuildCommand)

	err = Check(filepath.Join(t.TempDir(), "none"))
	require.ErrorIs(t, err, ErrMissing)
	assert.Equal(t, 2, strings.Count(err.Error(), "does not exist"), err.Error())
}

// fromFS serves the embedded files from fsys (tests of a missing or
// damaged embed).
func fromFS(fsys fs.FS) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) }
}
