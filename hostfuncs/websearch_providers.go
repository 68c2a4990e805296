package hostfuncs

// The web_search providers. API documentation they follow:
//
// SearXNG
//   - https://docs.searxng.org/dev/search_api.html — GET /search (or /),
//     q (required), pageno (default 1), format=json; "Format needs to be
//     activated in settings search".
//   - searx/webapp.py (github.com/searxng/searxng): a format missing from
//     search.formats in settings.yml is refused with a bare HTTP 403.
//   - Answer: {"query", "number_of_results", "results": [{"url", "title",
//     "content", "engine", ...}], "answers", "corrections", "infoboxes",
//     "suggestions", "unresponsive_engines": [[engine, reason], ...]}.
//
// Brave Search API
//   - https://api-dashboard.search.brave.com/api-reference/web/search/get
//     (earlier https://api.search.brave.com/app/documentation/web-search/query)
//     — GET https://api.search.brave.com/res/v1/web/search, header
//     X-Subscription-Token; q at most 400 characters and 50 words; count
//     1..20 (default 20); offset 0..9 counts PAGES of count results to skip
//     (not results), so 20 × 5 pages reach web_search's 100.
//   - Answer: {"type": "search", "query": {"original",
//     "more_results_available"}, "web": {"type": "search", "results":
//     [{"title", "url", "description", ...}]}}; titles and descriptions
//     carry <strong> and entities. Errors: {"type": "ErrorResponse",
//     "error": {"id", "status", "code", "detail", "meta"}}; an invalid key
//     is HTTP 422 with code SUBSCRIPTION_TOKEN_INVALID, not a 401.
//
// Tavily
//   - https://docs.tavily.com/api-reference/introduction — base
//     https://api.tavily.com, "Authorization: Bearer tvly-..." on every
//     endpoint.
//   - https://docs.tavily.com/api-reference/endpoint/search — POST /search,
//     JSON {"query", "max_results" (default 5, at most 20), ...}; answer
//     {"query", "answer", "images", "results": [{"title", "url", "content",
//     "score", "raw_content"}], "response_time"}. No paging.
//   - https://help.tavily.com/articles/8645538886-understanding-http-errors
//     — 400, 401 (missing or invalid key), 429 (rate), 432 (plan limit),
//     433 (pay-as-you-go limit), 500; errors are {"detail": {"error"}}.
//   - The official client (tavily-python) sends only the Bearer header; the
//     old "api_key" body field is no longer documented, so it is not sent.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

const (
	// searxngMaxPages bounds the SearXNG pages of one call.
	searxngMaxPages = 5

	braveDefaultBase = "https://api.search.brave.com"
	bravePath        = "/res/v1/web/search"
	braveMaxCount    = 20
	braveMaxOffset   = 9
	braveMaxQuery    = 400
	braveMaxWords    = 50

	tavilyDefaultBase = "https://api.tavily.com"
	tavilyPath        = "/search"
	tavilyMaxResults  = 20
)

// newSearchProvider returns the provider configured in w, or the message
// saying what to configure.
func newSearchProvider(w WebOptions, query string) (searchProvider, string) {
	switch w.Provider {
	case "":
		return nil, errNoSearchProvider
	case config.ProviderSearXNG:
		if strings.TrimSpace(w.URL) == "" {
			return nil, "web_search needs the address of the SearXNG server: set web.search.url in config.yaml to its base URL, such as http://127.0.0.1:8888."
		}
		base, msg := searchBaseURL(w.URL)
		if msg != "" {
			return nil, msg
		}
		return &searxngProvider{base: base, shown: w.URL}, ""
	case config.ProviderBrave, config.ProviderTavily:
		name, def := "Brave Search", braveDefaultBase
		if w.Provider == config.ProviderTavily {
			name, def = "Tavily", tavilyDefaultBase
		}
		keyEnv := w.APIKeyEnv
		if keyEnv == "" {
			keyEnv = config.DefaultAPIKeyEnv[w.Provider] // as config fills it
		}
		if w.APIKey == "" {
			return nil, fmt.Sprintf("web_search with %s needs an API key: set %s in the environment of the host running hermes-wasm-exec (web.search.api_key_env names the variable).", name, keyEnv)
		}
		raw := def
		if strings.TrimSpace(w.URL) != "" {
			raw = w.URL
		}
		base, msg := searchBaseURL(raw)
		if msg != "" {
			return nil, msg
		}
		ep := searchAPI{base: base, shown: strings.TrimRight(raw, "/"), keyEnv: keyEnv, custom: raw != def}
		if w.Provider == config.ProviderTavily {
			return &tavilyProvider{ep}, ""
		}
		if n, words := utf8.RuneCountInString(query), len(strings.Fields(query)); n > braveMaxQuery || words > braveMaxWords {
			return nil, fmt.Sprintf("Brave Search accepts queries of at most %d characters and %d words; this one has %d characters and %d words. Shorten the query.", braveMaxQuery, braveMaxWords, n, words)
		}
		return &braveProvider{ep}, ""
	}
	return nil, fmt.Sprintf("Unknown web search provider %q in web.search.provider. Valid providers: %s.", w.Provider, strings.Join(config.Providers, ", "))
}

