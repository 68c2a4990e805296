package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWebSearch(t *testing.T) {
	tl, _ := newTestTools(t)
	tests := []struct {
		name string
		args any
		want map[string]any
	}{
		{"unconfigured", map[string]any{"query": "golang wasm", "limit": 3},
			map[string]any{"success": false, "error": errNoSearchProvider}},
		{"null limit", map[string]any{"query": "x", "limit": nil},
			map[string]any{"success": false, "error": errNoSearchProvider}},
		{"limit 0 is clamped, not refused", map[string]any{"query": "x", "limit": 0},
			map[string]any{"success": false, "error": errNoSearchProvider}},
		{"missing query", map[string]any{}, map[string]any{"error": "Invalid arguments for web_search: query is required"}},
		{"blank query", map[string]any{"query": " \t"}, map[string]any{"error": "Invalid arguments for web_search: query is required"}},
		{"negative limit", map[string]any{"query": "x", "limit": -1},
			map[string]any{"error": "Invalid arguments for web_search: limit must be positive, got -1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, callJSON(t, tl, "web_search", tc.args))
		})
	}
	res := callJSON(t, tl, "web_search", map[string]any{"query": 5})
	assert.Contains(t, res["error"], "Invalid arguments for web_search:")
	res = callJSON(t, tl, "web_search", map[string]any{"query": "x", "max_results": 3})
	assert.Contains(t, res["error"], "Invalid arguments for web_search:")
	assert.Contains(t, errNoSearchProvider, "web.search.provider")
}

// Keys of the fake keyed providers; long enough that redaction is exact.
const (
	testBraveKey  = "BSA-test-0123456789abcdefSECRET"
	testTavilyKey = "tvly-dev-0123456789abcdefSECRET"
)

// newSearchTools returns tools configured with w.
func newSearchTools(t *testing.T, w WebOptions) *Tools {
	t.Helper()
	tl, err := New(Options{Workdir: t.TempDir(), Web: w})
	require.NoError(t, err)
	return tl
}

// callSearch runs web_search with args and checks that key (if any)
// appears nowhere in the result.
func callSearch(t *testing.T, tl *Tools, args map[string]any, key string) map[string]any {
	t.Helper()
	res := callJSON(t, tl, "web_search", args)
	if key != "" {
		enc, err := json.Marshal(res)
		require.NoError(t, err)
		require.NotContains(t, string(enc), key)
	}
	return res
}

// searchEntries checks the success shape exactly and returns the entries.
func searchEntries(t *testing.T, res map[string]any) []map[string]any {
	t.Helper()
	require.Equal(t, true, res["success"], "result: %v", res)
	require.Len(t, res, 2, "result: %v", res)
	data, ok := res["data"].(map[string]any)
	require.True(t, ok, "data: %v", res["data"])
	require.Len(t, data, 1)
	list, ok := data["web"].([]any)
	require.True(t, ok, "data.web must be a list, got %T", data["web"])
	out := make([]map[string]any, 0, len(list))
	seen := map[string]bool{}
	for i, e := range list {
		m, ok := e.(map[string]any)
		require.True(t, ok)
		require.Len(t, m, 4, "entry %d: %v", i, m)
		for _, k := range []string{"title", "url", "description"} {
			require.IsType(t, "", m[k], "entry %d key %s", i, k)
		}
		require.Equal(t, float64(i+1), m["position"], "positions are 1-based and consecutive")
		u := m["url"].(string)
		require.NotEmpty(t, u)
		require.False(t, seen[u], "duplicate URL %s", u)
		seen[u] = true
		out = append(out, m)
	}
	return out
}

// searchError checks the failure shape and returns the message.
func searchError(t *testing.T, res map[string]any) string {
	t.Helper()
	require.Equal(t, false, res["success"], "result: %v", res)
	require.Len(t, res, 2, "result: %v", res)
	msg, ok := res["error"].(string)
	require.True(t, ok)
	require.NotEmpty(t, msg)
	return msg
}

// fakeAPI is a provider endpoint recording its requests.
type fakeAPI struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

// newFakeAPI serves handle, recording each request (and its body) first.
func newFakeAPI(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		assert.NoError(t, err)
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Clone(context.Background()))
		f.body = append(f.body, string(body))
		f.mu.Unlock()
		handle(w, r, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.reqs...)
}

