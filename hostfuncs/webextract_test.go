package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newExtractTools returns tools with web options w, working in a temp dir.
func newExtractTools(t *testing.T, w WebOptions) *Tools {
	t.Helper()
	tl, err := New(Options{Workdir: t.TempDir(), Web: w})
	require.NoError(t, err)
	return tl
}

// localWeb allows the loopback test servers.
var localWeb = WebOptions{AllowPrivateNetworks: true}

// extractCall runs web_extract with ctx and returns the result through a
// JSON round trip, as the script sees it.
func extractCall(t *testing.T, ctx context.Context, tl *Tools, args any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	enc, err := json.Marshal(tl.Call(ctx, "web_extract", raw))
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(enc, &out))
	return out
}

// extractResults runs web_extract on urls and returns the per-URL results,
// checking the shape: one entry per URL, in order, with the four keys.
func extractResults(t *testing.T, ctx context.Context, tl *Tools, args map[string]any) []map[string]any {
	t.Helper()
	out := extractCall(t, ctx, tl, args)
	require.NotContains(t, out, "error")
	list, ok := out["results"].([]any)
	require.True(t, ok, "results: %v", out)
	urls := args["urls"].([]string)
	require.Len(t, list, len(urls))
	res := make([]map[string]any, len(list))
	for i, r := range list {
		m := r.(map[string]any)
		assert.ElementsMatch(t, []string{"url", "title", "content", "error"}, keysOf(m))
		assert.Equal(t, urls[i], m["url"], "results keep the input order")
		res[i] = m
	}
	return res
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// failed returns a result for an error.
func failed(u, msg string) map[string]any {
	return map[string]any{"url": u, "title": nil, "content": "", "error": msg}
}

// countingServer serves h and counts its requests.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func serveAs(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	}
}

func TestWebExtractArgs(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	tl := newExtractTools(t, localWeb)
	six := []string{srv.URL, srv.URL, srv.URL, srv.URL, srv.URL, srv.URL}
	tests := []struct {
		name string
		args any
		want map[string]any
	}{
		{"too many", map[string]any{"urls": six},
			map[string]any{"error": "Too many URLs: 6 given, at most 5 per web_extract call."}},
		{"empty list", map[string]any{"urls": []string{}},
			map[string]any{"error": "Invalid arguments for web_extract: urls must be a non-empty list of URLs"}},
		{"null urls", map[string]any{"urls": nil},
			map[string]any{"error": "Invalid arguments for web_extract: urls must be a non-empty list of URLs"}},
		{"bad char_limit", map[string]any{"urls": []string{srv.URL}, "char_limit": 0},
			map[string]any{"error": "Invalid arguments for web_extract: char_limit must be positive, got 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, extractCall(t, context.Background(), tl, tc.args))
		})
	}
	for _, bad := range []string{`{"urls": "https://a.example"}`, `{"urls": [1]}`, `{"urls": ["u"], "format": "md"}`} {
		res := callJSON(t, tl, "web_extract", json.RawMessage(bad))
		assert.Contains(t, res["error"], "Invalid arguments for web_extract:", bad)
	}
	assert.Zero(t, hits.Load(), "a refused call fetches nothing")
}

// articlePage is a news page with the usual chrome around one article.
const articlePage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Otters Hold Hands While Sleeping | Nature Daily</title>
<meta property="og:title" content="Otters Hold Hands While Sleeping">
<link rel="stylesheet" href="/css/site.css">
<style>body { font-family: STYLE_TEXT, sans-serif; } .cookie-banner { position: fixed; }</style>
<script>window.analytics = { track: function() { console.log("TRACKING_SCRIPT_TEXT"); } };</script>
</head>
<body>
<div class="cookie-banner" id="cookie-consent">We use cookies to improve your experience. COOKIE_BANNER_TEXT <button>Accept all</button></div>
<header class="site-header">
  <a href="/" class="logo">HEADER_LOGO_TEXT</a>
  <nav class="main-nav"><ul>
    <li><a href="/news">NAV_NEWS_LINK</a></li>
    <li><a href="/science">Science</a></li>
    <li><a href="/about">About us</a></li>
  </ul></nav>
