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

// TestNormalizeKind: session kinds are read case-insensitively and
// trimmed, "" is cli; any other value is gateway (the stricter rule) with
// ok false, and the error names the nearest kind.
func TestNormalizeKind(t *testing.T) {
	for in, want := range map[string]struct {
		kind string
		ok   bool
	}{
		"": {"cli", true}, "cli": {"cli", true}, " Gateway ": {"gateway", true}, "AUTOMATION": {"automation", true},
		"tui": {"gateway", false}, "gatway": {"gateway", false},
	} {
		kind, ok := NormalizeKind(in)
		require.Equal(t, want.kind, kind, in)
		require.Equal(t, want.ok, ok, in)
	}
	require.Equal(t, `--kind must be one of cli, gateway, automation, not "gatway"; did you mean "gateway"?`, UnknownKind("--kind", "gatway"))
}
