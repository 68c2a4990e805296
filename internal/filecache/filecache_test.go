package filecache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a settable time for a cache's now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newCache is a web-style cache (web-*.md) in a fresh dir, on a clock that
// starts at a fixed time.
func newCache(t *testing.T, lim Limits) (*Cache, *clock) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	lim.Now = clk.Now
	c, err := New(filepath.Join(t.TempDir(), "web"), "web-", ".md", lim)
	require.NoError(t, err)
	return c, clk
}

// usage is the sum of the charges of the entry files in c's dir, as they
// are on disk, and how many there are.
func usage(t *testing.T, c *Cache) (total int64, n int) {
	t.Helper()
	des, err := os.ReadDir(c.dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0
	}
	require.NoError(t, err)
	for _, de := range des {
		if !c.Owns(de.Name()) && !c.isTemp(de.Name()) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		total += Cost(info.Size())
		n++
	}
	return total, n
}

func page(i, size int) []byte {
	b := bytes.Repeat([]byte{'a' + byte(i%26)}, size)
	copy(b, fmt.Sprintf("page %d\n", i))
	return b
}

func name(i int) string { return fmt.Sprintf("web-%012x.md", i) }

func TestCost(t *testing.T) {
	for size, want := range map[int64]int64{0: 4096, 1: 8192, 4096: 8192, 4097: 12288} {
		assert.Equal(t, want, Cost(size), size)
	}
}

func TestPutStaysUnderCap(t *testing.T) {
	limit := 10 * Cost(10_000)
	c, clk := newCache(t, Limits{MaxBytes: limit, MaxEntryBytes: 20_000, TTL: time.Hour})
	rng := rand.New(rand.NewPCG(1, 2))
	var paths []string
	for i := range 200 {
		clk.Advance(time.Second)
		data := page(i, 1+rng.IntN(20_000))
		path, err := c.Put(context.Background(), name(i), data)
		require.NoError(t, err, i)
		paths = append(paths, path)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, data, got, "the entry just stored is whole")
		total, _ := usage(t, c)
		require.LessOrEqual(t, total, limit, "after %d puts", i+1)
	}
	_, n := usage(t, c)
	assert.GreaterOrEqual(t, n, 5, "the cap is used, not emptied")
	// The newest entries are the ones kept.
	_, err := os.Stat(paths[len(paths)-1])
	require.NoError(t, err)
	_, err = os.Stat(paths[0])
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestPutEvictsLeastRecentlyUsed(t *testing.T) {
	c, clk := newCache(t, Limits{MaxBytes: 3 * Cost(5000)})
	ctx := context.Background()
	for i := range 3 { // a, b, c, stored in that order
		clk.Advance(time.Minute)
		_, err := c.Put(ctx, name(i), page(i, 5000))
		require.NoError(t, err)
	}
	clk.Advance(time.Minute)
	require.NoError(t, c.Use(ctx, name(0)), "a is read: now the most recently used")

	clk.Advance(time.Minute)
	_, err := c.Put(ctx, name(3), page(3, 5000))
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(c.dir, name(0)))
	assert.NoFileExists(t, filepath.Join(c.dir, name(1)), "b, the least recently used, went")
	assert.FileExists(t, filepath.Join(c.dir, name(2)))
	require.ErrorIs(t, c.Use(ctx, name(1)), ErrNotEntry)

	// Storing c again (the same bytes) is a use too: a goes next.
	clk.Advance(time.Minute)
	_, err = c.Put(ctx, name(2), page(2, 5000))
	require.NoError(t, err)
	clk.Advance(time.Minute)
	_, err = c.Put(ctx, name(4), page(4, 5000))
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(c.dir, name(0)))
	assert.FileExists(t, filepath.Join(c.dir, name(2)))
	assert.FileExists(t, filepath.Join(c.dir, name(3)))
	assert.FileExists(t, filepath.Join(c.dir, name(4)))
}

// TestPutSameBytesHonoursALoweredCap: storing an entry again with the
// same bytes trims a cache left over a cap lowered since (a new process
// with a smaller cache_max_mb), as storing new bytes does.
func TestPutSameBytesHonoursALoweredCap(t *testing.T) {
	c, clk := newCache(t, Limits{MaxBytes: 3 * Cost(5000)})
	ctx := context.Background()
	for i := range 3 {
		clk.Advance(time.Minute)
		_, err := c.Put(ctx, name(i), page(i, 5000))
		require.NoError(t, err)
	}
	small, err := New(c.dir, "web-", ".md", Limits{MaxBytes: Cost(5000), Now: clk.Now})
	require.NoError(t, err)
	clk.Advance(time.Minute)
	_, err = small.Put(ctx, name(1), page(1, 5000))
	require.NoError(t, err)
	total, n := usage(t, small)
	require.Equal(t, 1, n)
	require.LessOrEqual(t, total, Cost(5000))
	assert.FileExists(t, filepath.Join(c.dir, name(1)), "the entry stored again is the one kept")
}

