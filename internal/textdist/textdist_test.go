package textdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0},
		{"timeout", "timeout", 0},
		{"timout", "timeout", 1},
		{"cron_mdoe", "cron_mode", 1}, // a swap costs 1
		{"dney", "deny", 1},
		{"wbe", "web", 1},
		{"", "web", 3},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"kitten", "sittin", 2},
		{"ca", "abc", 3},      // optimal string alignment: no edit of a swapped pair
		{"héllo", "hello", 1}, // runes, not bytes
		{"日本語", "日語本", 1},
		{"config.yaml", "config.yml", 1},
	} {
		if got := Distance(tt.a, tt.b); got != tt.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
		if got := Distance(tt.b, tt.a); got != tt.d {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.d)
		}
	}
}
