package hostfuncs

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
		{"missing query", map[string]any{}, map[string]any{"error": "Invalid arguments for web_search: query is required"}},
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
	assert.Contains(t, errNoSearchProvider, "web.search.provider")
}