func TestExpiry(t *testing.T) {
	c, clk := newCache(t, Limits{MaxBytes: 1 << 20, TTL: time.Hour})
	ctx := context.Background()
	old, err := c.Put(ctx, name(1), page(1, 100))
	require.NoError(t, err)
	clk.Advance(30 * time.Minute)
	kept, err := c.Put(ctx, name(2), page(2, 100))
	require.NoError(t, err)
	clk.Advance(20 * time.Minute)
	require.NoError(t, c.Use(ctx, name(1)), "50 minutes old: served")

	clk.Advance(20 * time.Minute) // 70 and 40 minutes
	require.ErrorIs(t, c.Use(ctx, name(1)), ErrExpired, "a use does not renew an entry: it expires an hour after it was stored")
	assert.NoFileExists(t, old, "an expired entry is removed when it is asked for")
	require.NoError(t, c.Use(ctx, name(2)))

	// A Put removes every expired entry, asked for or not; storing the
	// same bytes again renews one.
	clk.Advance(10 * time.Minute) // 50 minutes
	_, err = c.Put(ctx, name(2), page(2, 100))
	require.NoError(t, err)
	_, err = c.Put(ctx, name(3), page(3, 100))
	require.NoError(t, err)
	clk.Advance(59 * time.Minute)
	_, err = c.Put(ctx, name(4), page(4, 100))
	require.NoError(t, err)
	assert.FileExists(t, kept, "stored again 59 minutes ago")
	clk.Advance(2 * time.Minute)
	_, err = c.Put(ctx, name(5), page(5, 100))
	require.NoError(t, err)
	assert.NoFileExists(t, kept)
	assert.NoFileExists(t, filepath.Join(c.dir, name(3)))
	assert.FileExists(t, filepath.Join(c.dir, name(4)))
}

func TestEntryLimit(t *testing.T) {
	c, _ := newCache(t, Limits{MaxBytes: 1 << 20, MaxEntryBytes: 1000})
	ctx := context.Background()
	_, err := c.Put(ctx, name(1), page(1, 1001))
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, TooLargeError{Size: 1001, Max: 1000}, *tl)
	assert.NoDirExists(t, c.dir, "nothing is written for an entry over the limit")
	_, err = c.Put(ctx, name(2), page(2, 1000))
	require.NoError(t, err)

	// Without MaxEntryBytes, or above what MaxBytes allows: what fits the cap.
	c, _ = newCache(t, Limits{MaxBytes: Cost(8192), MaxEntryBytes: 1 << 20})
	_, err = c.Put(ctx, name(1), page(1, 8193))
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, int64(8192), tl.Max)
	_, err = c.Put(ctx, name(1), page(1, 8192))
	require.NoError(t, err)
}

func TestDisabled(t *testing.T) {
	c, _ := newCache(t, Limits{})
	_, err := c.Put(context.Background(), name(1), page(1, 10))
	require.ErrorIs(t, err, ErrDisabled)
	assert.NoDirExists(t, c.dir)
}

func TestNames(t *testing.T) {
	c, _ := newCache(t, Limits{MaxBytes: 1 << 20})
	for _, n := range []string{"web-.md", "x.md", "web-1.txt", "../web-1.md", "web-a/b.md", `web-a\b.md`, ".web-1.md"} {
		_, err := c.Put(context.Background(), n, []byte("x"))
		assert.Error(t, err, n)
		assert.ErrorIs(t, c.Use(context.Background(), n), ErrNotEntry, n)
	}
	_, err := New(t.TempDir(), "", ".md", Limits{})
	assert.Error(t, err)
}

// A crash's leftovers and damaged files are never served, and the next Put
// clears them away.
func TestDamageIsNotServed(t *testing.T) {
	c, _ := newCache(t, Limits{MaxBytes: 1 << 20})
	ctx := context.Background()
	data := page(1, 10_000)
	path, err := c.Put(ctx, name(1), data)
	require.NoError(t, err)

	// Truncated (a crash before the data reached the disk).
	require.NoError(t, os.Truncate(path, 4096))
	require.ErrorIs(t, c.Use(ctx, name(1)), ErrDamaged)
	assert.NoFileExists(t, path)
	require.ErrorIs(t, c.Use(ctx, name(1)), ErrNotEntry)
	path, err = c.Put(ctx, name(1), data)
	require.NoError(t, err)
	require.NoError(t, c.Use(ctx, name(1)))

	// The same size, other bytes.
	damaged := bytes.Clone(data)
	damaged[5000] ^= 1
	require.NoError(t, os.WriteFile(path, damaged, 0o600))
	require.ErrorIs(t, c.Use(ctx, name(1)), ErrDamaged)

	// Storing the entry over a damaged file rewrites it.
	require.NoError(t, os.WriteFile(path, damaged, 0o600))
	_, err = c.Put(ctx, name(1), data)
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, got)

	// Untracked files (a crash between the rename and the index, or a
	// version before the index), a temporary file, and a damaged index.
	untracked := filepath.Join(c.dir, name(7))
	require.NoError(t, os.WriteFile(untracked, []byte("old"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, ".web-123.tmp"), []byte("half"), 0o600))
	foreign := filepath.Join(c.dir, "notes.txt")
	require.NoError(t, os.WriteFile(foreign, []byte("not the cache's"), 0o600))
	require.ErrorIs(t, c.Use(ctx, name(7)), ErrNotEntry)
	_, err = c.Put(ctx, name(2), page(2, 10))
	require.NoError(t, err)
	assert.NoFileExists(t, untracked)
	assert.NoFileExists(t, filepath.Join(c.dir, ".web-123.tmp"))
	assert.FileExists(t, foreign, "a file the cache does not own stays")
	assert.FileExists(t, path)

	require.NoError(t, os.WriteFile(filepath.Join(c.dir, indexName), []byte(`{"version":1,"entries":{"web-`), 0o600))
	require.ErrorIs(t, c.Use(ctx, name(1)), ErrNotEntry, "an unreadable index lists nothing")
	_, err = c.Put(ctx, name(3), page(3, 10))
	require.NoError(t, err)
	assert.NoFileExists(t, path, "what the index does not list goes")
	require.NoError(t, c.Use(ctx, name(3)))
}

