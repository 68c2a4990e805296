package strict

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// diskHelpers are Python helpers for the disk tests: fill writes n MiB to
// a file, used is what the guest's dir holds (the stdlib mount under /usr
// excluded).
const diskHelpers = `import errno, os
def fill(path, mib, mode="wb"):
    with open(path, mode) as f:
        for _ in range(mib):
            f.write(b"x" * (1 << 20))
def used():
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk("/") if not d.startswith("/usr") for n in ns)
def nospc(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
        return True
    return False
`

func withDisk(mb int) func(*engine.Request) {
	return func(r *engine.Request) { r.DiskLimitMB = mb }
}

// TestStrictDiskLimit: a script writing without end under
// code_execution.disk_limit_mb 5 gets OSError ENOSPC once its dir holds 5
// MiB, never more, and the result's hint names the key. Before the budget
// it wrote all 20 MiB.
func TestStrictDiskLimit(t *testing.T) {
	res := run(t, diskHelpers+`
written = 0
try:
    with open("big.bin", "wb") as f:
        while written < (20 << 20):
            f.write(b"x" * (1 << 20))
            written += 1 << 20
    print("no error after", written >> 20, "MiB")
except OSError as e:
    print("errno", e.errno == errno.ENOSPC, e.strerror, "used", used() <= (5 << 20), used() > (4 << 20))
    raise
`, withDisk(5))
	require.Equal(t, config.StatusError, res.Status, res.Output)
	require.Contains(t, res.Output, "errno True No space left on device used True True")
	require.Contains(t, res.Hint, "code_execution.disk_limit_mb")
}

// TestStrictDiskLimitReleases: removing, truncating or renaming over a file
// gives its bytes back to the budget; a file removed while open counts
// until it is closed; growing a file by ftruncate or a write past its end
// counts too (holes included).
func TestStrictDiskLimitReleases(t *testing.T) {
	res := run(t, diskHelpers+`
fill("a", 4); os.remove("a"); fill("b", 4)          # removal frees
print("after remove", nospc(fill, "c", 2))          # 4 + 2 > 5
fill("b", 0); fill("c", 4)                          # O_TRUNC frees
with open("c", "r+b") as f: f.truncate(0)           # ftruncate frees
fill("d", 3); fill("e", 1); os.rename("e", "d")     # rename over frees d
fill("f", 3)
print("used", used() >> 20)                         # 4 (c's 0 + d's 1 + f's 3)
os.remove("f"); os.remove("d")
g = open("g", "wb"); g.write(b"x" * (3 << 20)); g.flush()
os.remove("g")                                      # still open: still counted
print("while open", nospc(fill, "h", 3))
g.close()
fill("h", 3)                                        # closed: freed
os.remove("h")
with open("s", "wb") as f:
    print("truncate up", nospc(f.truncate, 6 << 20))
    print("sparse", nospc(os.pwrite, f.fileno(), b"x", 6 << 20))
    f.truncate(4 << 20)                             # within the budget
print("size", os.path.getsize("s") >> 20)
`, withDisk(5))
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "after remove True\nused 4\nwhile open True\ntruncate up True\nsparse True\nsize 4\n", res.Output)
}

// TestStrictDiskLimitKernel: a kernel's budget spans its cells, and what
// its dir holds on the host stays within it.
func TestStrictDiskLimitKernel(t *testing.T) {
	e := testEngine(t)
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv, DiskLimitMB: 5}, false)
	okCell(t, k, diskHelpers+`fill("a", 3)`)
	res, err := cell(t, k, `fill("b", 3)`, nil)
	require.NoError(t, err)
	require.Equal(t, config.StatusError, res.Status, res.Output)
	require.Contains(t, res.Output, "No space left on device")
	require.Contains(t, res.Hint, "code_execution.disk_limit_mb")
	require.LessOrEqual(t, dirSize(t, k.staging), int64(5<<20))
	require.Equal(t, "True\n", okCell(t, k, `os.remove("b"); os.remove("a"); fill("b", 4); print(os.path.getsize("b") == 4 << 20)`))
}

// dirSize is the total size of the regular files under dir.
func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		n += fi.Size()
		return err
	}))
	return n
}

