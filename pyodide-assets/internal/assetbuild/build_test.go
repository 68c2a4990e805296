package assetbuild

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

const notPinned = "dist/python.wasm and dist/" + pyodideassets.StdlibName + " are committed and must match the pins: restore them with `" + pyodideassets.RestoreCommand + "`"

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
	wasm, werr := os.ReadFile(filepath.Join("..", "..", "dist", "python.wasm"))
	stdlib, serr := os.ReadFile(filepath.Join("..", "..", "dist", pyodideassets.StdlibName))
	require.NoError(t, errors.Join(werr, serr), notPinned)
	require.NoError(t, errors.Join(pyodideassets.Verify(wasm), pyodideassets.VerifyStdlib(stdlib)), notPinned)
	return wasm, stdlib
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

	got, err := stripCustomSections(in)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, orig, in, "the input is not modified")

	again, err := stripCustomSections(got)
	require.NoError(t, err)
	assert.Equal(t, got, again, "stripping is idempotent")
}

func TestStripCustomSectionsHeaderOnly(t *testing.T) {
	got, err := stripCustomSections(module())
	require.NoError(t, err)
	assert.Equal(t, wasmHeader, got)

	got, err = stripCustomSections(module(section(0, customPayload("only", nil))))
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
			got, err := stripCustomSections(in)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, pyodideassets.ErrCorrupt)
		})
	}
}

func TestStripCustomSectionsReal(t *testing.T) {
	b, _ := realDist(t)
	got, err := stripCustomSections(b)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(b, got), "the built module has no custom sections left")
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "sub", "python.wasm")
	require.NoError(t, writeFileAtomic(dest, []byte("one")))
	require.NoError(t, writeFileAtomic(dest, []byte("two")))
	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Equal(t, []byte("two"), got)
	assert.Equal(t, []string{"python.wasm"}, dirNames(t, filepath.Dir(dest)), "no temporary file is left behind")

	// A failed rename (onto a directory) leaves no temporary file either.
	blocked := filepath.Join(dir, "blocked")
	require.NoError(t, os.Mkdir(blocked, 0o755))
	require.Error(t, writeFileAtomic(blocked, []byte("three")))
	assert.ElementsMatch(t, []string{"blocked", "sub"}, dirNames(t, dir))
	assert.DirExists(t, blocked)
}

func TestRecipeVar(t *testing.T) {
	suite := recipeVar("DEBIAN_SUITE")
	assert.Regexp(t, `^[a-z]+$`, suite, "unquoted single-line value")

	toolchain := recipeVar("TOOLCHAIN")
	assert.Contains(t, toolchain, "clang-19=")
	assert.NotContains(t, toolchain, `"`)
	assert.NotContains(t, toolchain, "\n")

	assert.True(t, strings.HasPrefix(recipeVar("SRC_PYTHON"), "python3.13="), recipeVar("SRC_PYTHON"))
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
	assert.True(t, strings.HasPrefix(dsc[0], "python3.13_"), dsc[0])

	assert.Contains(t, recipeVar("OPT_FLAGS"), "-O2")
	assert.Empty(t, recipeVar("NO_SUCH_VAR"))
	assert.Empty(t, recipeVar("SRC"), "a prefix of a name is not a match")
}

func TestAptSources(t *testing.T) {
	suite := recipeVar("DEBIAN_SUITE")
	require.NotEmpty(t, suite)
	s := aptSources()
	assert.Contains(t, s, "Types: deb deb-src\nURIs: http://deb.debian.org/debian\nSuites: "+suite+" "+suite+"-updates\n")
	assert.Contains(t, s, "Suites: "+suite+"-security\n")
	for _, other := range strings.Fields(recipeVar("SOURCE_SUITES")) {
		assert.Contains(t, s, "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: "+other+" "+other+"-updates\n", "only sources of "+other)
	}
	a, err := chrootTarball()
	require.NoError(t, err)
	assert.Regexp(t, `/hermes-wasm-exec/assets-`+suite+`-[0-9a-f]{12}\.tar$`, filepath.ToSlash(a), "named after the suite and the toolchain")
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
		out, err := stripCustomSections(in)
		require.Equal(t, orig, in, "the input is not modified")
		if err != nil {
			require.ErrorIs(t, err, pyodideassets.ErrCorrupt)
			require.Nil(t, out)
			return
		}
		require.LessOrEqual(t, len(out), len(in))
		require.Equal(t, wasmHeader, out[:8])
		// The output parses, holds no custom section and strips to itself.
		again, err := stripCustomSections(out)
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
