package hostfuncs

import (
	"context"
	"net/http"
	"net/netip"
	"time"
)

// WebOptions configures web_search and web_extract (the web section of
// config.yaml).
type WebOptions struct {
	// Provider is web_search's back-end: config.ProviderSearXNG, config.ProviderBrave,
	// config.ProviderTavily, or "" for none (web_search then says how to set one).
	Provider string
	// URL is the provider's base URL: required for searxng (for example
	// http://127.0.0.1:8888), an optional override of the public API
	// endpoint for brave and tavily.
	URL string
	// APIKey is a keyed provider's key. The host reads it from the variable
	// named APIKeyEnv; scripts never see it.
	APIKey string
	// APIKeyEnv names the host variable holding APIKey, for error messages.
	APIKeyEnv string
	// CharLimit is web_extract's default char_limit; 0 means
	// config.DefaultExtractCharLimit.
	CharLimit int
	// AllowPrivateNetworks lets web_extract fetch URLs that resolve to
	// loopback, private, link-local and other internal addresses.
	AllowPrivateNetworks bool
	// CacheDir is where web_extract saves the full text of pages longer
	// than char_limit ($HERMES_HOME/cache/web), a cache bounded by the
	// next three fields (see internal/filecache) that several processes
	// may share. Empty means hermes-web-cache in the system temp dir.
	CacheDir string
	// CacheMaxMB caps what CacheDir holds, in MiB; 0 means
	// config.DefaultExtractCacheMaxMB. NoCache saves nothing.
	CacheMaxMB int
	// CacheEntryMaxMB is the largest full text saved, in MiB; 0 means
	// config.DefaultExtractCacheEntryMaxMB.
	CacheEntryMaxMB int
	// CacheTTL is how long a saved full text is served after it was
	// fetched; 0 means config.DefaultExtractCacheTTLMinutes.
	CacheTTL time.Duration
	// NoCache disables the cache (web.extract.cache_max_mb: 0): a cut
	// page's full text is not saved.
	NoCache bool

	// Test seams (nil in production).

	// searchClient replaces the HTTP client of web_search.
	searchClient *http.Client
	// lookupIP replaces DNS resolution for web_extract.
	lookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// treatAsPublic marks addresses the SSRF guard lets through although
	// they are internal (tests use 127.0.0.2 as a "public" host).
	treatAsPublic func(netip.Addr) bool
	// cacheNow replaces the web cache's clock.
	cacheNow func() time.Time
}
