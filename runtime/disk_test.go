package runtime

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
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

func withDisk(mb int) func(*shared.Request) {
	return func(r *shared.Request) { r.DiskLimitMB = mb }
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
	require.Equal(t, shared.StatusError, res.Status, res.Output)
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
	require.Equal(t, shared.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "after remove True\nused 4\nwhile open True\ntruncate up True\nsparse True\nsize 4\n", res.Output)
}

// TestStrictDiskLimitKernel: a kernel's budget spans its cells, and what
// its dir holds on the host stays within it.
func TestStrictDiskLimitKernel(t *testing.T) {
	e := testEngine(t)
	k := startKernel(t, e, shared.KernelSpec{Env: kernelEnv, DiskLimitMB: 5}, false)
	okCell(t, k, diskHelpers+`fill("a", 3)`)
	res, err := cell(t, k, `fill("b", 3)`, nil)
	require.NoError(t, err)
	require.Equal(t, shared.StatusError, res.Status, res.Output)
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
	require.Equal(t, int64(512<<10), j.budget.Used(), "files present at start count, each inode once")

	f, errno := j.OpenFile("f", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	require.Zero(t, errno)
	n, errno := f.Write(make([]byte, 400<<10))
	require.Zero(t, errno)
	require.Equal(t, 400<<10, n)
	n, errno = f.Write(make([]byte, 400<<10))
	require.Zero(t, errno, "a write that does not fit is short")
	require.Equal(t, 112<<10, n)
	require.False(t, j.budget.full.Load())
	n, errno = f.Write([]byte("x"))
	require.Equal(t, experimentalsys.EIO, errno)
	require.Zero(t, n)
	require.True(t, j.budget.full.Load(), "a refusal marks the budget full")
	require.Equal(t, int64(1<<20), j.budget.Used())

	// Removing one link of a file with two frees nothing; the last frees it.
	require.Zero(t, j.Unlink("staged-link"))
	require.Equal(t, int64(1<<20), j.budget.Used())
	require.Zero(t, j.Unlink("staged"))
	require.Equal(t, int64(512<<10), j.budget.Used())
	require.Zero(t, f.Close())
	st, errno := j.Stat("f")
	require.Zero(t, errno)
	require.Equal(t, int64(512<<10), st.Size)
}
