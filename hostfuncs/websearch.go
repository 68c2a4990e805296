package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// web_search asks one provider (web.search.provider) through the small
// searchProvider interface; the providers live in websearch_providers.go.
// This file holds what they share: argument checks, paging, de-duplication
// and clean-up of the hits, the HTTP exchange, and error wording.

// errNoSearchProvider is web_search's answer while no provider is set.
const errNoSearchProvider = "No web search provider configured. Set web.search.provider (searxng, brave or tavily) in config.yaml."

const (
	// webSearchMaxLimit is the largest limit web_search honours; larger ones
	// are clamped to it, as 0 is raised to 1.
	webSearchMaxLimit = 100
	// searchHTTPTimeout bounds each request of the default client, body
	// included.
	searchHTTPTimeout = 20 * time.Second
	// searchMaxBody caps the bytes read from one provider answer.
	searchMaxBody = 8 << 20
	// searchMaxRedirects bounds the redirects followed per request.
	searchMaxRedirects = 5
	// searchUserAgent identifies web_search to the providers.
	searchUserAgent = "hermes-wasm-exec/0.1 (web_search)"
	// searchDetailMax caps the provider's own message quoted in an error.
	searchDetailMax = 300
)

// searchDefaultClient is web_search's HTTP client unless the searchClient
// test seam replaces it. The provider URL is operator configuration, so
// it is not subject to web_extract's SSRF guard: a SearXNG on 127.0.0.1
// must work.
var searchDefaultClient = &http.Client{
	Timeout:   searchHTTPTimeout,
	Transport: http.DefaultTransport.(*http.Transport).Clone(),
}

type webSearchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// searchHit is one search result as a provider gave it.
type searchHit struct {
	title, url, description string
}

// searchProvider is one web search back-end.
type searchProvider interface {
	// maxPages bounds the requests one web_search call makes for limit
	// results.
	maxPages(limit int) int
	// page fetches page n (0-based) of the results for query, limit being
	// the number wanted in all. more reports whether a further page may
	// hold more results. Errors are *searchFailure values.
	page(ctx context.Context, s *searchSession, query string, n, limit int) (hits []searchHit, more bool, err error)
	// explain words a failure for the script, saying what to do about it.
	explain(f *searchFailure) string
}

// webSearch implements web_search.
func (t *Tools) webSearch(ctx context.Context, raw json.RawMessage) result {
	a := webSearchArgs{Limit: 5}
	if r := decodeArgs("web_search", raw, &a); r != nil {
		return r
	}
	query := strings.TrimSpace(a.Query)
	if query == "" {
		return result{"error": "Invalid arguments for web_search: query is required"}
	}
	if a.Limit < 0 {
		return result{"error": fmt.Sprintf("Invalid arguments for web_search: limit must be positive, got %d", a.Limit)}
	}
	limit := min(max(a.Limit, 1), webSearchMaxLimit)

	p, msg := newSearchProvider(t.web, query)
	if msg != "" {
		return searchFailed(msg, t.web.APIKey)
	}
	s := &searchSession{client: t.searchHTTPClient(), key: t.web.APIKey}
	hits, err := collectSearch(ctx, p, s, query, limit)
	if err != nil {
		var f *searchFailure
		if errors.As(err, &f) {
			return searchFailed(p.explain(f), s.key)
		}
		return searchFailed(err.Error(), s.key)
	}
	web := make([]map[string]any, 0, len(hits))
	for i, h := range hits {
		web = append(web, map[string]any{
			"title":       searchRedact(h.title, s.key),
			"url":         searchRedact(h.url, s.key),
			"description": searchRedact(h.description, s.key),
			"position":    i + 1,
		})
	}
	return result{"success": true, "data": map[string]any{"web": web}}
}

// searchFailed is web_search's failure result, the key scrubbed from msg.
func searchFailed(msg, key string) result {
	return result{"success": false, "error": searchRedact(msg, key)}
}

