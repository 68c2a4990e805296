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

// leb encodes v as unsigned LEB128.
func leb(v uint32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}

// section builds a wasm section with a canonical LEB128 size.
func section(id byte, payload []byte) []byte {
	out := append([]byte{id}, leb(uint32(len(payload)))...)
	return append(out, payload...)
}

// module concatenates the wasm header and the given raw sections.
func module(sections ...[]byte) []byte {
	out := append([]byte(nil), wasmHeader...)
	for _, s := range sections {
		out = append(out, s...)
	}
	return out
}

// customPayload builds the payload of a custom section named name.
func customPayload(name string, data []byte) []byte {
	out := append(leb(uint32(len(name))), name...)
	return append(out, data...)
}

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
	b, err := fs.ReadFile(distFS, "dist/python.wasm")
	require.NoError(t, err, notPinned)
	require.NoError(t, Verify(b), notPinned)
	return b
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestStripCustomSections(t *testing.T) {
	typeSec := section(1, []byte{0x01, 0x60, 0x00, 0x00})
	funcSec := section(3, []byte{0x01, 0x00})
	// A payload long enough for a two-byte size.
	dataSec := section(11, bytes.Repeat([]byte{0xab}, 300))
	// A non-canonical, padded five-byte size (value 2) must be kept as is.
	paddedCode := append([]byte{10, 0x82, 0x80, 0x80, 0x80, 0x00}, 0x00, 0x0b)
	emptyCustom := section(0, nil)
	dwarf := section(0, customPayload(".debug_info", bytes.Repeat([]byte{0x11}, 1000)))
	name := section(0, customPayload("name", []byte{0x01, 0x02}))
	producers := section(0, customPayload("producers", []byte{0x00}))

	in := module(name, typeSec, dwarf, funcSec, emptyCustom, paddedCode, dataSec, producers)
	orig := bytes.Clone(in)
	want := module(typeSec, funcSec, paddedCode, dataSec)

	got, err := StripCustomSections(in)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, orig, in, "the input is not modified")

	again, err := StripCustomSections(got)
	require.NoError(t, err)
	assert.Equal(t, got, again, "stripping is idempotent")
}

func TestStripCustomSectionsHeaderOnly(t *testing.T) {
	got, err := StripCustomSections(module())
	require.NoError(t, err)
	assert.Equal(t, wasmHeader, got)

	got, err = StripCustomSections(module(section(0, customPayload("only", nil))))
	require.NoError(t, err)
	assert.Equal(t, wasmHeader, got)
}

func TestStripCustomSectionsRejectsMalformed(t *testing.T) {
	valid := module(section(1, []byte{0x00}), section(0, customPayload("x", []byte{1, 2, 3})))
	cases := map[string][]byte{
		"empty":                      nil,
		"short header":               wasmHeader[:7],
		"bad magic":                  append([]byte("\x00ASM"), wasmHeader[4:]...),
		"elf":                        append([]byte("\x7fELF"), wasmHeader[4:]...),
		"bad version":                append(append([]byte(nil), wasmHeader[:4]...), 0x02, 0, 0, 0),
		"id without size":            module([]byte{1}),
		"truncated size":             module([]byte{1, 0x80}),
		"truncated padded size":      module([]byte{1, 0x80, 0x80, 0x80, 0x80}),
		"size overflows 32 bits":     module([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x1f}),
		"size past end":              module([]byte{1, 0x05, 0x00, 0x00}),
		"custom size past end":       module([]byte{0, 0x05, 0x00}),
		"huge size":                  module([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}),
		"valid then truncated":       valid[:len(valid)-1],
		"valid then stray id":        append(append([]byte(nil), valid...), 0x02),
		"truncated two-byte section": module(section(11, bytes.Repeat([]byte{1}, 200))[:100]),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := StripCustomSections(in)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, ErrCorrupt)
		})
	}
}