// TestJailFSDiskBudget checks the accounting at the file-system level:
// files present at start count, a write past the limit is short and the
// next one is refused (as EIO with the budget marked full, which the WASI
// layer turns into ENOSPC), hard links count once.
func TestJailFSDiskBudget(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "staged"), make([]byte, 512<<10), 0o600))
	require.NoError(t, os.Link(filepath.Join(dir, "staged"), filepath.Join(dir, "staged-link")))
	j, err := newJailFS(dir)
	require.NoError(t, err)
	defer j.close()
	j.budget, err = newDiskBudget(dir, 1)
	require.NoError(t, err)
	staged := entryCost("staged") + entryCost("staged-link")
	require.Equal(t, 512<<10+staged, j.budget.Used(), "files present at start count, each inode once, and each entry")

	f, errno := j.OpenFile("f", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	require.Zero(t, errno)
	n, errno := f.Write(make([]byte, 400<<10))
	require.Zero(t, errno)
	require.Equal(t, 400<<10, n)
	n, errno = f.Write(make([]byte, 400<<10))
	require.Zero(t, errno, "a write that does not fit is short")
	entries := staged + entryCost("f")
	require.Equal(t, 112<<10-int(entries), n)
	require.False(t, j.budget.full.Load())
	n, errno = f.Write([]byte("x"))
	require.Equal(t, experimentalsys.EIO, errno)
	require.Zero(t, n)
	require.True(t, j.budget.full.Load(), "a refusal marks the budget full")
	require.Equal(t, int64(1<<20), j.budget.Used())

	// Removing one link of a file with two frees only its entry; the last
	// frees the data too.
	require.Zero(t, j.Unlink("staged-link"))
	require.Equal(t, int64(1<<20)-entryCost("staged-link"), j.budget.Used())
	require.Zero(t, j.Unlink("staged"))
	require.Equal(t, int64(512<<10)-staged, j.budget.Used(), "f's data and entry")
	require.Zero(t, f.Close())
	st, errno := j.Stat("f")
	require.Zero(t, errno)
	require.Equal(t, int64(512<<10)-entries, st.Size)
}

// entryHelpers make directory entries until the budget refuses one: make
// returns how many it made (at most cap) and whether it stopped on ENOSPC
// (None when it reached cap).
const entryHelpers = `import errno, os
LONG = "x" * 236
def make(kind, prefix, cap=5000):
    n = 0
    try:
        while n < cap:
            name = prefix + "%04d" % n
            if kind == "dir":
                os.mkdir(name)
            elif kind == "file":
                open(name, "x").close()
            else:
                os.link(kind, name)
            n += 1
    except OSError as e:
        return n, e.errno == errno.ENOSPC
    return n, None
def clear(prefix):
    for name in os.listdir("."):
        if name.startswith(prefix):
            (os.rmdir if os.path.isdir(name) else os.remove)(name)
`

// TestStrictDiskLimitEntries: every directory entry the guest makes costs
// entryCost against code_execution.disk_limit_mb, so a script cannot fill
// the host's disk with directories or empty files (a red team made ~180k
// directories with 240-char names, 410 MB on disk, under a 5 MiB limit).
// Under 5 MiB, mkdir, creating empty files and hard links stop with ENOSPC
// after at most ~1300 entries; removing them gives the room back.
func TestStrictDiskLimitEntries(t *testing.T) {
	// About 25,000 file-system calls: about 9 s on a quiet machine, over
	// 30 s on a loaded one, so the timeout is long (it is not what is
	// tested). Under wine each call costs tens of times what it does
	// natively (over 3 minutes on a loaded machine), so there the entries
	// are made and removed again once rather than three times (a leak of
	// a quarter of them still shows, as the round after the dirs, files
	// and links).
	rounds, timeout := 3, 5*time.Minute
	if testenv.UnderWine() {
		rounds = 1
	}
	res := run(t, entryHelpers+`
n, nospc = make("dir", LONG)
print("dirs", nospc, 1000 < n <= 1300)
clear(LONG)
n2, nospc = make("file", LONG)
print("files", nospc, n2 == n)
clear(LONG)
open("t", "w").close()
n3, nospc = make("t", LONG)
print("links", nospc, 1000 < n3 <= 1300)
os.rename(LONG + "0000", LONG + "zzzz")             # no new entry: fits when full
clear(LONG)
for _ in range(`+fmt.Sprint(rounds)+`):  # removal frees the entries
    print("again", make("dir", "d", 1000)); clear("d")
    print("again", make("file", "f", 1000)); clear("f")
make("dir", "d")
os.mkdir("one-too-many")
`, func(r *engine.Request) {
		r.DiskLimitMB = 5
		r.Timeout = timeout
	})
	require.Equal(t, config.StatusError, res.Status, res.Output)
	require.Contains(t, res.Output, "dirs True True\nfiles True True\nlinks True True\n"+
		strings.Repeat("again (1000, None)\n", 2*rounds))
	require.Contains(t, res.Output, "No space left on device")
	require.Contains(t, res.Hint, "code_execution.disk_limit_mb")
}