// queryParam returns param of every recorded request.
func (f *fakeAPI) queryParam(param string) []string {
	var out []string
	for _, r := range f.requests() {
		out = append(out, r.URL.Query().Get(param))
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeText(w http.ResponseWriter, status int, contentType, body string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// commonRequestChecks asserts what every provider request carries.
func commonRequestChecks(t *testing.T, r *http.Request) {
	assert.True(t, strings.HasPrefix(r.Header.Get("User-Agent"), "hermes-wasm-exec/"), "User-Agent %q", r.Header.Get("User-Agent"))
	assert.Equal(t, "application/json", r.Header.Get("Accept"))
}

// --- SearXNG -----------------------------------------------------------

// searxResult is one result as SearXNG's JSON format gives it.
func searxResult(u, title, content string) map[string]any {
	pu, _ := url.Parse(u)
	parsed := []string{"", "", "", "", "", ""}
	if pu != nil {
		parsed = []string{pu.Scheme, pu.Host, pu.Path, "", pu.RawQuery, ""}
	}
	return map[string]any{
		"url": u, "title": title, "content": content,
		"engine": "duckduckgo", "parsed_url": parsed, "template": "default.html",
		"engines": []string{"duckduckgo", "brave"}, "positions": []int{1, 2}, "score": 4.0,
		"category": "general", "publishedDate": nil, "thumbnail": "", "priority": "",
	}
}

func searxPage(query string, results []map[string]any) map[string]any {
	if results == nil {
		results = []map[string]any{}
	}
	return map[string]any{
		"query": query, "number_of_results": 0, "results": results,
		"answers": []any{}, "corrections": []any{}, "infoboxes": []any{},
		"suggestions": []string{query + " tutorial"}, "unresponsive_engines": []any{},
	}
}

// searxNumbered is n results numbered from first.
func searxNumbered(first, n int) []map[string]any {
	out := make([]map[string]any, 0, n)
	for i := first; i < first+n; i++ {
		out = append(out, searxResult(fmt.Sprintf("https://example.com/r%d", i), fmt.Sprintf("Result %d", i), fmt.Sprintf("Snippet %d", i)))
	}
	return out
}

// newFakeSearXNG serves SearXNG's /search under prefix, page giving the
// results of each pageno.
func newFakeSearXNG(t *testing.T, prefix string, page func(pageno int) []map[string]any) *fakeAPI {
	return newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		commonRequestChecks(t, r)
		assert.Equal(t, http.MethodGet, r.Method)
		assert.Equal(t, prefix+"/search", r.URL.Path)
		q := r.URL.Query()
		assert.Equal(t, "json", q.Get("format"))
		assert.NotEmpty(t, q.Get("q"))
		n, err := strconv.Atoi(q.Get("pageno"))
		assert.NoError(t, err)
		writeJSON(w, http.StatusOK, searxPage(q.Get("q"), page(n)))
	})
}

func TestWebSearchSearXNG(t *testing.T) {
	srv := newFakeSearXNG(t, "", func(int) []map[string]any {
		return []map[string]any{
			searxResult("https://go.dev/wiki/WebAssembly", "  <span class=\"highlight\">Go</span> &amp; WebAssembly\n",
				"Run <strong>Go</strong> in the browser&#39;s <em>wasm</em>\n   runtime.<br>More."),
			searxResult("", "No URL", "dropped"),
			searxResult("https://go.dev/wiki/WebAssembly", "Duplicate", "dropped too"),
			{"title": "No url key", "content": "dropped"},
			searxResult("https://example.org/cmp", "Compare", "a < b and c > d"),
			{"url": "https://example.org/null", "title": "Null content", "content": nil},
			searxResult("https://example.org/over", "Over the limit", ""),
		}
	})
	tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
	got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "  golang wasm ", "limit": 3}, ""))
	assert.Equal(t, []map[string]any{
		{"title": "Go & WebAssembly", "url": "https://go.dev/wiki/WebAssembly", "description": "Run Go in the browser's wasm runtime. More.", "position": float64(1)},
		{"title": "Compare", "url": "https://example.org/cmp", "description": "a < b and c > d", "position": float64(2)},
		{"title": "Null content", "url": "https://example.org/null", "description": "", "position": float64(3)},
	}, got)
	assert.Equal(t, []string{"1"}, srv.queryParam("pageno"), "the first page had enough")
	assert.Equal(t, []string{"golang wasm"}, srv.queryParam("q"))
}

func TestWebSearchSearXNGLimits(t *testing.T) {
	tests := []struct {
		name      string
		limit     any
		perPage   int
		pageCount int // pages that have results; 0: unlimited
		wantN     int
		wantPages []string
	}{
		{"default limit 5", nil, 10, 0, 5, []string{"1"}},
		{"limit 0 is 1", 0, 10, 0, 1, []string{"1"}},
		{"limit 500 is 100", 500, 25, 0, 100, []string{"1", "2", "3", "4"}},
		{"at most 5 pages", 50, 8, 0, 40, []string{"1", "2", "3", "4", "5"}},
		{"stops at an empty page", 30, 10, 2, 20, []string{"1", "2", "3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeSearXNG(t, "", func(n int) []map[string]any {
				if tc.pageCount > 0 && n > tc.pageCount {
					return nil
				}
				return searxNumbered((n-1)*tc.perPage, tc.perPage)
			})
			tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
			args := map[string]any{"query": "q"}
			if tc.limit != nil {
				args["limit"] = tc.limit
			}
			got := searchEntries(t, callSearch(t, tl, args, ""))
			require.Len(t, got, tc.wantN)
			for i, e := range got {
				assert.Equal(t, fmt.Sprintf("https://example.com/r%d", i), e["url"])
			}
			assert.Equal(t, tc.wantPages, srv.queryParam("pageno"))
		})
	}
}