</header>
<main>
<article>
  <h1>Otters Hold Hands While Sleeping</h1>
  <p>Sea otters are famous for holding hands while they sleep, a behaviour known as rafting. Scientists at the <a href="/institutes/marine">Marine Institute</a> have studied this for decades, and they say it keeps the animals from drifting apart in the currents of the Pacific.</p>
  <p>The otters wrap themselves in kelp and link paws with their neighbours. Groups of more than a hundred animals have been observed, floating together through the night while the tide turns beneath them and the wind picks up along the coast.</p>
  <img src="/images/otters.jpg" alt="Two otters holding hands">
  <h2>Why they do it</h2>
  <p>According to researchers, the main reason is safety. A lone otter asleep on the water can drift for miles, away from its food and its family. Holding on means waking where you fell asleep, which matters a great deal when the nearest kelp forest is the only place to eat.</p>
  <p>Read the <a href="https://example.org/full-study.pdf">full study</a> or our <a href="../related/seals">piece on seals</a> for more about marine mammals and their remarkable habits along the coastline.</p>
</article>
</main>
<aside class="sidebar">
  <h3>Trending</h3>
  <ul><li><a href="/trending/1">SIDEBAR_TRENDING_STORY</a></li><li><a href="/trending/2">Another story</a></li></ul>
</aside>
<footer class="site-footer">
  <p>FOOTER_COPYRIGHT © 2024 Nature Daily. All rights reserved.</p>
  <nav><a href="/privacy">Privacy</a> <a href="/terms">Terms</a></nav>