// Writers in goroutines, each with its own Cache on one dir, and readers
// beside them: every Put succeeds and the cap holds at the end; run with
// -race.
func TestConcurrentWriters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "web")
	limit := 8 * Cost(8000)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 6 {
		c, err := New(dir, "web-", ".md", Limits{MaxBytes: limit, TTL: time.Hour})
		require.NoError(t, err)
		wg.Go(func() {
			for i := range 25 {
				n := w*1000 + i
				if _, err := c.Put(context.Background(), name(n), page(n, 1000+n%7000)); err != nil {
					errs <- err
					return
				}
				// A reader: an entry may be gone already, never damaged.
				if err := c.Use(context.Background(), name(n-1)); err != nil && !errors.Is(err, ErrNotEntry) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c, err := New(dir, "web-", ".md", Limits{MaxBytes: limit})
	require.NoError(t, err)
	total, n := usage(t, c)
	assert.LessOrEqual(t, total, limit)
	assert.Positive(t, n)
	checkIndex(t, c)
}

// checkIndex checks that the index lists exactly the entry files, whole.
func checkIndex(t *testing.T, c *Cache) {
	t.Helper()
	idx := c.loadIndex()
	des, err := os.ReadDir(c.dir)
	require.NoError(t, err)
	files := 0
	for _, de := range des {
		if !c.Owns(de.Name()) {
			continue
		}
		files++
		r, ok := idx[de.Name()]
		require.True(t, ok, "%s is listed", de.Name())
		ok, err := matches(filepath.Join(c.dir, de.Name()), r)
		require.NoError(t, err)
		require.True(t, ok, "%s is whole", de.Name())
	}
	assert.Equal(t, len(idx), files, "no record without its file")
}

// helperDirEnv makes TestHelperWriter a writer process on that dir.
const helperDirEnv = "FILECACHE_HELPER_DIR"

const helperPuts = 40

// helperLimit is the writers' cap: room for about six of their entries.
var helperLimit = 6 * Cost(6000)

// TestHelperWriter is a writer process of TestProcessesShareOneDir: it
// stores helperPuts entries, and after each, under the dir's lock, checks
// that the entries on disk fit the cap.
func TestHelperWriter(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("a helper process of TestProcessesShareOneDir")
	}
	id, _ := strconv.Atoi(os.Getenv("FILECACHE_HELPER_ID"))
	c, err := New(dir, "web-", ".md", Limits{MaxBytes: helperLimit, TTL: time.Hour})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range helperPuts {
		n := id*1000 + i
		_, err := c.Put(ctx, name(n), page(n, 500+(n*997)%6000))
		require.NoError(t, err)
		unlock, err := c.lock(ctx)
		require.NoError(t, err)
		total, _ := usage(t, c)
		unlock()
		require.LessOrEqual(t, total, helperLimit, "process %d, put %d", id, i)
	}
}

// Processes writing one dir at once (serve replicas, concurrent runs): the
// file lock keeps the cap between them, and the index matches the files.
func TestProcessesShareOneDir(t *testing.T) {
	if os.Getenv(helperDirEnv) != "" {
		t.Skip("in a helper process")
	}
	dir := filepath.Join(t.TempDir(), "web")
	var cmds []*exec.Cmd
	for id := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, "FILECACHE_HELPER_ID="+strconv.Itoa(id+1))
		cmds = append(cmds, cmd)
	}
	outs := make([][]byte, len(cmds))
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Go(func() { outs[i], errs[i] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for i := range cmds {
		require.NoError(t, errs[i], "writer %d:\n%s", i+1, outs[i])
	}
	c, err := New(dir, "web-", ".md", Limits{MaxBytes: helperLimit})
	require.NoError(t, err)
	total, n := usage(t, c)
	assert.LessOrEqual(t, total, helperLimit)
	assert.Positive(t, n)
	checkIndex(t, c)
}
