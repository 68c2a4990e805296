package strict

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

// zipOf returns a deflated zip of files (name -> content).
func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		require.NoError(t, err)
		_, err = io.WriteString(w, content)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// TestStdlibFSZones: the zone files of the zip are a read-only directory
// tree whose files can be read, seeked in and listed, as zoneinfo and the
// C library use them.
func TestStdlibFSZones(t *testing.T) {
	data := zipOf(t, map[string]string{
		"os.pyc":                                "x",
		"tzdata/__init__.pyc":                   "x",
		"tzdata/zoneinfo/UTC":                   "TZif2-utc",
		"tzdata/zoneinfo/Asia/Tokyo":            "TZif2-tokyo-0123456789",
		"tzdata/zoneinfo/America/Indiana/Vevay": "TZif2-vevay",
	})
	s, err := newStdlibFS("python313.zip", data)
	require.NoError(t, err)

	// The zip itself stays one file.
	b, err := fs.ReadFile(s, "python313.zip")
	require.NoError(t, err)
	require.Equal(t, data, b)

	f, err := s.zones.Open("Asia/Tokyo")
	require.NoError(t, err)
	defer f.Close()
	info, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, "Tokyo", info.Name())
	require.EqualValues(t, 22, info.Size())
	require.Equal(t, fs.FileMode(0o444), info.Mode())
	seeker, ok := f.(io.ReadSeeker)
	require.True(t, ok, "zone files must be seekable (zoneinfo seeks)")
	_, err = seeker.Seek(12, io.SeekStart)
	require.NoError(t, err)
	rest, err := io.ReadAll(seeker)
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(rest))

	entries, err := fs.ReadDir(s.zones, ".")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"America", "Asia", "UTC"}, names)
	b, err = fs.ReadFile(s.zones, "America/Indiana/Vevay")
	require.NoError(t, err)
	require.Equal(t, "TZif2-vevay", string(b))

	_, err = s.zones.Open("Mars/Olympus_Mons")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = s.zones.Open("../os.pyc")
	require.Error(t, err, "nothing outside the zone directory")
}

// TestStdlibFSNoZones: a standard library zip without the time zone data
// (an interpreter built before it was added) is refused with what to do.
func TestStdlibFSNoZones(t *testing.T) {
	_, err := newStdlibFS("python313.zip", zipOf(t, map[string]string{"os.pyc": "x"}))
	require.ErrorContains(t, err, "has no time zone data (tzdata/zoneinfo/UTC)")
	require.ErrorContains(t, err, "older than this version's pinned build")

	_, err = newStdlibFS("python313.zip", []byte("not a zip"))
	require.ErrorContains(t, err, "reading the standard library zip python313.zip")
}

// TestStdlibFSZoneOpensShareMemory: opening a zone file again does not
// decompress it again. Each open held its own decompressed copy in host
// memory, outside the guest's cap, for as long as the descriptor stayed
// open: a guest calling os.open("/usr/share/zoneinfo/tzdata.zi") in a loop
// grew the host to 5 GB under a 512 MB cap.
func TestStdlibFSZoneOpensShareMemory(t *testing.T) {
	testenv.SkipUnderRace(t, "the bytes allocated")
	const size = 100 << 10
	s, err := newStdlibFS("python313.zip", zipOf(t, map[string]string{
		"tzdata/zoneinfo/UTC":       "TZif2-utc",
		"tzdata/zoneinfo/tzdata.zi": strings.Repeat("R", size),
	}))
	require.NoError(t, err)

	const opens = 200
	files := make([]fs.File, 0, opens)
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for range opens {
		f, err := s.zones.Open("tzdata.zi")
		require.NoError(t, err)
		files = append(files, f)
	}
	goruntime.ReadMemStats(&after)
	grown := after.TotalAlloc - before.TotalAlloc
	// One copy (100 KiB) plus a little per open; a copy per open is 20 MB.
	require.Less(t, grown, uint64(opens*size/10),
		"%d opens of a %d-byte zone file allocated %d bytes: each open must not hold its own copy", opens, size, grown)

	for _, f := range files {
		b, err := io.ReadAll(f.(io.Reader))
		require.NoError(t, err)
		require.Len(t, b, size, "every open reads the whole file from its own offset")
		require.NoError(t, f.Close())
	}
}