func TestStripCustomSectionsReal(t *testing.T) {
	b, _ := realDist(t)
	got, err := StripCustomSections(b)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(b, got), "the built module has no custom sections left")
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
	b, err := loadInterpreter(p, fstest.MapFS{})
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), InterpreterEnv)
}

func TestLoadInterpreterOverrideCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "python.wasm")
	require.NoError(t, os.WriteFile(p, module(section(1, []byte{0})), 0o644))
	b, err := loadInterpreter(p, fstest.MapFS{})
	assert.Nil(t, b)
	assertVerifyError(t, err, "python.wasm")
	assert.NotErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
}

func TestLoadInterpreterOverrideIsDirectory(t *testing.T) {
	dir := t.TempDir()
	b, err := loadInterpreter(dir, fstest.MapFS{})
	assert.Nil(t, b)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrMissing)
	assert.NotErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), dir)
}

func TestLoadInterpreterEmbeddedMissing(t *testing.T) {
	b, err := loadInterpreter("", fstest.MapFS{"dist/README.md": {Data: []byte("readme")}})
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)
	assert.Equal(t, "pyodideassets: the Python interpreter is missing (pyodide-assets/dist/python.wasm and python311.zip are committed files): "+
		"restore them with `git checkout -- pyodide-assets/dist` or rebuild them with `make assets-rebuild`, then rebuild the binary", err.Error())
}

func TestLoadInterpreterEmbeddedCorrupt(t *testing.T) {
	b, err := loadInterpreter("", fstest.MapFS{"dist/python.wasm": {Data: []byte("\x00asm\x01\x00\x00\x00")}})
	assert.Nil(t, b)
	assertVerifyError(t, err, "python.wasm")
	assert.NotContains(t, err.Error(), InterpreterEnv, "no override was involved")
}