func TestWebSearchSearXNGPaging(t *testing.T) {
	t.Run("stops when a page brings nothing new", func(t *testing.T) {
		srv := newFakeSearXNG(t, "", func(int) []map[string]any { return searxNumbered(0, 5) })
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
		got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "q", "limit": 20}, ""))
		assert.Len(t, got, 5)
		assert.Equal(t, []string{"1", "2"}, srv.queryParam("pageno"))
	})
	t.Run("overlapping pages are de-duplicated", func(t *testing.T) {
		srv := newFakeSearXNG(t, "", func(n int) []map[string]any { return searxNumbered((n-1)*5, 10) })
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
		got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "q", "limit": 17}, ""))
		require.Len(t, got, 17)
		assert.Equal(t, "https://example.com/r16", got[16]["url"])
		assert.Equal(t, []string{"1", "2", "3"}, srv.queryParam("pageno"))
	})
	t.Run("a failing later page keeps the earlier results", func(t *testing.T) {
		srv := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			if r.URL.Query().Get("pageno") == "1" {
				writeJSON(w, http.StatusOK, searxPage("q", searxNumbered(0, 10)))
				return
			}
			writeText(w, http.StatusTooManyRequests, "text/plain", "Too Many Requests")
		})
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
		got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "q", "limit": 20}, ""))
		assert.Len(t, got, 10)
		assert.Len(t, srv.requests(), 2)
	})
}

func TestWebSearchSearXNGURLForms(t *testing.T) {
	for _, tc := range []struct{ name, prefix, suffix string }{
		{"bare", "", ""},
		{"trailing slash", "", "/"},
		{"path prefix", "/searx", ""},
		{"path prefix and trailing slash", "/searx", "/"},
		{"nested prefix", "/tools/searxng", "//"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeSearXNG(t, tc.prefix, func(int) []map[string]any { return searxNumbered(0, 3) })
			tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL + tc.prefix + tc.suffix})
			got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "q", "limit": 2}, ""))
			assert.Len(t, got, 2)
			require.Len(t, srv.requests(), 1)
		})
	}
}

func TestWebSearchSearXNGErrors(t *testing.T) {
	const hint = "Check web.search.url and that SearXNG runs with the json format enabled (search.formats: [html, json] in its settings.yml)."
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter)
		want   []string
	}{
		{"403 json disabled", func(w http.ResponseWriter) {
			writeText(w, 403, "text/html; charset=utf-8", "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n<h1>Forbidden</h1>")
		}, []string{"HTTP 403", "json output format is disabled", "search.formats: [html, json]", "settings.yml"}},
		{"401", func(w http.ResponseWriter) { writeText(w, 401, "text/plain", "auth") },
			[]string{"HTTP 401", "sends none"}},
		{"429 limiter", func(w http.ResponseWriter) { writeText(w, 429, "text/plain", "Too Many Requests") },
			[]string{"HTTP 429", "server.limiter: false", "pass_ip"}},
		{"404", func(w http.ResponseWriter) { writeText(w, 404, "text/html", "<h1>Not Found</h1>") },
			[]string{"HTTP 404", "web.search.url"}},
		{"500", func(w http.ResponseWriter) { writeText(w, 500, "text/html", "<h1>Internal Server Error</h1>") },
			[]string{"HTTP 500: Internal Server Error", "try again later"}},
		{"html instead of json", func(w http.ResponseWriter) {
			writeText(w, 200, "text/html; charset=utf-8", "<!DOCTYPE html><html><body>SearXNG</body></html>")
		}, []string{"not JSON", "text/html", "<!DOCTYPE html>", hint}},
		{"empty body", func(w http.ResponseWriter) { writeText(w, 200, "application/json", "") },
			[]string{"not JSON"}},
		{"wrong shape", func(w http.ResponseWriter) { writeJSON(w, 200, map[string]any{"results": "none"}) },
			[]string{`unexpected shape ("results" is a JSON string where an array was expected)`, hint}},
		{"engines failed", func(w http.ResponseWriter) {
			p := searxPage("q", nil)
			p["unresponsive_engines"] = [][]string{{"google", "timeout"}, {"bing", "CAPTCHA"}}
			writeJSON(w, 200, p)
		}, []string{"found no results because its search engines failed: google (timeout), bing (CAPTCHA)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { tc.handle(w) })
			tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
			msg := searchError(t, callSearch(t, tl, map[string]any{"query": "q"}, ""))
			assert.Contains(t, msg, "SearXNG at "+srv.URL)
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
		})
	}

	t.Run("no results is not an error", func(t *testing.T) {
		srv := newFakeSearXNG(t, "", func(int) []map[string]any { return nil })
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
		assert.Empty(t, searchEntries(t, callSearch(t, tl, map[string]any{"query": "q"}, "")))
		assert.Len(t, srv.requests(), 1)
	})

	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		u := srv.URL
		srv.Close()
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: u})
		msg := searchError(t, callSearch(t, tl, map[string]any{"query": "q"}, ""))
		assert.True(t, strings.HasPrefix(msg, "Could not reach the SearXNG server at "+u+": "), msg)
		assert.True(t, strings.HasSuffix(msg, hint), msg)
		assert.NotContains(t, msg, "pageno", "the request URL is noise")
	})

	t.Run("oversized answer", func(t *testing.T) {
		srv := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"results": [], "pad": "`))
			_, _ = w.Write([]byte(strings.Repeat("x", searchMaxBody)))
			_, _ = w.Write([]byte(`"}`))
		})
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
		msg := searchError(t, callSearch(t, tl, map[string]any{"query": "q"}, ""))
		assert.Contains(t, msg, "more than 8 MiB")
	})
}

