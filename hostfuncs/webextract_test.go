package hostfuncs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWebExtract(t *testing.T) {
	tl, _ := newTestTools(t)
	one := func(u string) map[string]any {
		return map[string]any{"url": u, "title": nil, "content": "", "error": errNoExtractBackend}
	}
	tests := []struct {
		name string
		args any
		want map[string]any
	}{
		{"two urls", map[string]any{"urls": []string{"https://a.example", "https://b.example"}},
			map[string]any{"results": []any{one("https://a.example"), one("https://b.example")}}},
		{"char_limit", map[string]any{"urls": []string{"https://a.example"}, "char_limit": 100},
			map[string]any{"results": []any{one("https://a.example")}}},
		{"five is the maximum", map[string]any{"urls": []string{"1", "2", "3", "4", "5"}},
			map[string]any{"results": []any{one("1"), one("2"), one("3"), one("4"), one("5")}}},
		{"too many", map[string]any{"urls": []string{"1", "2", "3", "4", "5", "6"}},
			map[string]any{"error": "Too many URLs: 6 given, at most 5 per web_extract call."}},
		{"empty list", map[string]any{"urls": []string{}},
			map[string]any{"error": "Invalid arguments for web_extract: urls must be a non-empty list of URLs"}},
		{"null urls", map[string]any{"urls": nil},
			map[string]any{"error": "Invalid arguments for web_extract: urls must be a non-empty list of URLs"}},
		{"bad char_limit", map[string]any{"urls": []string{"u"}, "char_limit": 0},
			map[string]any{"error": "Invalid arguments for web_extract: char_limit must be positive, got 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, callJSON(t, tl, "web_extract", tc.args))
		})
	}
	for _, bad := range []string{`{"urls": "https://a.example"}`, `{"urls": [1]}`, `{"urls": ["u"], "format": "md"}`} {
		res := callJSON(t, tl, "web_extract", json.RawMessage(bad))
		assert.Contains(t, res["error"], "Invalid arguments for web_extract:", bad)
	}
}
