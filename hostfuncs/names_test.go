package hostfuncs

import (
	"maps"
	"slices"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/stretchr/testify/require"
)

// TestToolsImplementNames: the whitelist (config.ToolNames, which the
// engines use without importing this package) is exactly the tools
// implemented here.
func TestToolsImplementNames(t *testing.T) {
	require.ElementsMatch(t, config.ToolNames, slices.Collect(maps.Keys(handlers)))
}