// blockingHandler answers only once the client has gone (or after a minute).
func blockingHandler(w http.ResponseWriter, r *http.Request, _ []byte) {
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
		writeJSON(w, http.StatusOK, searxPage("q", nil))
	}
}

func TestWebSearchSlowProvider(t *testing.T) {
	t.Run("client timeout", func(t *testing.T) {
		srv := newFakeAPI(t, blockingHandler)
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL,
			searchClient: &http.Client{Timeout: 100 * time.Millisecond}})
		start := time.Now()
		msg := searchError(t, callSearch(t, tl, map[string]any{"query": "q"}, ""))
		// Not the server's minute (loose for a loaded machine).
		assert.Less(t, time.Since(start), 30*time.Second)
		assert.Contains(t, msg, "SearXNG at "+srv.URL+" did not answer within 100ms (timed out)")
		assert.Contains(t, msg, "outgoing.request_timeout")
	})
	t.Run("cancelled by the script's context", func(t *testing.T) {
		srv := newFakeAPI(t, blockingHandler)
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderBrave, URL: srv.URL, APIKey: testBraveKey, APIKeyEnv: "BRAVE_API_KEY"})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		res := tl.Call(ctx, "web_search", json.RawMessage(`{"query": "q"}`))
		// Below the default client's 20 s, with a margin for a loaded machine.
		assert.Less(t, time.Since(start), 15*time.Second, "the default client's 20 s timeout must not be waited for")
		assert.Equal(t, false, res["success"])
		msg, _ := res["error"].(string)
		assert.Contains(t, msg, "web_search was cancelled before Brave Search API at "+srv.URL+" answered (context deadline exceeded)")
		assert.NotContains(t, msg, testBraveKey)
	})
	t.Run("already cancelled", func(t *testing.T) {
		srv := newFakeSearXNG(t, "", func(int) []map[string]any { return searxNumbered(0, 3) })
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderSearXNG, URL: srv.URL})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := tl.Call(ctx, "web_search", json.RawMessage(`{"query": "q"}`))
		assert.Equal(t, false, res["success"])
		assert.Contains(t, res["error"], "cancelled")
		assert.Empty(t, srv.requests())
	})
}

// --- Brave ---------------------------------------------------------------

// braveResult is one web result as the Brave Search API gives it.
func braveResult(u, title, description string) map[string]any {
	return map[string]any{
		"title": title, "url": u, "is_source_local": false, "is_source_both": false,
		"description": description, "page_age": "2024-05-01T00:00:00", "language": "en",
		"family_friendly": true, "type": "search_result", "subtype": "generic", "is_live": false,
		"profile":  map[string]any{"name": "Example", "url": u, "long_name": "example.com", "img": "https://imgs.search.brave.com/x.png"},
		"meta_url": map[string]any{"scheme": "https", "netloc": "example.com", "hostname": "example.com", "favicon": "https://imgs.search.brave.com/f.png", "path": "› page"},
	}
}

func braveAnswerBody(query string, results []map[string]any, more bool) map[string]any {
	body := map[string]any{
		"type": "search",
		"query": map[string]any{
			"original": query, "show_strict_warning": false, "is_navigational": false,
			"is_news_breaking": false, "spellcheck_off": true, "country": "us", "bad_results": false,
			"should_fallback": false, "postal_code": "", "city": "", "header_country": "", "state": "",
			"more_results_available": more,
		},
		"mixed": map[string]any{"type": "mixed", "main": []any{map[string]any{"type": "web", "index": 0, "all": true}}, "top": []any{}, "side": []any{}},
	}
	if results != nil {
		body["web"] = map[string]any{"type": "search", "results": results, "family_friendly": true}
	}
	return body
}

// newFakeBrave serves the Brave web search endpoint; page gives the
// results and more_results_available of each offset.
func newFakeBrave(t *testing.T, page func(count, offset int) ([]map[string]any, bool)) *fakeAPI {
	return newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		commonRequestChecks(t, r)
		assert.Equal(t, http.MethodGet, r.Method)
		assert.Equal(t, "/res/v1/web/search", r.URL.Path)
		assert.Equal(t, testBraveKey, r.Header.Get("X-Subscription-Token"))
		q := r.URL.Query()
		count, err := strconv.Atoi(q.Get("count"))
		assert.NoError(t, err)
		assert.True(t, count >= 1 && count <= 20, "count %d", count)
		offset := 0
		if o := q.Get("offset"); o != "" {
			offset, err = strconv.Atoi(o)
			assert.NoError(t, err)
			assert.True(t, offset >= 1 && offset <= 9, "offset %d", offset)
		}
		res, more := page(count, offset)
		writeJSON(w, http.StatusOK, braveAnswerBody(q.Get("q"), res, more))
	})
}