// searchRedact replaces any occurrence of the API key in s.
func searchRedact(s, key string) string {
	if key == "" {
		return s
	}
	s = strings.ReplaceAll(s, key, "[redacted]")
	if esc := url.QueryEscape(key); esc != key {
		s = strings.ReplaceAll(s, esc, "[redacted]")
	}
	return s
}

// collectSearch gathers up to limit clean, distinct hits, page after page
// while the last page brought new results. A page after the first that
// fails ends the paging with what was gathered (a free plan's rate limit
// should not lose the first page); a cancelled ctx always fails.
func collectSearch(ctx context.Context, p searchProvider, s *searchSession, query string, limit int) ([]searchHit, error) {
	seen := make(map[string]bool)
	var out []searchHit
	for n := 0; n < p.maxPages(limit) && len(out) < limit; n++ {
		hits, more, err := p.page(ctx, s, query, n, limit)
		if err != nil {
			if n == 0 || ctx.Err() != nil {
				return nil, err
			}
			break
		}
		added := 0
		for _, h := range hits {
			h = searchHit{
				title:       searchCleanText(h.title),
				url:         strings.TrimSpace(h.url),
				description: searchCleanText(h.description),
			}
			if h.url == "" || seen[h.url] {
				continue
			}
			seen[h.url] = true
			added++
			out = append(out, h)
			if len(out) == limit {
				break
			}
		}
		if !more || added == 0 {
			break
		}
	}
	return out, nil
}

// searchHTTPClient returns the client for this call: the test seam's or
// the default one, with web_search's redirect policy.
func (t *Tools) searchHTTPClient() *http.Client {
	base := t.web.searchClient
	if base == nil {
		base = searchDefaultClient
	}
	c := *base
	c.CheckRedirect = searchCheckRedirect
	return &c
}

// searchCheckRedirect follows at most searchMaxRedirects redirects, and
// drops the credential headers when one leaves the original host or
// downgrades from https (Go keeps X-Subscription-Token otherwise).
func searchCheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= searchMaxRedirects {
		return fmt.Errorf("stopped after %d redirects", searchMaxRedirects)
	}
	first := via[0].URL
	if req.URL.Host != first.Host || (first.Scheme == "https" && req.URL.Scheme != "https") {
		req.Header.Del("Authorization")
		req.Header.Del("X-Subscription-Token")
	}
	return nil
}

// searchSession is the HTTP side of one web_search call.
type searchSession struct {
	client *http.Client
	key    string
}

// Kinds of searchFailure.
const (
	searchFailUnreachable = iota // no answer: connection refused, DNS, TLS...
	searchFailTimeout            // the client's timeout expired
	searchFailCancelled          // the call's ctx ended (script timeout or interrupt)
	searchFailStatus             // an HTTP error status
	searchFailNotJSON            // a 2xx answer that is not JSON
	searchFailShape              // JSON, but not in the documented shape
	searchFailTooLarge           // an answer over searchMaxBody
)

// searchFailure describes why a provider request failed; the provider's
// explain turns it into the message the script sees.
type searchFailure struct {
	kind int
	err  error
	// timeout is the client's timeout, for searchFailTimeout (0 if none).
	timeout time.Duration
	// For searchFailStatus, searchFailNotJSON and searchFailShape: the HTTP status, the
	// provider's error code and message when its body carried them, the
	// Retry-After header, the Content-Type and the start of the body.
	code        int
	apiCode     string
	detail      string
	retryAfter  string
	contentType string
	snippet     string
}

func (f *searchFailure) Error() string {
	return fmt.Sprintf("web search failure kind %d: HTTP %d %s %v", f.kind, f.code, f.detail, f.err)
}

