package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
)

// webMaxExtractURLs caps the URLs of one web_extract call.
const webMaxExtractURLs = 5

// errNoExtractBackend is web_extract's per-URL error while no backend is set.
const errNoExtractBackend = "No web extract backend configured. Set web.search.provider in config.yaml."

type webExtractArgs struct {
	URLs      []string `json:"urls"`
	CharLimit *int     `json:"char_limit"`
}

// webExtract implements web_extract.
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
