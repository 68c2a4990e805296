package main

import (
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestArchitectureListsEveryPackage: docs/architecture.md's layout (its
// first code block) names every package of the module (or the dir above
// a helper package, such as backendtest/prepare), and every dir it names
// exists.
func TestArchitectureListsEveryPackage(t *testing.T) {
	testenv.SkipUnderWine(t, "go list needs the Go toolchain, which the wine prefix does not have")
	doc, err := os.ReadFile("../../docs/architecture.md")
	require.NoError(t, err)
	text := string(doc)
	start := strings.Index(text, "```\n")
	end := strings.Index(text[start+4:], "```")
	require.True(t, start >= 0 && end > 0, "docs/architecture.md has no layout block")
	entry := regexp.MustCompile(`^( *)(\S+/)\s`)
	var listed []string
	parent := ""
	for _, line := range strings.Split(text[start+4:start+4+end], "\n") {
		m := entry.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		dir := strings.TrimSuffix(m[2], "/")
		if m[1] == "" {
			parent = dir
		} else {
			dir = path.Join(parent, dir)
		}
		listed = append(listed, dir)
		_, err := os.Stat("../../" + dir)
		require.NoError(t, err, "docs/architecture.md names %s, which does not exist", dir)
	}
	gobin, err := exec.LookPath("go")
	require.NoError(t, err, "this test runs `go list`: put the Go toolchain on PATH")
	cmd := exec.Command(gobin, "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	require.NoError(t, err)
	root, err := os.Getwd()
	require.NoError(t, err)
	root = path.Dir(path.Dir(root))
	for _, dir := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(dir, root), "/")
		if rel == "" {
			continue
		}
		require.True(t, slices.Contains(listed, rel) || slices.Contains(listed, path.Dir(rel)),
			"docs/architecture.md's layout does not name the package %s", rel)
	}
}