// doJSON sends req and decodes its JSON answer into out. Failures are
// *searchFailure values.
func (s *searchSession) doJSON(req *http.Request, out any) error {
	ctx := req.Context()
	req.Header.Set("User-Agent", searchUserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return s.transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, searchMaxBody+1))
	if err != nil {
		return s.transportFailure(ctx, err)
	}
	if len(body) > searchMaxBody {
		return &searchFailure{kind: searchFailTooLarge, code: resp.StatusCode}
	}
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiCode, detail := searchErrorDetail(body, ct)
		return &searchFailure{kind: searchFailStatus, code: resp.StatusCode, apiCode: apiCode, detail: detail,
			retryAfter: strings.TrimSpace(resp.Header.Get("Retry-After")), contentType: ct}
	}
	if !json.Valid(body) {
		return &searchFailure{kind: searchFailNotJSON, code: resp.StatusCode, contentType: ct, snippet: searchSnippet(string(body), 80)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			err = fmt.Errorf("%q is a JSON %s where %s was expected", te.Field, te.Value, searchJSONKind(te.Type))
		}
		return &searchFailure{kind: searchFailShape, err: err, code: resp.StatusCode, contentType: ct, snippet: searchSnippet(string(body), 80)}
	}
	return nil
}

// searchJSONKind names the JSON value that decodes into t.
func searchJSONKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Pointer:
		return searchJSONKind(t.Elem())
	}
	return "a number"
}

// transportFailure classifies an error of the exchange itself.
func (s *searchSession) transportFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &searchFailure{kind: searchFailCancelled, err: context.Cause(ctx)}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &searchFailure{kind: searchFailTimeout, err: err, timeout: s.client.Timeout}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL (with the query) is noise in a message
	}
	return &searchFailure{kind: searchFailUnreachable, err: err}
}

// searchErrorDetail pulls the provider's error code and message from an
// error answer: Brave's {"error": {"code", "detail"}}, Tavily's
// {"detail": {"error"}}, other common JSON shapes, or the text of an HTML
// or plain page.
func searchErrorDetail(body []byte, contentType string) (code, detail string) {
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		str := func(v any) string { s, _ := v.(string); return s }
		switch e := m["error"].(type) {
		case map[string]any:
			code = str(e["code"])
			detail = str(e["detail"])
			if detail == "" {
				detail = str(e["message"])
			}
		case string:
			detail = e
		}
		if detail == "" {
			switch d := m["detail"].(type) {
			case map[string]any:
				detail = str(d["error"])
			case string:
				detail = d
			}
		}
		if detail == "" {
			detail = str(m["message"])
		}
		return code, searchSnippet(detail, searchDetailMax)
	}
	text := string(body)
	if strings.Contains(contentType, "html") || strings.HasPrefix(strings.TrimSpace(text), "<") {
		text = searchCleanText(text)
	}
	return "", searchSnippet(text, searchDetailMax)
}

// searchSnippet is s on one line, control characters dropped, cut to
// limit runes with an ellipsis.
func searchSnippet(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > limit {
		r := []rune(s)
		s = string(r[:limit]) + "…"
	}
	return s
}

// searchCleanText strips HTML tags, decodes entities and collapses white
// space: SearXNG and Brave mark the query terms with <strong> and the like.
func searchCleanText(s string) string {
	if strings.ContainsAny(s, "<&") {
		s = html.UnescapeString(searchStripTags(s))
	}
	return strings.Join(strings.Fields(s), " ")
}

// searchInlineTags are removed without a trace; other tags leave a space
// so that words on both sides of, say, <br> stay apart.
var searchInlineTags = map[string]bool{
	"a": true, "abbr": true, "b": true, "bdi": true, "cite": true, "code": true, "em": true,
	"font": true, "i": true, "kbd": true, "mark": true, "q": true, "s": true, "small": true,
	"span": true, "strong": true, "sub": true, "sup": true, "u": true, "wbr": true,
}

// searchStripTags removes HTML tags and comments from s. A '<' not
// followed by a letter, '/', '!' or '?', or never closed, is kept as text
// ("a < b").
func searchStripTags(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '<' || i+1 >= len(s) || !searchTagStart(s[i+1]) {
			b.WriteByte(c)
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "<!--") {
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				break // an unclosed comment hides the rest
			}
			b.WriteByte(' ')
			i += 4 + end + 3
			continue
		}
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			b.WriteString(s[i:])
			break
		}
		name := strings.ToLower(strings.TrimLeft(s[i+1:i+end], "/!?"))
		if j := strings.IndexFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }); j >= 0 {
			name = name[:j]
		}
		if !searchInlineTags[name] {
			b.WriteByte(' ')
		}
		i += end + 1
	}
	return b.String()
}

