package hardening

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	visible, hidden := split([]string{
		"PATH=/bin", "GITHUB_TOKEN=ghp_x", "LANG=C", "MY_API_KEY=k", "RANDOM_THING=1",
		"HERMES_HOME=/h", "HERMES_SERVE_TOKEN=s", "OPENAI_API_KEY=sk", "noequals", "LANG=C",
	})
	require.Equal(t, []string{"PATH=/bin", "LANG=C", "HERMES_HOME=/h", "LANG=C"}, visible)
	require.Equal(t, []string{"GITHUB_TOKEN=ghp_x", "MY_API_KEY=k", "RANDOM_THING=1", "HERMES_SERVE_TOKEN=s", "OPENAI_API_KEY=sk"}, hidden)
}