// TestStrictDiskLimitEntriesKernel: a kernel's entries count across its
// cells, what it leaves on the host stays within the limit, and its staging
// dir is removed promptly when it closes after hitting the limit.
func TestStrictDiskLimitEntriesKernel(t *testing.T) {
	e := testEngine(t)
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv, DiskLimitMB: 5}, false)
	require.Equal(t, "700 None\n", okCell(t, k, entryHelpers+`n, why = make("dir", LONG, 700); print(n, why)`))
	out := okCell(t, k, `n, why = make("dir", "d"); print(why, n <= 600)`)
	require.Equal(t, "True True\n", out)
	entries := 0
	require.NoError(t, filepath.WalkDir(k.staging, func(_ string, _ fs.DirEntry, err error) error {
		entries++
		return err
	}))
	require.LessOrEqual(t, entries, 1300)

	start := time.Now()
	require.NoError(t, k.Close())
	requireGone(t, k)
	took := time.Since(start)
	t.Logf("%d entries; close and removal took %v", entries, took)
	// Prompt, with a margin for a loaded machine (5.8 s seen there).
	require.Less(t, took, 30*time.Second, "closing and removing the staging dir")
}

// TestJailFSEntryBudget checks entry accounting at the file-system level:
// staged entries count, mkdir, O_CREAT, link and rename charge their name,
// a refusal is EIO with the budget marked full, and removal gives back.
func TestJailFSEntryBudget(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "a"), []byte("abc"), 0o600))
	j, err := newJailFS(dir)
	require.NoError(t, err)
	defer j.close()
	j.budget, err = newDiskBudget(dir, 1)
	require.NoError(t, err)
	want := entryCost("sub") + entryCost("a") + 3
	require.Equal(t, want, j.budget.Used(), "staged entries count")

	require.Zero(t, j.Mkdir("d", 0o700))
	want += entryCost("d")
	require.Equal(t, want, j.budget.Used())
	require.Equal(t, experimentalsys.EEXIST, j.Mkdir("d", 0o700))
	require.Equal(t, want, j.budget.Used(), "a failed mkdir gives back")

	f, errno := j.OpenFile("d/new", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	require.Zero(t, errno)
	require.Zero(t, f.Close())
	want += entryCost("new")
	require.Equal(t, want, j.budget.Used())
	f, errno = j.OpenFile("d/new", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	require.Zero(t, errno)
	require.Zero(t, f.Close())
	require.Equal(t, want, j.budget.Used(), "opening an existing file with O_CREAT makes no entry")
	_, errno = j.OpenFile("missing/new", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	require.Equal(t, experimentalsys.ENOENT, errno)
	require.Equal(t, want, j.budget.Used())

	require.Zero(t, j.Link("sub/a", "hard"))
	want += entryCost("hard")
	require.Equal(t, want, j.budget.Used(), "a hard link is an entry; its data counts once")
	require.Zero(t, j.Rename("hard", "hard-renamed"))
	want += int64(len("hard-renamed") - len("hard"))
	require.Equal(t, want, j.budget.Used())
	require.Zero(t, j.Rename("hard-renamed", "d/new"))
	want -= entryCost("hard-renamed")
	require.Equal(t, want, j.budget.Used(), "renaming over an entry removes one")

	// Fill the budget with entries until one is refused.
	n := 0
	for ; ; n++ {
		errno := j.Mkdir(fmt.Sprintf("fill%04d", n), 0o700)
		if errno != 0 {
			require.Equal(t, experimentalsys.EIO, errno)
			break
		}
	}
	require.True(t, j.budget.full.Load(), "a refusal marks the budget full")
	require.LessOrEqual(t, j.budget.Used(), int64(1<<20))
	require.Greater(t, n, 200)
	j.budget.full.Store(false)
	_, errno = j.OpenFile("d/other", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	require.Equal(t, experimentalsys.EIO, errno)
	require.Equal(t, experimentalsys.EIO, j.Link("sub/a", "hard2"))
	// Take the last bytes with data, so that even a longer name does not fit.
	f, errno = j.OpenFile("sub/a", experimentalsys.O_RDWR|experimentalsys.O_APPEND, 0)
	require.Zero(t, errno)
	room := int(j.budget.limit - j.budget.Used())
	require.Less(t, room, int(entryCost("fill0000")))
	written, errno := f.Write(make([]byte, room))
	require.Zero(t, errno)
	require.Equal(t, room, written)
	require.Zero(t, f.Close())
	require.Equal(t, experimentalsys.EIO, j.Rename("fill0000", "fill00000"))
	require.Zero(t, j.Rename("fill0000", "fill-000"), "a rename that needs no room works when full")
	require.Zero(t, j.Rename("fill-000", "fill0000"))
	for i := range n {
		require.Zero(t, j.Rmdir(fmt.Sprintf("fill%04d", i)))
	}
	require.Zero(t, j.Unlink("d/new"))
	require.Zero(t, j.Rmdir("d"))
	require.Equal(t, entryCost("sub")+entryCost("a")+3+int64(room), j.budget.Used(), "removal gives every entry back")
}