// searchString is v when it is a JSON string, else "".
func searchString(v any) string {
	s, _ := v.(string)
	return s
}

// searchRequestFailure wraps an error building a request.
func searchRequestFailure(err error) error {
	return &searchFailure{kind: searchFailUnreachable, err: err}
}

// SearXNG.

// searchFailEngines: SearXNG found nothing because its engines failed.
const searchFailEngines = searchFailTooLarge + 1

type searxngProvider struct {
	base  *url.URL
	shown string // web.search.url as configured
}

type searxngAnswer struct {
	Results             []map[string]any `json:"results"`
	UnresponsiveEngines []any            `json:"unresponsive_engines"`
}

func (p *searxngProvider) maxPages(int) int { return searxngMaxPages }

func (p *searxngProvider) page(ctx context.Context, s *searchSession, query string, n, _ int) ([]searchHit, bool, error) {
	u := searchEndpoint(p.base, "/search", url.Values{"q": {query}, "format": {"json"}, "pageno": {strconv.Itoa(n + 1)}})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, searchRequestFailure(err)
	}
	var a searxngAnswer
	if err := s.doJSON(req, &a); err != nil {
		return nil, false, err
	}
	hits := make([]searchHit, 0, len(a.Results))
	for _, r := range a.Results {
		hits = append(hits, searchHit{title: searchString(r["title"]), url: searchString(r["url"]), description: searchString(r["content"])})
	}
	if len(hits) == 0 && n == 0 && len(a.UnresponsiveEngines) > 0 {
		return nil, false, &searchFailure{kind: searchFailEngines, detail: searxngEngines(a.UnresponsiveEngines)}
	}
	return hits, len(hits) > 0, nil
}

// searxngEngines lists unresponsive_engines ([[name, reason], ...]) as
// "name (reason), ...".
func searxngEngines(list []any) string {
	var parts []string
	for _, e := range list {
		pair, _ := e.([]any)
		switch {
		case len(pair) >= 2:
			parts = append(parts, fmt.Sprintf("%s (%s)", searchString(pair[0]), searchString(pair[1])))
		case len(pair) == 1:
			parts = append(parts, searchString(pair[0]))
		}
	}
	return searchSnippet(strings.Join(parts, ", "), searchDetailMax)
}

func (p *searxngProvider) explain(f *searchFailure) string {
	who := "SearXNG at " + p.shown
	const hint = "Check web.search.url and that SearXNG runs with the json format enabled (search.formats: [html, json] in its settings.yml)."
	switch {
	case f.kind == searchFailUnreachable:
		return fmt.Sprintf("Could not reach the SearXNG server at %s: %v. %s", p.shown, f.err, hint)
	case f.kind == searchFailTimeout:
		return searchGenericExplain(who, hint, f) + " SearXNG waits for its engines; a lower outgoing.request_timeout in its settings.yml makes it answer sooner."
	case f.kind == searchFailEngines:
		return fmt.Sprintf("%s found no results because its search engines failed: %s. Try again later, or enable other engines in its settings.yml.", who, f.detail)
	case f.kind != searchFailStatus:
		return searchGenericExplain(who, hint, f)
	case f.code == http.StatusForbidden:
		return fmt.Sprintf("%s refused the search (HTTP 403). SearXNG answers 403 when the json output format is disabled: add json to search.formats in its settings.yml (search.formats: [html, json]) and restart SearXNG.", who)
	case f.code == http.StatusUnauthorized:
		return fmt.Sprintf("%s asks for credentials (HTTP 401), and web_search sends none to SearXNG. Point web.search.url at a SearXNG reachable without login.", who)
	case f.code == http.StatusTooManyRequests:
		return fmt.Sprintf("%s refused the search as too many requests (HTTP 429). Its bot limiter is probably on: for a private instance set server.limiter: false in its settings.yml, or add this host's address to pass_ip in its limiter.toml; otherwise wait before searching again.", who)
	case f.code == http.StatusNotFound:
		return fmt.Sprintf("%s has no /search endpoint (HTTP 404). Check web.search.url: it must be SearXNG's base URL, with the path prefix it is served under if any.", who)
	}
	return searchGenericExplain(who, hint, f)
}

