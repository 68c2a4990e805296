package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// articlePage is a news-site page: the article is surrounded by the chrome
// web_extract must strip (navigation, cookie banner, sidebar, footer).
func articlePage(n int) string {
	return fmt.Sprintf(`<!doctype html>
<html><head><title>Sandboxing note %d | Example News</title>
<script>window.tracking = true;</script><style>body{font-family:sans-serif}</style></head>
<body>
<div class="cookie-banner">We use cookies. Accept all cookies to continue.</div>
<header><nav><a href="/">Home</a> <a href="/world">World</a> <a href="/subscribe">Subscribe to our newsletter</a></nav></header>
<main><article>
<h1>Sandboxing note %d</h1>
<p class="byline">By A. Writer</p>
<p>WebAssembly gives Python a capability sandbox: note %d explains how a WASI build of CPython sees only the directories the host mounts, and nothing else on the machine.</p>
<p>The interpreter cannot open sockets or start processes, because WASI preview 1 offers neither; the host decides which tools exist and counts every call the script makes.</p>
<p>Read the <a href="/docs/wasi">WASI documentation</a> for the details of preopened directories and capabilities.</p>
</article></main>
<aside><h3>Most read</h3><ul><li><a href="/a">Celebrity gossip</a></li><li><a href="/b">Ten weird tricks</a></li></ul></aside>
<footer>Copyright Example News. All rights reserved. Privacy policy. Terms of use.</footer>
</body></html>`, n, n, n)
}

// fakeSearXNG serves a SearXNG JSON API whose results point at article
// pages on the same server, and counts the page fetches.
func fakeSearXNG(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var pageHits atomic.Int32
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") != "json" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		type hit struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		}
		var results []hit
		if r.URL.Query().Get("pageno") == "" || r.URL.Query().Get("pageno") == "1" {
			for i := 1; i <= 3; i++ {
				results = append(results, hit{fmt.Sprintf("Sandboxing note %d", i), fmt.Sprintf("%s/articles/%d", srv.URL, i), "A note about <b>WebAssembly</b> sandboxes."})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"query": r.URL.Query().Get("q"), "results": results})
	})
	mux.HandleFunc("/articles/", func(w http.ResponseWriter, r *http.Request) {
		pageHits.Add(1)
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/articles/"), "%d", &n)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, articlePage(n))
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &pageHits
}

type researchOutput struct {
	Searched bool   `json:"searched"`
	Query    string `json:"query"`
	Pages    []struct {
		Position int     `json:"position"`
		URL      string  `json:"url"`
		Title    string  `json:"title"`
		Summary  string  `json:"summary"`
		Chars    int     `json:"chars"`
		Error    *string `json:"error"`
	} `json:"pages"`
}

// TestWebResearch runs the multi-step web research example against a local
// SearXNG-compatible server and local pages, in every mode: with private
// networks allowed every page is extracted; without, every URL is blocked
// with the exact message and no page is fetched.
func TestWebResearch(t *testing.T) {
	forModes(t, allModes, func(t *testing.T, m runMode) {
		for _, allow := range []bool{true, false} {
			t.Run(fmt.Sprintf("allow_private_networks=%v", allow), func(t *testing.T) {
				srv, hits := fakeSearXNG(t)
				e := newEnvIn(t, m)
				cfg := fmt.Sprintf("web:\n  search:\n    provider: searxng\n    url: %s\n  allow_private_networks: %v\n", srv.URL, allow)
				require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg), 0o600))
				code, res, stderr := e.runFile("../../testdata/examples/web_research.py")
				require.Equal(t, 0, code, res.Output+stderr)
				var got researchOutput
				require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
				require.True(t, got.Searched)
				require.Len(t, got.Pages, 3)
				require.Equal(t, 2, res.ToolCallsMade)
				for i, p := range got.Pages {
					require.Equal(t, i+1, p.Position)
					require.Equal(t, fmt.Sprintf("%s/articles/%d", srv.URL, i+1), p.URL)
					if !allow {
						require.NotNil(t, p.Error)
						require.Equal(t, "Blocked: URL targets a private or internal network address", *p.Error)
						require.Zero(t, p.Chars)
						continue
					}
					require.Nil(t, p.Error, "page %d", i+1)
					require.Contains(t, p.Title, fmt.Sprintf("Sandboxing note %d", i+1))
					require.Contains(t, p.Summary, fmt.Sprintf("note %d explains how a WASI build of CPython", i+1))
					require.Greater(t, p.Chars, 200)
				}
				if allow {
					require.EqualValues(t, 3, hits.Load())
				} else {
					require.Zero(t, hits.Load(), "a blocked URL is never fetched")
				}
			})
		}
	})
}