func braveNumbered(first, n int) []map[string]any {
	out := make([]map[string]any, 0, n)
	for i := first; i < first+n; i++ {
		out = append(out, braveResult(fmt.Sprintf("https://example.com/b%d", i), fmt.Sprintf("<strong>Result</strong> %d", i), fmt.Sprintf("Snippet %d", i)))
	}
	return out
}

func braveTools(t *testing.T, srv *fakeAPI) *Tools {
	return newSearchTools(t, WebOptions{Provider: config.ProviderBrave, URL: srv.URL, APIKey: testBraveKey, APIKeyEnv: "BRAVE_API_KEY"})
}

func TestWebSearchBrave(t *testing.T) {
	srv := newFakeBrave(t, func(count, _ int) ([]map[string]any, bool) {
		return []map[string]any{
			braveResult("https://go.dev/doc/", "The <strong>Go</strong> Programming Language", "Go is an open source programming language that makes it simple to build <strong>secure</strong>, scalable systems &amp; more. It&#x27;s fast."),
			braveResult("https://go.dev/doc/", "Duplicate", "dropped"),
			braveResult("", "Empty URL", "dropped"),
			braveResult("https://pkg.go.dev/", "Go Packages", "  Find packages\n"),
		}, true
	})
	tl := braveTools(t, srv)
	got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "golang", "limit": 2}, testBraveKey))
	assert.Equal(t, []map[string]any{
		{"title": "The Go Programming Language", "url": "https://go.dev/doc/", "position": float64(1),
			"description": "Go is an open source programming language that makes it simple to build secure, scalable systems & more. It's fast."},
		{"title": "Go Packages", "url": "https://pkg.go.dev/", "description": "Find packages", "position": float64(2)},
	}, got)
	assert.Equal(t, []string{"2"}, srv.queryParam("count"))
	assert.Equal(t, []string{""}, srv.queryParam("offset"), "the first page sends no offset")
	assert.Equal(t, []string{"golang"}, srv.queryParam("q"))
}

func TestWebSearchBravePaging(t *testing.T) {
	tests := []struct {
		name        string
		limit       any
		lastOffset  int // more_results_available turns false at this offset; -1 never
		wantN       int
		wantCounts  []string
		wantOffsets []string
	}{
		{"default limit", nil, -1, 5, []string{"5"}, []string{""}},
		{"limit 0 is 1", 0, -1, 1, []string{"1"}, []string{""}},
		{"limit 20 in one request", 20, -1, 20, []string{"20"}, []string{""}},
		{"limit 500 is 100 in pages of 20", 500, -1, 100,
			[]string{"20", "20", "20", "20", "20"}, []string{"", "1", "2", "3", "4"}},
		{"limit 30", 30, -1, 30, []string{"20", "20"}, []string{"", "1"}},
		{"no more results", 60, 1, 40, []string{"20", "20"}, []string{"", "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeBrave(t, func(count, offset int) ([]map[string]any, bool) {
				return braveNumbered(offset*count, count), offset != tc.lastOffset
			})
			args := map[string]any{"query": "q"}
			if tc.limit != nil {
				args["limit"] = tc.limit
			}
			got := searchEntries(t, callSearch(t, braveTools(t, srv), args, testBraveKey))
			require.Len(t, got, tc.wantN)
			for i, e := range got {
				assert.Equal(t, fmt.Sprintf("https://example.com/b%d", i), e["url"])
				assert.Equal(t, fmt.Sprintf("Result %d", i), e["title"])
			}
			assert.Equal(t, tc.wantCounts, srv.queryParam("count"))
			assert.Equal(t, tc.wantOffsets, srv.queryParam("offset"))
		})
	}

	t.Run("no web section", func(t *testing.T) {
		srv := newFakeBrave(t, func(int, int) ([]map[string]any, bool) { return nil, false })
		assert.Empty(t, searchEntries(t, callSearch(t, braveTools(t, srv), map[string]any{"query": "q"}, testBraveKey)))
	})
	t.Run("short page without more_results_available stops", func(t *testing.T) {
		srv := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			writeJSON(w, 200, map[string]any{"web": map[string]any{"results": braveNumbered(0, 3)}})
		})
		got := searchEntries(t, callSearch(t, braveTools(t, srv), map[string]any{"query": "q", "limit": 10}, testBraveKey))
		assert.Len(t, got, 3)
		assert.Len(t, srv.requests(), 1)
	})
}

