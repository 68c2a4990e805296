package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

func TestResolveVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for name, c := range map[string]struct {
		version, commit string
		bi              *debug.BuildInfo
		want            buildInfo
	}{
		"ldflags win": {"v1.2.3", "abc", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v9.9.9"}, Settings: vcs("def", "false")},
			buildInfo{"v1.2.3", "abc", "go1.26.8"}},
		"go install @version": {"", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}},
			buildInfo{"v0.4.0", "", "go1.26.8"}},
		"checkout, clean": {"", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123abcd", "false")},
			buildInfo{"devel", "0123abcd", "go1.26.8"}},
		"checkout, modified": {"", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123abcd", "true")},
			buildInfo{"devel", "0123abcd+dirty", "go1.26.8"}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, c.want, resolveVersion(c.version, c.commit, c.bi))
		})
	}
	got := resolveVersion("", "", nil)
	require.Equal(t, "devel", got.version)
	require.NotEmpty(t, got.goVersion)
}

func TestVersionCommand(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Run([]string{"version"}, nil, &out, &errb))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 7, out.String())
	require.True(t, strings.HasPrefix(lines[0], "hermes-wasm-exec "), lines[0])
	for i, prefix := range []string{"commit ", "go ", "interpreter ", "python.wasm ", pyodideassets.StdlibName + " ", "recipe "} {
		require.True(t, strings.HasPrefix(lines[i+1], prefix), lines[i+1])
	}
	require.Contains(t, out.String(), "sha256 "+pyodideassets.SHA256)
	require.Contains(t, out.String(), "sha256 "+pyodideassets.StdlibSHA256)
	require.Contains(t, out.String(), "sha256 "+pyodideassets.RecipeSHA256)
	require.Empty(t, errb.String())
}