// TestWebExtractContent checks what a script gets from a page: the article
// as markdown, without the site's chrome.
func TestWebExtractContent(t *testing.T) {
	srv, _ := fakeSearXNG(t)
	e := newEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("web:\n  allow_private_networks: true\n"), 0o600))
	code, res, _ := e.run(fmt.Sprintf(`from hermes_tools import web_extract
r = web_extract([%q])["results"][0]
print(r["error"])
print(r["content"])
`, srv.URL+"/articles/7"))
	require.Equal(t, 0, code, res.Output)
	require.True(t, strings.HasPrefix(res.Output, "None\n"), res.Output)
	for _, want := range []string{"note 7 explains how a WASI build of CPython", "cannot open sockets", "[WASI documentation](" + srv.URL + "/docs/wasi)"} {
		require.Contains(t, res.Output, want)
	}
	for _, chrome := range []string{"Subscribe to our newsletter", "Accept all cookies", "Celebrity gossip", "All rights reserved", "window.tracking", "font-family"} {
		require.NotContains(t, res.Output, chrome)
	}
}

// TestWebSearchKeyStaysOnTheHost: a keyed provider's key reaches the
// provider, never the script, in every mode, whatever the variable is
// called and even when listed in env_passthrough.
func TestWebSearchKeyStaysOnTheHost(t *testing.T) {
	const secret = "BSA-secret-key-123"
	forModes(t, allModes, func(t *testing.T, m runMode) {
		for _, keyVar := range []string{"BRAVE_API_KEY", "SEARCH_CFG"} {
			t.Run(keyVar, func(t *testing.T) {
				var sawKey atomic.Bool
				brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sawKey.Store(r.Header.Get("X-Subscription-Token") == secret)
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"type": "search", "web": {"type": "search", "results": [{"title": "Brave result", "url": "https://example.com/r", "description": "found it"}]}}`)
				}))
				t.Cleanup(brave.Close)
				e := newEnvIn(t, m)
				t.Setenv(keyVar, secret)
				cfg := fmt.Sprintf("terminal:\n  env_passthrough: [%s]\nweb:\n  search:\n    provider: brave\n    url: %s\n    api_key_env: %s\n", keyVar, brave.URL, keyVar)
				require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg), 0o600))
				code, res, stderr := e.run(fmt.Sprintf(`import os, json
from hermes_tools import web_search, terminal
r = web_search("x", limit=3)
print(json.dumps({"in_env": %q in os.environ, "in_shell": %q in terminal("env")["output"],
                  "titles": [w["title"] for w in r["data"]["web"]]}))
`, keyVar, secret), "--log-level", "debug")
				require.Equal(t, 0, code, res.Output)
				require.JSONEq(t, `{"in_env": false, "in_shell": false, "titles": ["Brave result"]}`, res.Output)
				require.True(t, sawKey.Load(), "the provider got the key")
				require.NotContains(t, res.Output+stderr, secret)
				require.Contains(t, stderr, "refusing to pass through host-managed credentials ["+keyVar+"]")
			})
		}
	})
}

// TestWebExtractCacheStaysUnderCap is the cache-filling attack: one strict run with confined tools
// and a 10 MiB disk budget extracts 40 distinct large pages (URLs that differ only in their
// query). The full texts web_extract saves under $HERMES_HOME/cache/web stay under
// web.extract.cache_max_mb (1 MiB here); they used to add up to all 40 (16 MB), and stay.
func TestWebExtractCacheStaysUnderCap(t *testing.T) {
	const pageSize = 400_000
	mux := http.NewServeMux()
	mux.HandleFunc("/p", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := "page " + r.URL.Query().Get("i") + " of a large site\n"
		fmt.Fprint(w, strings.Repeat(line, pageSize/len(line)))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e := newEnv(t)
	cfg := "code_execution:\n  disk_limit_mb: 10\n  confine_tools_to_workdir: true\n" +
		"web:\n  allow_private_networks: true\n  extract:\n    char_limit: 100\n    cache_max_mb: 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg), 0o600))
	code, res, stderr := e.run(fmt.Sprintf(`from hermes_tools import web_extract
saved = 0
for call in range(8):
    urls = ["%s/p?i=%%d" %% (call * 5 + i) for i in range(5)]
    for r in web_extract(urls)["results"]:
        assert r["error"] is None, r
        saved += "Full text saved to" in r["content"]
print(saved)
`, srv.URL))
	require.Equal(t, 0, code, res.Output+stderr)
	require.Equal(t, "40\n", res.Output, "every cut page was saved when it was extracted")
	files, err := filepath.Glob(filepath.Join(e.home, "cache", "web", "web-*.md"))
	require.NoError(t, err)
	var total int64
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		total += fi.Size()
	}
	require.LessOrEqual(t, total, int64(1<<20), "%d saved pages, %d bytes", len(files), total)
	require.NotEmpty(t, files)
}
