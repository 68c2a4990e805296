package hostfuncs

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/filecache"
)

// testClock is a settable clock for the web cache.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var savedPathRe = regexp.MustCompile(`Full text saved to (.+?) — page it with read_file`)

// savedPath is the path a cut page's content names.
func savedPath(t *testing.T, res map[string]any) string {
	t.Helper()
	require.Nil(t, res["error"], res["url"])
	m := savedPathRe.FindStringSubmatch(res["content"].(string))
	require.NotNil(t, m, "no saved path in %q", res["content"])
	return m[1]
}

// cacheUsage is the sum of the charges of the saved pages in dir.
func cacheUsage(t *testing.T, dir string) (total int64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "web-*.md"))
	require.NoError(t, err)
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		total += filecache.Cost(fi.Size())
	}
	return total
}

// web_extract's cache: the cap holds against many distinct pages (URLs
// that differ only in their query), least recently used (read_file counts)
// goes first, a page over the entry cap is returned but not saved, and an
// expired or damaged page is not served.
func TestWebExtractCacheBounded(t *testing.T) {
	const pageSize = 300_000 // a cost of about 0.29 MiB: three fit in 1 MiB
	mux := http.NewServeMux()
	mux.HandleFunc("/p", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		q := r.URL.Query().Get("i")
		fmt.Fprint(w, strings.Repeat("page "+q+" line\n", pageSize/len("page "+q+" line\n")))
	})
	mux.HandleFunc("/huge", serveAs("text/plain", strings.Repeat("x", 1<<20+1)+"\n"))
	srv, _ := countingServer(t, mux)
	dir := filepath.Join(t.TempDir(), "cache", "web")
	clk := &testClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	w := localWeb
	w.CacheDir, w.CacheMaxMB, w.CacheEntryMaxMB, w.CacheTTL, w.cacheNow = dir, 1, 1, time.Hour, clk.now
	tl := newExtractTools(t, w)
	extract := func(urls ...string) []map[string]any {
		t.Helper()
		clk.advance(time.Second)
		return extractResults(t, context.Background(), tl, map[string]any{"urls": urls, "char_limit": 200})
	}
	read := func(path string) map[string]any {
		t.Helper()
		clk.advance(time.Second)
		return callJSON(t, tl, "read_file", map[string]any{"path": path, "limit": 1})
	}

	// Twenty distinct pages, five at a time: never more than the cap.
	var paths []string
	for call := range 4 {
		var urls []string
		for i := range 5 {
			urls = append(urls, fmt.Sprintf("%s/p?i=%d", srv.URL, call*5+i))
		}
		for _, r := range extract(urls...) {
			paths = append(paths, savedPath(t, r))
		}
		require.LessOrEqual(t, cacheUsage(t, dir), int64(1<<20), "after call %d", call+1)
	}
	files, err := filepath.Glob(filepath.Join(dir, "web-*.md"))
	require.NoError(t, err)
	assert.Len(t, files, 3)
	evicted := read(paths[0])
	assert.Contains(t, evicted["error"], "is no longer in web_extract's cache: it was removed to keep the cache under web.extract.cache_max_mb")

	// Least recently used first, and a read is a use.
	a := savedPath(t, extract(srv.URL + "/p?i=a")[0])
	b := savedPath(t, extract(srv.URL + "/p?i=b")[0])
	c := savedPath(t, extract(srv.URL + "/p?i=c")[0])
	require.Contains(t, read(a)["content"], "page a line")
	d := savedPath(t, extract(srv.URL + "/p?i=d")[0])
	for _, p := range []string{a, c, d} {
		assert.FileExists(t, p)
	}
	assert.NoFileExists(t, b, "b, the least recently used, went")

	// Over the entry cap: the cut content comes back, nothing is saved.
	huge := extract(srv.URL + "/huge")[0]
	require.Nil(t, huge["error"])
	assert.True(t, strings.HasSuffix(huge["content"].(string), "\n\n[Cut to char_limit=200 of 1048578 characters. The full text (1.0 MB) was not saved: "+
		"it is over the largest page web_extract's cache keeps (1020.0 KB; web.extract.cache_entry_max_mb, within cache_max_mb).]"), huge["content"])
	assert.True(t, strings.HasPrefix(huge["content"].(string), "xxxx"))
	for _, p := range []string{a, c, d} {
		assert.FileExists(t, p, "a page that is not saved evicts nothing")
	}

	// Damaged (a crash, or a change behind the cache's back): not served.
	require.NoError(t, os.Truncate(c, 100))
	assert.Contains(t, read(c)["error"], "was damaged (truncated or changed since web_extract saved it) and has been removed")
	assert.NoFileExists(t, c)

	// Expired: not served, and removed.
	clk.advance(time.Hour)
	res := read(d)
	assert.Equal(t, fmt.Sprintf("The saved page '%s' expired: web_extract keeps a full text for web.extract.cache_ttl_minutes after the fetch, and this one has been removed. Call web_extract again for its full text.", d), res["error"])
	assert.NoFileExists(t, d)
	again := savedPath(t, extract(srv.URL + "/p?i=d")[0])
	assert.Equal(t, d, again, "the same URL and text, the same file")
	assert.Contains(t, read(again)["content"], "page d line")
}

func TestWebExtractCacheDisabled(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/long.txt", serveAs("text/plain", strings.Repeat("long line\n", 200)))
	srv, _ := countingServer(t, mux)
	dir := filepath.Join(t.TempDir(), "cache", "web")
	w := localWeb
	w.CacheDir, w.NoCache = dir, true
	res := extractResults(t, context.Background(), newExtractTools(t, w), map[string]any{"urls": []string{srv.URL + "/long.txt"}, "char_limit": 100})
	assert.Nil(t, res[0]["error"])
	assert.Regexp(t, `\[Cut to char_limit=100 of 2000 characters\. The full text was not saved: web\.extract\.cache_max_mb is 0\.\]$`, res[0]["content"])
	assert.NoDirExists(t, dir)
}

// A file of the cache dir that the cache does not list is refused by
// read_file; one outside it, named alike, is read as any file.
func TestReadFileWebCacheOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "web")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	planted := filepath.Join(dir, "web-000000000000.md")
	require.NoError(t, os.WriteFile(planted, []byte("planted\n"), 0o600))
	w := localWeb
	w.CacheDir = dir
	tl := newExtractTools(t, w)
	assert.Contains(t, callJSON(t, tl, "read_file", map[string]any{"path": planted})["error"], "is no longer in web_extract's cache")

	elsewhere := filepath.Join(tl.Workdir(), "web-000000000000.md")
	require.NoError(t, os.WriteFile(elsewhere, []byte("mine\n"), 0o600))
	assert.Contains(t, callJSON(t, tl, "read_file", map[string]any{"path": elsewhere})["content"], "mine")
	other := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(other, []byte("notes\n"), 0o600))
	assert.Contains(t, callJSON(t, tl, "read_file", map[string]any{"path": other})["content"], "notes")
}