func TestWebSearchBraveErrors(t *testing.T) {
	braveError := func(status int, code, detail string) map[string]any {
		return map[string]any{"type": "ErrorResponse", "time": 1663072993, "error": map[string]any{
			"id": "5d832250-9396-4f6e-b84a-2a1fe524cd7d", "status": status, "code": code, "detail": detail,
			"meta": map[string]any{"component": "authentication"}}}
	}
	const rejected = "The key in $MY_BRAVE_KEY was rejected by Brave Search"
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter)
		want   []string
	}{
		{"422 invalid token", func(w http.ResponseWriter) {
			writeJSON(w, 422, braveError(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid."))
		}, []string{rejected + " (HTTP 422: The provided subscription token is invalid.)", "web.search.api_key_env"}},
		{"401 echoing the key", func(w http.ResponseWriter) {
			writeJSON(w, 401, braveError(401, "UNAUTHORIZED", "Token "+testBraveKey+" is not known."))
		}, []string{rejected + " (HTTP 401: Token [redacted] is not known.)"}},
		{"403", func(w http.ResponseWriter) { writeText(w, 403, "text/plain", "Forbidden") },
			[]string{rejected + " (HTTP 403: Forbidden)"}},
		{"422 validation", func(w http.ResponseWriter) {
			writeJSON(w, 422, braveError(422, "VALIDATION", "Unable to validate request parameter(s)"))
		}, []string{"Brave Search API at", "rejected the search with HTTP 422: Unable to validate request parameter(s)."}},
		{"429 with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "2")
			writeJSON(w, 429, braveError(429, "RATE_LIMITED", "Request rate limit exceeded for plan."))
		}, []string{"is rate limiting web_search (HTTP 429: Request rate limit exceeded for plan.)", "Wait 2 seconds (Retry-After)"}},
		{"429 bare", func(w http.ResponseWriter) { writeText(w, 429, "text/plain", "") },
			[]string{"(HTTP 429)", "Wait a while"}},
		{"502", func(w http.ResponseWriter) {
			writeText(w, 502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>")
		},
			[]string{"failed with HTTP 502: 502 Bad Gateway", "try again later"}},
		{"404 on a custom base", func(w http.ResponseWriter) { writeText(w, 404, "text/plain", "no such path") },
			[]string{"HTTP 404", "web_search appends /res/v1/web/search"}},
		{"not json", func(w http.ResponseWriter) { writeText(w, 200, "text/html", "<html>captive portal</html>") },
			[]string{"not JSON", "captive portal"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { tc.handle(w) })
			tl := newSearchTools(t, WebOptions{Provider: config.ProviderBrave, URL: srv.URL, APIKey: testBraveKey, APIKeyEnv: "MY_BRAVE_KEY"})
			msg := searchError(t, callSearch(t, tl, map[string]any{"query": "q"}, testBraveKey))
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
		})
	}

	t.Run("query too long is refused before any request", func(t *testing.T) {
		srv := newFakeBrave(t, func(int, int) ([]map[string]any, bool) { return nil, false })
		tl := braveTools(t, srv)
		msg := searchError(t, callSearch(t, tl, map[string]any{"query": strings.Repeat("w ", 51)}, testBraveKey))
		assert.Contains(t, msg, "at most 400 characters and 50 words; this one has 101 characters and 51 words")
		msg = searchError(t, callSearch(t, tl, map[string]any{"query": strings.Repeat("x", 401)}, testBraveKey))
		assert.Contains(t, msg, "this one has 401 characters and 1 words")
		assert.Empty(t, srv.requests())
	})

	t.Run("the key does not follow a redirect to another host", func(t *testing.T) {
		other := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, braveAnswerBody("q", braveNumbered(0, 1), false))
		})
		srv := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
		})
		got := searchEntries(t, callSearch(t, braveTools(t, srv), map[string]any{"query": "q"}, testBraveKey))
		assert.Len(t, got, 1)
		require.Len(t, other.requests(), 1)
		assert.Empty(t, other.requests()[0].Header.Get("X-Subscription-Token"))
		assert.Equal(t, testBraveKey, srv.requests()[0].Header.Get("X-Subscription-Token"))
	})
}

// --- Tavily --------------------------------------------------------------

func tavilyAnswerBody(query string, results []map[string]any) map[string]any {
	return map[string]any{"query": query, "answer": nil, "images": []any{}, "results": results,
		"response_time": "1.67", "follow_up_questions": nil}
}

func tavilyResult(u, title, content string) map[string]any {
	return map[string]any{"title": title, "url": u, "content": content, "score": 0.81025416, "raw_content": nil}
}

// newFakeTavily serves POST /search, checking the body, with results.
func newFakeTavily(t *testing.T, results func(maxResults int) []map[string]any) *fakeAPI {
	return newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		commonRequestChecks(t, r)
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "/search", r.URL.Path)
		assert.Equal(t, "Bearer "+testTavilyKey, r.Header.Get("Authorization"))
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		var req map[string]any
		assert.NoError(t, json.Unmarshal(body, &req))
		assert.ElementsMatch(t, []string{"query", "max_results"}, mapKeys(req), "no api_key in the body")
		n, _ := req["max_results"].(float64)
		assert.True(t, n >= 1 && n <= 20, "max_results %v", n)
		q, _ := req["query"].(string)
		writeJSON(w, 200, tavilyAnswerBody(q, results(int(n))))
	})
}

func mapKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func tavilyTools(t *testing.T, srv *fakeAPI) *Tools {
	return newSearchTools(t, WebOptions{Provider: config.ProviderTavily, URL: srv.URL, APIKey: testTavilyKey, APIKeyEnv: "TAVILY_API_KEY"})
}

