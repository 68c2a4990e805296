package hostfuncs

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/filecache"
)

// web_extract's cache of full texts holds files named
// web-<first 12 hex digits of sha256(url + "\n" + content)>.md.
const (
	webCachePrefix = "web-"
	webCacheSuffix = ".md"
)

// newWebCache returns web_extract's cache of full texts for w: in
// w.CacheDir (default hermes-web-cache in the system temp dir), bounded
// by w's cache limits or their defaults.
func newWebCache(w WebOptions) (*filecache.Cache, error) {
	dir := cmp.Or(w.CacheDir, filepath.Join(os.TempDir(), "hermes-web-cache"))
	maxMB := cmp.Or(w.CacheMaxMB, config.DefaultExtractCacheMaxMB)
	if w.NoCache {
		maxMB = 0
	}
	return filecache.New(dir, webCachePrefix, webCacheSuffix, filecache.Limits{
		MaxBytes:      int64(maxMB) << 20,
		MaxEntryBytes: int64(cmp.Or(w.CacheEntryMaxMB, config.DefaultExtractCacheEntryMaxMB)) << 20,
		TTL:           cmp.Or(w.CacheTTL, config.DefaultExtractCacheTTLMinutes*time.Minute),
		Now:           w.cacheNow,
	})
}

// saveFull saves a cut page's full text in the web cache and returns the
// saved file's absolute path. The same URL and text give the same file.
func (t *Tools) saveFull(ctx context.Context, rawURL, content string) (string, error) {
	c, err := t.webCache()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(rawURL + "\n" + content))
	return c.Put(ctx, webCachePrefix+hex.EncodeToString(sum[:])[:12]+webCacheSuffix, []byte(content))
}

// savedNote is the last line of a cut page's content when its full text
// was not saved (err from saveFull).
func savedNote(limit, total int, size int, err error) string {
	var tl *filecache.TooLargeError
	switch {
	case errors.Is(err, filecache.ErrDisabled):
		return fmt.Sprintf("[Cut to char_limit=%d of %d characters. The full text was not saved: web.extract.cache_max_mb is 0.]", limit, total)
	case errors.As(err, &tl):
		return fmt.Sprintf("[Cut to char_limit=%d of %d characters. The full text (%s) was not saved: it is over the largest page web_extract's cache keeps (%s; web.extract.cache_entry_max_mb, within cache_max_mb).]",
			limit, total, formatSize(int64(size)), formatSize(tl.Max))
	}
	return fmt.Sprintf("[Cut to char_limit=%d of %d characters. The full text could not be saved: %v]", limit, total, err)
}

// checkWebCacheRead returns why read_file refuses abs (the path given,
// made absolute), or "". Only a file of web_extract's cache is checked: it
// is served while it is listed, whole and not expired, and each read
// counts as a use for the cache's least-recently-used order (see
// filecache.Cache.Use).
func (t *Tools) checkWebCacheRead(ctx context.Context, given, abs string) string {
	if t.remote() {
		return "" // the cache is on this host, the path on the target
	}
	c, err := t.webCache()
	if err != nil {
		return ""
	}
	// A link into the cache reads an entry too.
	var name string
	real := t.realOrSelf(abs)
	switch key := t.px.key; {
	case key(filepath.Dir(real)) == key(t.realOrSelf(c.Dir())):
		name = filepath.Base(real)
	case key(filepath.Dir(abs)) == key(c.Dir()):
		name = filepath.Base(abs)
	default:
		return ""
	}
	if !c.Owns(name) {
		return ""
	}
	switch err := c.Use(ctx, name); {
	case err == nil:
		return ""
	case errors.Is(err, filecache.ErrExpired):
		return fmt.Sprintf("The saved page '%s' expired: web_extract keeps a full text for web.extract.cache_ttl_minutes after the fetch, and this one has been removed. Call web_extract again for its full text.", given)
	case errors.Is(err, filecache.ErrDamaged):
		return fmt.Sprintf("The saved page '%s' was damaged (truncated or changed since web_extract saved it) and has been removed. Call web_extract again for its full text.", given)
	case errors.Is(err, filecache.ErrNotEntry):
		return fmt.Sprintf("The saved page '%s' is no longer in web_extract's cache: it was removed to keep the cache under web.extract.cache_max_mb, or never saved whole. Call web_extract again for its full text.", given)
	default:
		return fmt.Sprintf("Cannot read '%s': %v", given, err)
	}
}
