package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// errNoSearchProvider is web_search's answer while no provider is set.
const errNoSearchProvider = "No web search provider configured. Set web.search.provider (searxng, brave or tavily) in config.yaml."

type webSearchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// webSearch implements web_search.
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