func TestWebSearchTavily(t *testing.T) {
	srv := newFakeTavily(t, func(int) []map[string]any {
		return []map[string]any{
			tavilyResult("https://www.britannica.com/facts/Lionel-Messi", "Lionel Messi Facts | Britannica",
				"Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest football players of his generation. [...] Born in 1987"),
			tavilyResult("https://www.britannica.com/facts/Lionel-Messi", "dup", "dropped"),
			tavilyResult(" ", "blank url", "dropped"),
			tavilyResult("https://en.wikipedia.org/wiki/Lionel_Messi", "Lionel Messi - Wikipedia", "Echo of "+testTavilyKey+" &amp; more"),
		}
	})
	got := searchEntries(t, callSearch(t, tavilyTools(t, srv), map[string]any{"query": "who is Leo Messi?", "limit": 3}, testTavilyKey))
	assert.Equal(t, []map[string]any{
		{"title": "Lionel Messi Facts | Britannica", "url": "https://www.britannica.com/facts/Lionel-Messi", "position": float64(1),
			"description": "Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest football players of his generation. [...] Born in 1987"},
		{"title": "Lionel Messi - Wikipedia", "url": "https://en.wikipedia.org/wiki/Lionel_Messi", "description": "Echo of [redacted] & more", "position": float64(2)},
	}, got)
	require.Len(t, srv.requests(), 1)
	assert.JSONEq(t, `{"query": "who is Leo Messi?", "max_results": 3}`, srv.body[0])
}

func TestWebSearchTavilyLimits(t *testing.T) {
	for _, tc := range []struct {
		limit any
		want  float64
	}{{nil, 5}, {0, 1}, {7, 7}, {20, 20}, {50, 20}, {500, 20}} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			srv := newFakeTavily(t, func(n int) []map[string]any {
				out := make([]map[string]any, 0, n)
				for i := range n {
					out = append(out, tavilyResult(fmt.Sprintf("https://example.com/t%d", i), "T", "C"))
				}
				return out
			})
			args := map[string]any{"query": "q"}
			if tc.limit != nil {
				args["limit"] = tc.limit
			}
			got := searchEntries(t, callSearch(t, tavilyTools(t, srv), args, testTavilyKey))
			assert.Len(t, got, int(tc.want))
			require.Len(t, srv.requests(), 1, "Tavily has no paging")
			var body map[string]any
			require.NoError(t, json.Unmarshal([]byte(srv.body[0]), &body))
			assert.Equal(t, tc.want, body["max_results"])
		})
	}
}