func searchTagStart(c byte) bool {
	return c == '/' || c == '!' || c == '?' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// searchBaseURL parses the operator's web.search.url.
func searchBaseURL(raw string) (*url.URL, string) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Sprintf("web.search.url %q is not a valid http(s) URL. Set it to the provider's base URL, such as http://127.0.0.1:8888 for SearXNG.", raw)
	}
	return u, ""
}

// searchEndpoint is base with path appended to its own path, and params
// added to its query.
func searchEndpoint(base *url.URL, path string, params url.Values) string {
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.Fragment = ""
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Wording shared by the providers.

// searchGenericExplain words f for a provider called who in messages
// ("Brave Search API at https://..."); hint is appended to failures that
// suggest a wrong web.search.url.
func searchGenericExplain(who, hint string, f *searchFailure) string {
	detail := ""
	if f.detail != "" {
		detail = ": " + f.detail
	}
	switch f.kind {
	case searchFailCancelled:
		return fmt.Sprintf("web_search was cancelled before %s answered (%v): the script was interrupted or reached its time limit.", who, f.err)
	case searchFailTimeout:
		within := ""
		if f.timeout > 0 {
			within = " within " + f.timeout.String()
		}
		return fmt.Sprintf("%s did not answer%s (timed out). It may be overloaded or unreachable; try again later with fewer searches.", who, within)
	case searchFailUnreachable:
		return strings.TrimSpace(fmt.Sprintf("Could not reach %s: %v. Check the network connection of the host running hermes-wasm-exec. %s", who, f.err, hint))
	case searchFailTooLarge:
		return strings.TrimSpace(fmt.Sprintf("%s answered with more than %d MiB; web_search does not read answers that large. %s", who, searchMaxBody>>20, hint))
	case searchFailNotJSON:
		return strings.TrimSpace(fmt.Sprintf("%s answered with something that is not JSON (HTTP %d, Content-Type %q, starting %q). %s", who, f.code, f.contentType, f.snippet, hint))
	case searchFailShape:
		return strings.TrimSpace(fmt.Sprintf("%s answered with JSON in an unexpected shape (%v). %s", who, f.err, hint))
	}
	switch {
	case f.code == http.StatusTooManyRequests:
		wait := "a while"
		if secs, err := strconv.Atoi(f.retryAfter); err == nil && secs >= 0 {
			wait = fmt.Sprintf("%d seconds (Retry-After)", secs)
		} else if f.retryAfter != "" {
			wait = "until " + searchSnippet(f.retryAfter, 40) + " (Retry-After)"
		}
		return fmt.Sprintf("%s is rate limiting web_search (HTTP 429%s). Wait %s before searching again, and make fewer searches per script.", who, detail, wait)
	case f.code >= 500:
		return fmt.Sprintf("%s failed with HTTP %d%s. The problem is on the provider's side; try again later.", who, f.code, detail)
	case f.code == http.StatusNotFound:
		return strings.TrimSpace(fmt.Sprintf("%s answered HTTP 404 (not found)%s. %s", who, detail, hint))
	}
	return fmt.Sprintf("%s rejected the search with HTTP %d%s.", who, f.code, detail)
}

// searchKeyRejected is the message for a key the provider refused.
func searchKeyRejected(keyEnv, provider string, f *searchFailure) string {
	detail := ""
	if f.detail != "" {
		detail = ": " + f.detail
	}
	return fmt.Sprintf("The key in $%s was rejected by %s (HTTP %d%s). Check that the variable holds a valid %s API key with an active subscription, in the environment of the host running hermes-wasm-exec (web.search.api_key_env names the variable).",
		keyEnv, provider, f.code, detail, provider)
}
