package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

const (
	// webMaxExtractURLs caps the URLs of one web_extract call.
	webMaxExtractURLs = 5
	// errNoSearchProvider is web_search's answer while no provider is set.
	errNoSearchProvider = "No web search provider configured. Set web.search.provider (searxng, brave or tavily) in config.yaml."
	// errNoExtractBackend is web_extract's per-URL error while no backend is set.
	errNoExtractBackend = "No web extract backend configured. Set web.search.provider in config.yaml."
)

type webSearchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// webSearch implements web_search. No search provider is wired in yet, so
// after validating its arguments it reports that none is configured.
func (t *Tools) webSearch(ctx context.Context, raw json.RawMessage) Result {
	a := webSearchArgs{Limit: 5}
	if r := decodeArgs("web_search", raw, &a); r != nil {
		return r
	}
	if strings.TrimSpace(a.Query) == "" {
		return Result{"error": "Invalid arguments for web_search: query is required"}
	}
	if a.Limit < 0 {
		return Result{"error": fmt.Sprintf("Invalid arguments for web_search: limit must be positive, got %d", a.Limit)}
	}
	return Result{"success": false, "error": errNoSearchProvider}
}

type webExtractArgs struct {
	URLs      []string `json:"urls"`
	CharLimit *int     `json:"char_limit"`
}

// webExtract implements web_extract. No extract backend is wired in yet,
// so each URL of a valid call gets a result whose error says so.
func (t *Tools) webExtract(ctx context.Context, raw json.RawMessage) Result {
	var a webExtractArgs
	if r := decodeArgs("web_extract", raw, &a); r != nil {
		return r
	}
	if len(a.URLs) == 0 {
		return Result{"error": "Invalid arguments for web_extract: urls must be a non-empty list of URLs"}
	}
	if len(a.URLs) > webMaxExtractURLs {
		return Result{"error": fmt.Sprintf("Too many URLs: %d given, at most %d per web_extract call.", len(a.URLs), webMaxExtractURLs)}
	}
	if a.CharLimit != nil && *a.CharLimit <= 0 {
		return Result{"error": fmt.Sprintf("Invalid arguments for web_extract: char_limit must be positive, got %d", *a.CharLimit)}
	}
	results := make([]map[string]any, 0, len(a.URLs))
	for _, u := range a.URLs {
		results = append(results, map[string]any{"url": u, "title": nil, "content": "", "error": errNoExtractBackend})
	}
	return Result{"results": results}
}
