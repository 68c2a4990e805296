package strict

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestStrictDoesNotImportTheWebTools: the strict engine imports the
// shared layer, not the tools: the web extraction libraries (readability,
// html-to-markdown, x/net/html) are not among its dependencies.
func TestStrictDoesNotImportTheWebTools(t *testing.T) {
	testenv.SkipUnderWine(t, "go list needs the Go toolchain, which the wine prefix does not have")
	gobin, err := exec.LookPath("go")
	require.NoError(t, err, "this test runs `go list`: put the Go toolchain on PATH")
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"go-readability", "html-to-markdown", "golang.org/x/net/html", "/hostfuncs"} {
			require.NotContains(t, dep, banned, "runtime/internal/strict depends on %s", dep)
		}
	}
}