</footer>
<script src="/js/app.js"></script>
<script>document.write("INLINE_SCRIPT_TEXT");</script>
</body>
</html>`

func TestWebExtractArticle(t *testing.T) {
	var ua, accept atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/2024/03/otters", func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.Header.Get("User-Agent"))
		accept.Store(r.Header.Get("Accept"))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, articlePage)
	})
	mux.HandleFunc("/old-link", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/2024/03/otters", http.StatusMovedPermanently)
	})
	srv, _ := countingServer(t, mux)
	tl := newExtractTools(t, localWeb)

	res := extractResults(t, context.Background(), tl, map[string]any{"urls": []string{srv.URL + "/2024/03/otters", srv.URL + "/old-link"}})
	for _, r := range res {
		assert.Nil(t, r["error"])
		assert.Equal(t, "Otters Hold Hands While Sleeping", r["title"])
		md := r["content"].(string)
		assert.True(t, strings.HasPrefix(md, "# Otters Hold Hands While Sleeping\n\n"), md)
		for _, want := range []string{
			"Sea otters are famous for holding hands while they sleep",
			"## Why they do it",
			"[Marine Institute](" + srv.URL + "/institutes/marine)",
			"[full study](https://example.org/full-study.pdf)",
			"[piece on seals](" + srv.URL + "/2024/related/seals)", // relative to the final URL
			"![Two otters holding hands](" + srv.URL + "/images/otters.jpg)",
		} {
			assert.Contains(t, md, want)
		}
		for _, chrome := range []string{"COOKIE_BANNER_TEXT", "Accept all", "HEADER_LOGO_TEXT", "NAV_NEWS_LINK",
			"SIDEBAR_TRENDING_STORY", "FOOTER_COPYRIGHT", "Privacy", "TRACKING_SCRIPT_TEXT", "INLINE_SCRIPT_TEXT",
			"STYLE_TEXT", "window.analytics", "<"} {
			assert.NotContains(t, md, chrome)
		}
	}
	assert.True(t, strings.HasPrefix(ua.Load().(string), "hermes-wasm-exec/"), ua.Load())
	for _, typ := range []string{"text/html", "text/plain", "application/json"} {
		assert.Contains(t, accept.Load(), typ)
	}
}

func TestWebExtractHTMLFallbacks(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/short", serveAs("text/html", `<html><head><title> Short
		page </title></head><body><nav><a href="/x">NAV</a></nav>
		<p>Hello <a href="a/b">world</a>.</p><div class="cookie-banner">COOKIES</div></body></html>`))
	mux.HandleFunc("/untitled", serveAs("application/xhtml+xml",
		`<html xmlns="http://www.w3.org/1999/xhtml"><body><p>No title here.</p></body></html>`))
	mux.HandleFunc("/empty", serveAs("text/html", `<html><head><title>Just a shell</title></head><body><div id="app"></div><script>render()</script></body></html>`))
	mux.HandleFunc("/base", serveAs("text/html", `<html><head><base href="https://cdn.example.net/docs/"></head><body><p>See <a href="guide.html">the guide</a>.</p></body></html>`))
	srv, _ := countingServer(t, mux)
	tl := newExtractTools(t, localWeb)
	urls := []string{srv.URL + "/short", srv.URL + "/untitled", srv.URL + "/empty", srv.URL + "/base"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})

	assert.Equal(t, map[string]any{"url": urls[0], "title": "Short page", "error": nil,
		"content": "Hello [world](" + srv.URL + "/a/b)."}, res[0])
	assert.Equal(t, map[string]any{"url": urls[1], "title": nil, "error": nil, "content": "No title here."}, res[1])
	assert.Equal(t, urls[2], res[2]["url"])
	assert.Contains(t, res[2]["error"], "The page had no readable text")
	assert.Equal(t, "", res[2]["content"])
	assert.Equal(t, "See [the guide](https://cdn.example.net/docs/guide.html).", res[3]["content"])
}

func TestWebExtractTextTypes(t *testing.T) {
	const plain = "  Line one\n# not a heading, just text *as is*\n\n<b>raw</b>\n"
	const jsonBody = `{"name": "hermes", "tags": ["a", "b"], "html": "<p>x</p>"}`
	mux := http.NewServeMux()
	mux.HandleFunc("/notes.txt", serveAs("text/plain; charset=utf-8", plain))
	mux.HandleFunc("/api/data", serveAs("application/json", jsonBody))
	mux.HandleFunc("/problem", serveAs("application/problem+json", `{"title":"oops"}`))
	mux.HandleFunc("/table.csv", serveAs("text/csv", "a,b\n1,2\n"))
	mux.HandleFunc("/README.md", serveAs("text/markdown; charset=utf-8", "# Title\n\nBody.\n"))
	mux.HandleFunc("/paper.pdf", serveAs("application/pdf", "%PDF-1.7\n..."))
	mux.HandleFunc("/logo.png", serveAs("image/png", "\x89PNG\r\n\x1a\n...."))
	mux.HandleFunc("/blob", serveAs("application/octet-stream", "\x00\x01\x02"))
	mux.HandleFunc("/untyped", func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = nil // no header: the type is sniffed
		fmt.Fprint(w, "sniffed as plain text\n")
	})
	mux.HandleFunc("/empty.txt", serveAs("text/plain", "  \n"))
	srv, _ := countingServer(t, mux)
	tl := newExtractTools(t, localWeb)

	urls := []string{srv.URL + "/notes.txt", srv.URL + "/api/data", srv.URL + "/paper.pdf", srv.URL + "/table.csv", srv.URL + "/logo.png"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	assert.Equal(t, map[string]any{"url": urls[0], "title": nil, "content": plain, "error": nil}, res[0])
	assert.Equal(t, map[string]any{"url": urls[1], "title": nil, "content": jsonBody, "error": nil}, res[1])
	assert.Equal(t, failed(urls[2], "Unsupported content type application/pdf: web_extract reads HTML, plain text, Markdown, CSV, JSON and XML"), res[2])
	assert.Equal(t, map[string]any{"url": urls[3], "title": nil, "content": "a,b\n1,2\n", "error": nil}, res[3])
	assert.Equal(t, failed(urls[4], "Unsupported content type image/png: web_extract reads HTML, plain text, Markdown, CSV, JSON and XML"), res[4])

	urls = []string{srv.URL + "/problem", srv.URL + "/README.md", srv.URL + "/blob", srv.URL + "/untyped", srv.URL + "/empty.txt"}
	res = extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	assert.Equal(t, `{"title":"oops"}`, res[0]["content"])
	assert.Equal(t, "# Title\n\nBody.\n", res[1]["content"])
	assert.Nil(t, res[1]["title"])
	assert.Contains(t, res[2]["error"], "Unsupported content type application/octet-stream")
	assert.Equal(t, map[string]any{"url": urls[3], "title": nil, "content": "sniffed as plain text\n", "error": nil}, res[3])
	assert.Contains(t, res[4]["error"], "The page had no readable text")
}

func TestWebExtractCharset(t *testing.T) {
	// "Café crème brûlée" in ISO-8859-1.
	const latin1 = "Caf\xe9 cr\xe8me br\xfbl\xe9e"
	body := func(head string) string {
		return "<html><head>" + head + "<title>Men\xfc</title></head><body><p>" + latin1 + " is on the menu today.</p></body></html>"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/header", serveAs("text/html; charset=ISO-8859-1", body("")))
	mux.HandleFunc("/meta", serveAs("text/html", body(`<meta charset="iso-8859-1">`)))
	mux.HandleFunc("/http-equiv", serveAs("text/html", body(`<meta http-equiv="Content-Type" content="text/html; charset=latin1">`)))
	mux.HandleFunc("/plain", serveAs("text/plain; charset=iso-8859-1", latin1))
	mux.HandleFunc("/bad-label", serveAs("text/plain; charset=no-such-charset", "caf\xc3\xa9"))
	srv, _ := countingServer(t, mux)
	tl := newExtractTools(t, localWeb)

	urls := []string{srv.URL + "/header", srv.URL + "/meta", srv.URL + "/http-equiv", srv.URL + "/plain", srv.URL + "/bad-label"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	for _, r := range res[:3] {
		assert.Nil(t, r["error"])
		assert.Equal(t, "Menü", r["title"], r["url"])
		assert.Contains(t, r["content"], "Café crème brûlée is on the menu today.", r["url"])
	}
	assert.Equal(t, "Café crème brûlée", res[3]["content"])
	assert.Equal(t, "café", res[4]["content"], "an unknown label: valid UTF-8 is UTF-8")

	mux.HandleFunc("/bom", serveAs("text/plain", "\xef\xbb\xbfwith a BOM"))
	mux.HandleFunc("/utf16", serveAs("text/plain", "\xff\xfeh\x00i\x00"))
	res = extractResults(t, context.Background(), tl, map[string]any{"urls": []string{srv.URL + "/bom", srv.URL + "/utf16"}})
	assert.Equal(t, "with a BOM", res[0]["content"])
	assert.Equal(t, "hi", res[1]["content"])
}

func TestWebExtractCharLimit(t *testing.T) {
	// 200 numbered lines with multi-byte runes, about 9,600 characters.
	var sb strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&sb, "line %03d: naïve café text, über-long ✓ padding to width\n", i)
	}
	full := sb.String()
	total := utf8.RuneCountInString(full)
	require.Greater(t, len(full), total, "the page must hold multi-byte runes")
	short := strings.Repeat("é", 900)

	mux := http.NewServeMux()
	mux.HandleFunc("/long.txt", serveAs("text/plain; charset=utf-8", full))
	mux.HandleFunc("/short.txt", serveAs("text/plain; charset=utf-8", short))
	srv, _ := countingServer(t, mux)
	cache := filepath.Join(t.TempDir(), "cache", "web") // created on demand
	w := localWeb
	w.CacheDir = cache
	w.CharLimit = 3000
	tl := newExtractTools(t, w)

	noticeRe := regexp.MustCompile(`\n\n\.\.\. \[(\d+) characters omitted\] \.\.\.\n\n`)
	pathRe := regexp.MustCompile(`Full text saved to (.+?) — page it with read_file\((r?"(?:[^"\\]|\\.)*"), offset=(\d+), limit=500\)`)
	check := func(t *testing.T, content string, limit int) (path string, offset int) {
		t.Helper()
		m := noticeRe.FindStringSubmatchIndex(content)
		require.NotNil(t, m, content)
		head, rest := content[:m[0]], content[m[1]:]
		var omitted int
		fmt.Sscan(content[m[2]:m[3]], &omitted)
		tail, footer, ok := strings.Cut(rest, "\n\n[Cut to char_limit=")
		require.True(t, ok, content)
		kept := utf8.RuneCountInString(head) + utf8.RuneCountInString(tail) + 2 // the newlines the notice replaced
		assert.Equal(t, total, kept+omitted, "head + omitted + tail is the whole page")
		assert.LessOrEqual(t, kept, limit+2)
		assert.GreaterOrEqual(t, kept, limit*8/10)
		assert.True(t, strings.HasPrefix(full, head+"\n"), "the head is the start of the page")
		assert.True(t, strings.HasSuffix(full, tail+"\n"), "the tail is the end of the page")
		assert.Greater(t, utf8.RuneCountInString(head), utf8.RuneCountInString(tail), "head 70%, tail 30%")
		assert.True(t, strings.HasPrefix(footer, fmt.Sprintf("%d of %d characters.", limit, total)), footer)
		assert.NotContains(t, footer, "\n", "the path line is the last line")
		pm := pathRe.FindStringSubmatch(footer)
		require.NotNil(t, pm, footer)
		assert.Equal(t, pm[1], pyUnquote(t, pm[2]), "read_file's argument is a Python literal of the path")
		fmt.Sscan(pm[3], &offset)
		return pm[1], offset
	}

	// The call's char_limit beats WebOptions.CharLimit.
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": []string{srv.URL + "/long.txt", srv.URL + "/short.txt"}, "char_limit": 1000})
	require.Nil(t, res[0]["error"])
	path, offset := check(t, res[0]["content"].(string), 1000)
	assert.Equal(t, short, res[1]["content"], "900 characters (1,800 bytes) fit in 1000")

	assert.True(t, filepath.IsAbs(path), path)
	assert.Equal(t, cache, filepath.Dir(path))
	assert.Regexp(t, `^web-[0-9a-f]{12}\.md$`, filepath.Base(path))
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, full, string(saved), "the saved file holds the full text")
	if goruntime.GOOS != "windows" {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		di, err := os.Stat(cache)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	}
	entries, err := filepath.Glob(filepath.Join(cache, "*.md"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the long page is saved")
	temps, err := filepath.Glob(filepath.Join(cache, "*.tmp"))
	require.NoError(t, err)
	assert.Empty(t, temps, "no temp file is left")

	// The offset given reads on from where the head stopped.
	page := callJSON(t, tl, "read_file", map[string]any{"path": path, "offset": offset, "limit": 2})
	lines := strings.Split(full, "\n")
	assert.Contains(t, page["content"], fmt.Sprintf("%d|%s", offset, lines[offset-1]))

	// Without a char_limit argument, WebOptions.CharLimit applies.
	res = extractResults(t, context.Background(), tl, map[string]any{"urls": []string{srv.URL + "/long.txt"}})
	path2, _ := check(t, res[0]["content"].(string), 3000)
	assert.Equal(t, path, path2, "same URL and text, same file")

	// Neither: config.DefaultExtractCharLimit (15000) keeps the page whole.
	tl = newExtractTools(t, WebOptions{AllowPrivateNetworks: true, CacheDir: cache})
	res = extractResults(t, context.Background(), tl, map[string]any{"urls": []string{srv.URL + "/long.txt"}})
	assert.Equal(t, full, res[0]["content"])

	// A cache dir that cannot be created: the cut content says so.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	tl = newExtractTools(t, WebOptions{AllowPrivateNetworks: true, CacheDir: filepath.Join(blocker, "sub")})
	res = extractResults(t, context.Background(), tl, map[string]any{"urls": []string{srv.URL + "/long.txt"}, "char_limit": 500})
	content := res[0]["content"].(string)
	assert.Nil(t, res[0]["error"])
	assert.Regexp(t, `\[Cut to char_limit=500 of \d+ characters\. The full text could not be saved: .+\]$`, content)
	assert.NotContains(t, content, "read_file(")
}

func TestExtractCutHeadTail(t *testing.T) {
	s := strings.Repeat("abcdefghi\n", 100) // 1,000 runes
	head, tail, omitted := extractCutHeadTail(s, 100)
	assert.Equal(t, 1000, utf8.RuneCountInString(head)+utf8.RuneCountInString(tail)+omitted)
	assert.True(t, strings.HasSuffix(head, "\n"), "the head ends at a line break")
	assert.True(t, strings.HasPrefix(s, head))
	assert.True(t, strings.HasSuffix(s, tail))
	assert.Equal(t, 70, utf8.RuneCountInString(head))
	assert.Equal(t, 30, utf8.RuneCountInString(tail))

	// No line breaks: exact 70/30 split, in runes.
	s = strings.Repeat("ü", 50)
	head, tail, omitted = extractCutHeadTail(s, 10)
	assert.Equal(t, []any{"üüüüüüü", "üüü", 40}, []any{head, tail, omitted})
	head, tail, omitted = extractCutHeadTail(s, 1)
	assert.Equal(t, []any{"", "ü", 49}, []any{head, tail, omitted})
}

func TestWebExtractBodyCap(t *testing.T) {
	chunk := strings.Repeat("x", 64<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("/big-streamed", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := 0; i < (5<<20)/len(chunk)+1; i++ { // 5 MiB + 64 KiB, chunked
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/big-declared", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(6<<20))
		fmt.Fprint(w, chunk) // the declared length alone refuses it
	})
	mux.HandleFunc("/exactly-cap", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("y", 5<<20))
	})
	srv, _ := countingServer(t, mux)
	tl := newExtractTools(t, WebOptions{AllowPrivateNetworks: true, CacheDir: t.TempDir()})
	urls := []string{srv.URL + "/big-streamed", srv.URL + "/big-declared", srv.URL + "/exactly-cap"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls, "char_limit": 100})
	const tooLarge = "Page too large: the response is over web_extract's 5 MiB limit, so it was not read"
	assert.Equal(t, failed(urls[0], tooLarge), res[0])
	assert.Equal(t, failed(urls[1], tooLarge), res[1])
	assert.Nil(t, res[2]["error"], "5 MiB exactly is read")
	assert.Contains(t, res[2]["content"], "characters omitted")
}

func TestWebExtractHTTPErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/broken", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(418) })
	mux.HandleFunc("/ok", serveAs("text/plain", "fine"))
	srv, _ := countingServer(t, mux)
	tl := newExtractTools(t, localWeb)
	urls := []string{srv.URL + "/missing", srv.URL + "/broken", srv.URL + "/teapot", srv.URL + "/ok"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	assert.Equal(t, failed(urls[0], "HTTP 404 Not Found"), res[0])
	assert.Equal(t, failed(urls[1], "HTTP 500 Internal Server Error"), res[1])
	assert.Equal(t, failed(urls[2], "HTTP 418 I'm a teapot"), res[2])
	assert.Equal(t, "fine", res[3]["content"])
}

func TestWebExtractTimeouts(t *testing.T) {
	mux := http.NewServeMux()
	slow := func(w http.ResponseWriter, r *http.Request) {
		select { // until the client gives up
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}
	mux.HandleFunc("/slow", slow)
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "first part")
		w.(http.Flusher).Flush()
		slow(w, r)
	})
	mux.HandleFunc("/fast", serveAs("text/plain", "quick"))
	srv, _ := countingServer(t, mux)
	tl := newExtractTools(t, localWeb)
	urls := []string{srv.URL + "/slow", srv.URL + "/fast", srv.URL + "/slow-body"}

	// The limits are long enough for a loaded machine to fetch /fast
	// within them, and far shorter than the slow pages' minute.
	t.Run("per-URL timeout", func(t *testing.T) {
		lim := defaultExtractLimits
		lim.perURL = 2 * time.Second
		start := time.Now()
		res := extractResults(t, withExtractLimits(context.Background(), lim), tl, map[string]any{"urls": urls})
		assert.Less(t, time.Since(start), 30*time.Second)
		assert.Equal(t, failed(urls[0], "Timed out after 2s fetching the page"), res[0])
		assert.Equal(t, map[string]any{"url": urls[1], "title": nil, "content": "quick", "error": nil}, res[1])
		assert.Equal(t, failed(urls[2], "Timed out after 2s fetching the page"), res[2])
	})
	t.Run("response header timeout", func(t *testing.T) {
		lim := defaultExtractLimits
		lim.responseHeader = 2 * time.Second
		res := extractResults(t, withExtractLimits(context.Background(), lim), tl, map[string]any{"urls": urls[:2]})
		assert.Contains(t, res[0]["error"], "Timed out fetching the page")
		assert.Nil(t, res[1]["error"])
	})
	t.Run("call deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res := extractResults(t, ctx, tl, map[string]any{"urls": urls[:2]})
		assert.Equal(t, failed(urls[0], "Timed out: the call's deadline passed before the page was fetched"), res[0])
		assert.Equal(t, "quick", res[1]["content"])
	})
}

func TestWebExtractRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	redirectTo := func(target string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", target)
			w.WriteHeader(http.StatusFound)
		}
	}
	mux.HandleFunc("/to-ftp", redirectTo("ftp://ftp.example.com/pub/file.txt"))
	mux.HandleFunc("/to-file", redirectTo("file:///etc/passwd"))
	mux.HandleFunc("/to-token", redirectTo("/hop/0?access_token=abcdef123456"))
	srv, hits := countingServer(t, mux)
	tl := newExtractTools(t, localWeb)

	urls := []string{srv.URL + "/hop/5", srv.URL + "/hop/6", srv.URL + "/to-ftp", srv.URL + "/to-file", srv.URL + "/to-token"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	assert.Equal(t, "arrived", res[0]["content"], "5 redirects are followed")
	assert.Equal(t, failed(urls[1], "Too many redirects: gave up after 5"), res[1])
	assert.Equal(t, failed(urls[2], `Refused to follow a redirect to a "ftp" URL: web_extract fetches only http and https URLs`), res[2])
	assert.Equal(t, failed(urls[3], `Refused to follow a redirect to a "file" URL: web_extract fetches only http and https URLs`), res[3])
	msg := res[4]["error"].(string)
	assert.Contains(t, msg, "Refused to follow a redirect to ")
	assert.Contains(t, msg, `query parameter "access_token"`)
	assert.NotContains(t, msg, "abcdef123456")
	assert.EqualValues(t, 6+6+1+1+1, hits.Load(), "no request after a refused redirect")
}