func TestWebSearchTavilyErrors(t *testing.T) {
	detail := func(msg string) map[string]any { return map[string]any{"detail": map[string]any{"error": msg}} }
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter)
		want   []string
	}{
		{"401", func(w http.ResponseWriter) { writeJSON(w, 401, detail("Unauthorized: missing or invalid API key.")) },
			[]string{"The key in $TAVILY_API_KEY was rejected by Tavily (HTTP 401: Unauthorized: missing or invalid API key.)", "web.search.api_key_env"}},
		{"403", func(w http.ResponseWriter) { writeJSON(w, 403, detail("Forbidden")) },
			[]string{"The key in $TAVILY_API_KEY was rejected by Tavily (HTTP 403: Forbidden)"}},
		{"432", func(w http.ResponseWriter) {
			writeJSON(w, 432, detail("This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com"))
		}, []string{"plan's usage limit is exceeded (HTTP 432: This request exceeds", "Upgrade the plan"}},
		{"433", func(w http.ResponseWriter) {
			writeJSON(w, 433, detail("This request exceeds the pay-as-you-go limit."))
		},
			[]string{"pay-as-you-go limit is exceeded (HTTP 433", "Raise the limit"}},
		{"429", func(w http.ResponseWriter) {
			writeJSON(w, 429, detail("Your request has been blocked due to excessive requests. Please reduce rate of requests."))
		}, []string{"Tavily API at", "rate limiting web_search (HTTP 429: Your request has been blocked"}},
		{"400 string detail", func(w http.ResponseWriter) { writeJSON(w, 400, map[string]any{"detail": "Invalid topic"}) },
			[]string{"rejected the search with HTTP 400: Invalid topic."}},
		{"500", func(w http.ResponseWriter) { writeText(w, 500, "text/plain", "Internal Server Error") },
			[]string{"failed with HTTP 500: Internal Server Error"}},
		{"not json", func(w http.ResponseWriter) { writeText(w, 200, "text/plain", "ok") },
			[]string{"not JSON", `starting "ok"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { tc.handle(w) })
			msg := searchError(t, callSearch(t, tavilyTools(t, srv), map[string]any{"query": "q"}, testTavilyKey))
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
		})
	}
}

// --- default endpoints -----------------------------------------------------

// roundTripFunc lets a test stand in for the network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWebSearchDefaultEndpoints(t *testing.T) {
	answer := func(r *http.Request, body string) *http.Response {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}
	}
	t.Run("brave", func(t *testing.T) {
		var seen []string
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seen = append(seen, r.Method+" "+r.URL.String())
			assert.Equal(t, testBraveKey, r.Header.Get("X-Subscription-Token"))
			return answer(r, `{"web": {"results": [{"title": "T", "url": "https://a.example/", "description": "D"}]}}`), nil
		})}
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderBrave, APIKey: testBraveKey, searchClient: client})
		got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "go wasm", "limit": 1}, testBraveKey))
		assert.Len(t, got, 1)
		assert.Equal(t, []string{"GET https://api.search.brave.com/res/v1/web/search?count=1&q=go+wasm"}, seen)
	})
	t.Run("tavily", func(t *testing.T) {
		var seen []string
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seen = append(seen, r.Method+" "+r.URL.String())
			return answer(r, `{"results": [{"title": "T", "url": "https://a.example/", "content": "C"}]}`), nil
		})}
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderTavily, APIKey: testTavilyKey, searchClient: client})
		got := searchEntries(t, callSearch(t, tl, map[string]any{"query": "q"}, testTavilyKey))
		assert.Len(t, got, 1)
		assert.Equal(t, []string{"POST https://api.tavily.com/search"}, seen)
	})
	t.Run("unreachable default endpoint", func(t *testing.T) {
		client := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("dial tcp: lookup api.search.brave.com: no such host")
		})}
		tl := newSearchTools(t, WebOptions{Provider: config.ProviderBrave, APIKey: testBraveKey, searchClient: client})
		msg := searchError(t, callSearch(t, tl, map[string]any{"query": "q"}, testBraveKey))
		assert.Equal(t, "Could not reach Brave Search API at https://api.search.brave.com: dial tcp: lookup api.search.brave.com: no such host. Check the network connection of the host running hermes-wasm-exec.", msg)
	})
}

// --- configuration -------------------------------------------------------

func TestWebSearchConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		web  WebOptions
		want string
	}{
		{"unknown provider", WebOptions{Provider: "google"},
			`Unknown web search provider "google" in web.search.provider. Valid providers: searxng, brave, tavily.`},
		{"brave without key", WebOptions{Provider: config.ProviderBrave, APIKeyEnv: "MY_BRAVE"},
			"web_search with Brave Search needs an API key: set MY_BRAVE in the environment of the host running hermes-wasm-exec (web.search.api_key_env names the variable)."},
		{"brave default variable", WebOptions{Provider: config.ProviderBrave},
			"web_search with Brave Search needs an API key: set BRAVE_API_KEY in the environment of the host running hermes-wasm-exec (web.search.api_key_env names the variable)."},
		{"tavily without key", WebOptions{Provider: config.ProviderTavily, URL: "http://127.0.0.1:1"},
			"web_search with Tavily needs an API key: set TAVILY_API_KEY in the environment of the host running hermes-wasm-exec (web.search.api_key_env names the variable)."},
		{"searxng without url", WebOptions{Provider: config.ProviderSearXNG},
			"web_search needs the address of the SearXNG server: set web.search.url in config.yaml to its base URL, such as http://127.0.0.1:8888."},
		{"searxng url without scheme", WebOptions{Provider: config.ProviderSearXNG, URL: "127.0.0.1:8888"},
			`web.search.url "127.0.0.1:8888" is not a valid http(s) URL. Set it to the provider's base URL, such as http://127.0.0.1:8888 for SearXNG.`},
		{"brave ftp url", WebOptions{Provider: config.ProviderBrave, APIKey: testBraveKey, URL: "ftp://example.com"},
			`web.search.url "ftp://example.com" is not a valid http(s) URL. Set it to the provider's base URL, such as http://127.0.0.1:8888 for SearXNG.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := newSearchTools(t, tc.web)
			assert.Equal(t, map[string]any{"success": false, "error": tc.want},
				callSearch(t, tl, map[string]any{"query": "q", "limit": 3}, testBraveKey))
		})
	}
	// Argument errors come first, whatever the configuration.
	tl := newSearchTools(t, WebOptions{Provider: "google"})
	assert.Equal(t, map[string]any{"error": "Invalid arguments for web_search: query is required"},
		callJSON(t, tl, "web_search", map[string]any{"limit": 3}))
}

func TestSearchCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"<strong>Go</strong>lang":              "Golang",
		"line<br>next":                         "line next",
		"<p>para</p><p>two</p>":                "para two",
		"a < b and c > d":                      "a < b and c > d",
		"5<6":                                  "5<6",
		"x &lt;b&gt; y":                        "x <b> y",
		"it&#x27;s &amp; &quot;q&quot; &#39;s": `it's & "q" 's`,
		"  spaced \n\t out  ":                  "spaced out",
		"<!-- note -->text":                    "text",
		"unclosed <b":                          "unclosed <b",
		`<span class="hl">a</span>b`:           "ab",
		`<a href="https://x.example/?a=1&amp;b=2">link</a>`: "link",
		"<B>Upper</B>case": "Uppercase",
		"plain":            "plain",
		"":                 "",
	} {
		assert.Equal(t, want, searchCleanText(in), "input %q", in)
	}
}