// Keyed providers.

// searchAPI is a keyed provider's endpoint.
type searchAPI struct {
	base   *url.URL
	shown  string // base URL for messages
	keyEnv string
	custom bool // web.search.url replaced the public base
}

// hint is the advice for failures that suggest a wrong base URL.
func (a searchAPI) hint(path string) string {
	if !a.custom {
		return ""
	}
	return fmt.Sprintf("Check web.search.url: it replaces the provider's base URL, and web_search appends %s to it.", path)
}

type braveProvider struct{ searchAPI }

type braveAnswer struct {
	Query struct {
		MoreResultsAvailable *bool `json:"more_results_available"`
	} `json:"query"`
	Web struct {
		Results []map[string]any `json:"results"`
	} `json:"web"`
}

// count is the results asked per request; offset counts pages of count.
func (p *braveProvider) count(limit int) int { return min(limit, braveMaxCount) }

// maxPages allows one page beyond the arithmetic for duplicates and
// results without a URL.
func (p *braveProvider) maxPages(limit int) int {
	c := p.count(limit)
	return min((limit+c-1)/c+1, braveMaxOffset+1)
}

func (p *braveProvider) page(ctx context.Context, s *searchSession, query string, n, limit int) ([]searchHit, bool, error) {
	count := p.count(limit)
	params := url.Values{"q": {query}, "count": {strconv.Itoa(count)}}
	if n > 0 {
		params.Set("offset", strconv.Itoa(n))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, searchEndpoint(p.base, bravePath, params), nil)
	if err != nil {
		return nil, false, searchRequestFailure(err)
	}
	req.Header.Set("X-Subscription-Token", s.key)
	var a braveAnswer
	if err := s.doJSON(req, &a); err != nil {
		return nil, false, err
	}
	hits := make([]searchHit, 0, len(a.Web.Results))
	for _, r := range a.Web.Results {
		hits = append(hits, searchHit{title: searchString(r["title"]), url: searchString(r["url"]), description: searchString(r["description"])})
	}
	more := len(hits) >= count
	if a.Query.MoreResultsAvailable != nil {
		more = *a.Query.MoreResultsAvailable && len(hits) > 0
	}
	return hits, more && n < braveMaxOffset, nil
}

func (p *braveProvider) explain(f *searchFailure) string {
	if f.kind == searchFailStatus {
		switch {
		case f.code == http.StatusUnauthorized || f.code == http.StatusForbidden,
			f.apiCode == "SUBSCRIPTION_TOKEN_INVALID" || f.apiCode == "SUBSCRIPTION_TOKEN_MISSING":
			return searchKeyRejected(p.keyEnv, "Brave Search", f)
		}
	}
	return searchGenericExplain("Brave Search API at "+p.shown, p.hint(bravePath), f)
}

type tavilyProvider struct{ searchAPI }

type tavilyAnswer struct {
	Results []map[string]any `json:"results"`
}

func (p *tavilyProvider) maxPages(int) int { return 1 }

func (p *tavilyProvider) page(ctx context.Context, s *searchSession, query string, _, limit int) ([]searchHit, bool, error) {
	body, err := json.Marshal(map[string]any{"query": query, "max_results": min(limit, tavilyMaxResults)})
	if err != nil {
		return nil, false, searchRequestFailure(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, searchEndpoint(p.base, tavilyPath, nil), bytes.NewReader(body))
	if err != nil {
		return nil, false, searchRequestFailure(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.key)
	var a tavilyAnswer
	if err := s.doJSON(req, &a); err != nil {
		return nil, false, err
	}
	hits := make([]searchHit, 0, len(a.Results))
	for _, r := range a.Results {
		hits = append(hits, searchHit{title: searchString(r["title"]), url: searchString(r["url"]), description: searchString(r["content"])})
	}
	return hits, false, nil
}

func (p *tavilyProvider) explain(f *searchFailure) string {
	who := "Tavily API at " + p.shown
	if f.kind == searchFailStatus {
		detail := ""
		if f.detail != "" {
			detail = ": " + f.detail
		}
		switch f.code {
		case http.StatusUnauthorized, http.StatusForbidden:
			return searchKeyRejected(p.keyEnv, "Tavily", f)
		case 432:
			return fmt.Sprintf("%s refused the search: the plan's usage limit is exceeded (HTTP 432%s). Upgrade the plan in the Tavily dashboard or wait for the limit to reset.", who, detail)
		case 433:
			return fmt.Sprintf("%s refused the search: the pay-as-you-go limit is exceeded (HTTP 433%s). Raise the limit in the Tavily dashboard.", who, detail)
		}
	}
	return searchGenericExplain(who, p.hint(tavilyPath), f)
}
