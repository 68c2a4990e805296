package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNormalizeMode: modes are read case-insensitively and trimmed; any
// other value, a blank one included, is strict with ok false.
func TestNormalizeMode(t *testing.T) {
	for in, want := range map[string]struct {
		mode string
		ok   bool
	}{
		"strict": {"strict", true}, " STRICT ": {"strict", true}, "Project": {"project", true},
		"": {"strict", false}, "sandbox": {"strict", false}, "stict": {"strict", false},
	} {
		mode, ok := NormalizeMode(in)
		require.Equal(t, want.mode, mode, in)
		require.Equal(t, want.ok, ok, in)
	}
}