func TestWebExtractSchemes(t *testing.T) {
	srv, hits := countingServer(t, serveAs("text/plain", "ok"))
	tl := newExtractTools(t, localWeb)
	urls := []string{"ftp://ftp.example.com/file", "file:///etc/passwd", "example.com/page", "http://", srv.URL + "/fine"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	assert.Equal(t, failed(urls[0], `Unsupported URL scheme "ftp": web_extract fetches only http and https URLs`), res[0])
	assert.Equal(t, failed(urls[1], `Unsupported URL scheme "file": web_extract fetches only http and https URLs`), res[1])
	assert.Equal(t, failed(urls[2], "Invalid URL: it has no scheme; web_extract fetches http:// and https:// URLs"), res[2])
	assert.Equal(t, failed(urls[3], "Invalid URL: it has no host"), res[3])
	assert.Equal(t, "ok", res[4]["content"])
	assert.EqualValues(t, 1, hits.Load())

	// An internationalized host is looked up in its ASCII (IDNA) form.
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	var looked atomic.Value
	tl = newExtractTools(t, WebOptions{AllowPrivateNetworks: true, lookupIP: func(_ context.Context, host string) ([]netip.Addr, error) {
		looked.Store(host)
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	res = extractResults(t, context.Background(), tl, map[string]any{"urls": []string{fmt.Sprintf("http://bücher.test:%d/", port)}})
	assert.Equal(t, "ok", res[0]["content"])
	assert.Equal(t, "xn--bcher-kva.test", looked.Load())

	tl = newExtractTools(t, WebOptions{lookupIP: func(_ context.Context, host string) ([]netip.Addr, error) {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}})
	res = extractResults(t, context.Background(), tl, map[string]any{"urls": []string{"http://no-such-host.invalid/"}})
	assert.Equal(t, failed("http://no-such-host.invalid/", "Could not resolve host no-such-host.invalid: no such host"), res[0])
}

func TestWebExtractCredentials(t *testing.T) {
	srv, hits := countingServer(t, serveAs("text/plain", "public"))
	tl := newExtractTools(t, localWeb)
	s := srv.URL
	tests := []struct {
		url    string
		secret string // must not appear in the error
		why    string // must appear in the error
	}{
		{s + "/v1?api_key=abc123secretvalue", "abc123secretvalue", `query parameter "api_key"`},
		{s + "/v1?APIKEY=abc123secretvalue", "abc123secretvalue", `query parameter "APIKEY"`},
		{s + "/v1?apiKey=abc123secretvalue&page=2", "abc123secretvalue", `query parameter "apiKey"`},
		{s + "/cb?access_token=ya29.abcdefghij", "ya29.abcdefghij", `query parameter "access_token"`},
		{s + "/f?X-Amz-Signature=0123456789abcdef&X-Amz-Credential=AKID", "0123456789abcdef", `"X-Amz-Signature"`},
		{s + "/f?sig=Zm9vYmFyYmF6", "Zm9vYmFyYmF6", `query parameter "sig"`},
		{s + "/login?password=hunter2", "hunter2", `query parameter "password"`},
		{s + "/login?passwd=hunter2", "hunter2", `"passwd"`},
		{s + "/x?client_secret=s3cr3tvalue", "s3cr3tvalue", `"client_secret"`},
		{s + "/x?sessionid=9f8e7d6c5b", "9f8e7d6c5b", `"sessionid"`},
		{s + "/x?auth=Zm9vOmJhcg", "Zm9vOmJhcg", `"auth"`},
		{s + "/x?Authorization=Zm9vOmJhcg", "Zm9vOmJhcg", `"Authorization"`},
		{s + "/x?credentials=Zm9vOmJhcg", "Zm9vOmJhcg", `"credentials"`},
		{"https://user:hunter2@example.com/", "hunter2", "password in its user info"},
		{s + "/v1/sk-proj-AbCdEfGhIjKlMnOpQrSt1234567890/models", "AbCdEfGhIjKlMnOpQrSt1234567890", "a path segment looks like a credential (OpenAI-style API key"},
		{s + "/q?model=sk-ant-api03-abcdefghijklmnop_QRSTUV", "abcdefghijklmnop_QRSTUV", `the value of query parameter "model" looks like a credential (Anthropic API key`},
		{s + "/repo?t=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789", "GitHub token"},
		{s + "/repo?t=github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "11ABCDEFG0123456789_abcdefghijklmnop", "GitHub token"},
		{s + "/hook/xoxb-123456789012-abcdefghijkl", "123456789012-abcdefghijkl", "Slack token"},
		{s + "/s3?id=AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE", "AWS access key ID"},
		{s + "/maps?k=AIzaSyA1234567890abcdefghijklmnopqrstuv", "SyA1234567890abcdefghijklmnopqrstuv", "Google API key"},
		{s + "/search?x=tvly-dev-AbCdEf1234567890XyZ", "AbCdEf1234567890XyZ", "Tavily API key"},
		{s + "/h?x=Bearer%20abcdefghijklmnop1234567890", "abcdefghijklmnop1234567890", "Bearer token"},
		{s + "/j/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl", "eyJzdWIiOiIxMjM0NTY3ODkwIn0", "JSON Web Token"},
		{s + "/frag#access_token=abcdef123456&state=x", "abcdef123456", `fragment parameter "access_token"`},
		{s + "/enc?x=sk%2Dant%2Dapi03%2Dabcdefghijklmnop_QRSTUV", "abcdefghijklmnop_QRSTUV", "Anthropic API key"},
		{s + "/odd?password:hunter2=1", "hunter2", "a query parameter with a credential-like name may hold a credential"},
		{"http://bad host/?api_key=abc123secretvalue", "abc123secretvalue", `query parameter "api_key"`},
		{"https://:hunter2@example.com/", "hunter2", "password in its user info"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			out := extractCall(t, context.Background(), tl, map[string]any{"urls": []string{srv.URL + "/fine", tc.url}})
			require.NotContains(t, out, "results", "the whole call is refused")
			msg := out["error"].(string)
			assert.True(t, strings.HasPrefix(msg, "Refused: URL 2"), msg)
			assert.Contains(t, msg, tc.why)
			assert.Contains(t, msg, "Remove the credential from the URL")
			assert.NotContains(t, msg, tc.secret)
		})
	}
	assert.Zero(t, hits.Load(), "nothing is fetched when a URL carries a credential")

	ordinary := []string{
		s + "/articles?page=2", s + "/search?q=monkey", s + "/docs/keyboard-shortcuts", s + "/list?sort=key",
		s + "/search?q=api_key+leak", s + "/search?keywords=token+ring", s + "/books?author=Tolkien",
		s + "/tasks/task-list-management-for-teams-and-things", s + "/py/sk-learn-tutorial-for-beginners-2024",
		s + "/design?signup=1&authority=x", s + "/q?q=bearer+bonds", s + "/blog/2024/03/ask-an-expert-for-keys",
		s + "/empty?token=&api_key", "https://user@example.com/", "https://user:@example.com/", "https://en.wikipedia.org/wiki/Public-key_cryptography",
	}
	for _, u := range ordinary {
		_, why, found := urlCredential(u)
		assert.False(t, found, "%s: %s", u, why)
	}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": ordinary[:5]})
	for _, r := range res {
		assert.Nil(t, r["error"])
		assert.Equal(t, "public", r["content"])
	}
}

func TestSensitiveParamName(t *testing.T) {
	for name, want := range map[string]bool{
		"api_key": true, "apikey": true, "APIKey": true, "key": true, "x-api-key": true, "access_token": true,
		"token": true, "X-Amz-Signature": true, "X-Amz-Security-Token": true, "sig": true, "url_sig": true, "hmacsig": true,
		"client_secret": true, "password": true, "passwd": true, "auth": true, "oauth_verifier": true, "Authorization": true,
		"authToken": true, "credential": true, "session": true, "PHPSESSID": true, "jsessionid": true, "session_id": true,
		"page": false, "q": false, "sort": false, "keyword": false, "keywords": false, "field-keywords": false,
		"author": false, "authors": false, "authority": false, "signup": false, "design": false, "monkey": false, "id": false,
	} {
		assert.Equal(t, want, sensitiveParamName(name), name)
	}
}

// FuzzURLCredential checks that a refusal never shows a key-shaped string.
func FuzzURLCredential(f *testing.F) {
	for _, s := range []string{"https://x.com/?api_key=abc", "https://u:p@x.com/", "https://x.com/sk-ant-api03-abcdefghijklmnopqrs",
		"https://x.com/#a=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.x", "http://bad host/?token=1", "https://x.com/?q=%zz&key=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		shown, why, found := urlCredential(raw)
		if !found {
			return
		}
		for _, s := range []string{shown, why} {
			if name, _, ok := findSecretShape(s); ok {
				t.Fatalf("refusal for %q shows a %s: %q", raw, name, s)
			}
		}
	})
}

// FuzzHTMLToMarkdown checks that no page makes the extraction fail or
// panic.
func FuzzHTMLToMarkdown(f *testing.F) {
	f.Add(articlePage)
	f.Add(`<html><head><base href="javascript:x"><title>t</title></head><body><a href="//x">y</a><table><tr><td>1`)
	f.Add("")
	base, _ := url.Parse("https://example.com/a/b")
	f.Fuzz(func(t *testing.T, page string) {
		if _, _, err := htmlToMarkdown(context.Background(), page, base); err != nil {
			t.Fatal(err)
		}
	})
}