func TestLoadAssetStdlib(t *testing.T) {
	// The embedded zip: missing, then corrupt.
	b, err := loadAsset("", fstest.MapFS{"dist/python.wasm": {Data: []byte("x")}}, StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)

	b, err = loadAsset("", fstest.MapFS{"dist/" + StdlibName: {Data: []byte("PK\x05\x06")}}, StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	assertVerifyError(t, err, StdlibName)

	// An override next to $HERMES_WASM_INTERPRETER: missing, then corrupt.
	p := filepath.Join(t.TempDir(), StdlibName)
	b, err = loadAsset(p, fstest.MapFS{}, StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)

	require.NoError(t, os.WriteFile(p, []byte("not the stdlib"), 0o644))
	b, err = loadAsset(p, fstest.MapFS{}, StdlibName, VerifyStdlib)
	assert.Nil(t, b)
	assertVerifyError(t, err, StdlibName)
	assert.NotErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
}

func TestLoadAssetReal(t *testing.T) {
	want := realEmbedded(t)
	b, err := loadInterpreter("", distFS)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, b))

	wasm, stdlib := realDist(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python.wasm"), wasm, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, StdlibName), stdlib, 0o644))
	b, err = loadInterpreter(filepath.Join(dir, "python.wasm"), fstest.MapFS{})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(wasm, b))
	b, err = loadAsset(filepath.Join(dir, StdlibName), fstest.MapFS{}, StdlibName, VerifyStdlib)
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

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "sub", "python.wasm")
	require.NoError(t, WriteFileAtomic(dest, []byte("one")))
	require.NoError(t, WriteFileAtomic(dest, []byte("two")))
	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Equal(t, []byte("two"), got)
	assert.Equal(t, []string{"python.wasm"}, dirNames(t, filepath.Dir(dest)), "no temporary file is left behind")

	// A failed rename (onto a directory) leaves no temporary file either.
	blocked := filepath.Join(dir, "blocked")
	require.NoError(t, os.Mkdir(blocked, 0o755))
	require.Error(t, WriteFileAtomic(blocked, []byte("three")))
	assert.ElementsMatch(t, []string{"blocked", "sub"}, dirNames(t, dir))
	assert.DirExists(t, blocked)
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
	for _, want := range []string{"json/__init__.pyc", "sqlite3/__init__.pyc", "asyncio/__init__.pyc", "_sysconfigdata__wasm32-wasi.pyc", "lzma.pyc",
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

func TestRecipeVar(t *testing.T) {
	suite := recipeVar("DEBIAN_SUITE")
	assert.Regexp(t, `^[a-z]+$`, suite, "unquoted single-line value")

	toolchain := recipeVar("TOOLCHAIN")
	assert.Contains(t, toolchain, "clang-19=")
	assert.NotContains(t, toolchain, `"`)
	assert.NotContains(t, toolchain, "\n")

	assert.True(t, strings.HasPrefix(recipeVar("SRC_PYTHON"), "python3.11="), recipeVar("SRC_PYTHON"))
	dsc := strings.Fields(recipeVar("DSC_SHA256"))
	require.Len(t, dsc, len(sourceVars), "one entry per source package")
	for _, e := range dsc {
		assert.Regexp(t, `^[^=\s]+\.dsc=[0-9a-f]{64}$`, e)
	}
	for _, v := range sourceVars {
		pin := recipeVar(v)
		assert.Regexp(t, `^[a-z0-9.-]+=[^ "]+$`, pin, v)
		// The .dsc of name=[epoch:]version is name_version.dsc.
		name, version, _ := strings.Cut(pin, "=")
		if _, after, ok := strings.Cut(version, ":"); ok {
			version = after
		}
		assert.Condition(t, func() bool {
			for _, e := range dsc {
				if strings.HasPrefix(e, name+"_"+version+".dsc=") {
					return true
				}
			}
			return false
		}, "%s (%s) has no DSC_SHA256 entry", v, pin)
	}
	assert.True(t, strings.HasPrefix(dsc[0], "python3.11_"), dsc[0])

	assert.Contains(t, recipeVar("OPT_FLAGS"), "-O2")
	assert.Empty(t, recipeVar("NO_SUCH_VAR"))
	assert.Empty(t, recipeVar("SRC"), "a prefix of a name is not a match")
}

func TestDebSrcEntries(t *testing.T) {
	suite := recipeVar("DEBIAN_SUITE")
	require.NotEmpty(t, suite)
	s := debSrcEntries()
	assert.Equal(t, 2, strings.Count(s, "Types: deb-src\n"))
	assert.Contains(t, s, "Suites: "+suite+" "+suite+"-updates\n")
	assert.Contains(t, s, "Suites: "+suite+"-security\n")
	assert.NotContains(t, s, "Types: deb\n", "no binary entries")
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

func FuzzStripCustomSections(f *testing.F) {
	f.Add([]byte{})
	f.Add(append([]byte(nil), wasmHeader...))
	f.Add(module(section(0, customPayload("name", []byte{1, 2})), section(1, []byte{0x01, 0x60, 0x00, 0x00})))
	f.Add(module(section(11, bytes.Repeat([]byte{7}, 200)), section(0, nil)))
	f.Add(module([]byte{10, 0x82, 0x80, 0x80, 0x80, 0x00, 0x00, 0x0b}))
	f.Add(module([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}))
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out, err := StripCustomSections(in)
		require.Equal(t, orig, in, "the input is not modified")
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.Nil(t, out)
			return
		}
		require.LessOrEqual(t, len(out), len(in))
		require.Equal(t, wasmHeader, out[:8])
		// The output parses, holds no custom section and strips to itself.
		again, err := StripCustomSections(out)
		require.NoError(t, err)
		require.Equal(t, out, again)
		for off := 8; off < len(out); {
			require.NotZero(t, out[off], "custom section left at offset %d", off)
			size, n, err := readVarU32(out[off+1:])
			require.NoError(t, err)
			off += 1 + n + int(size)
		}
		// With nothing stripped, the output is the input.
		if len(in) == len(out) {
			require.Equal(t, in, out)
		}
	})
}
