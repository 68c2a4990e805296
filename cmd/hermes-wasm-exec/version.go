package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

// buildInfo is what `version` prints: set by -ldflags in a release, else
// read from the build information Go embeds in every binary.
type buildInfo struct {
	version   string // v1.2.3, a pseudo-version, or "devel"
	commit    string // full revision, "+dirty" when built from a modified tree; "" if unknown
	goVersion string
}

var versionOnce = sync.OnceValue(func() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return resolveVersion(Version, Commit, bi)
})

// resolveVersion prefers the values set with -ldflags, then the main
// module's version (set by `go install module@version`, "(devel)" in a
// checkout) and the vcs.* settings (set by `go build` in a git checkout).
func resolveVersion(version, commit string, bi *debug.BuildInfo) buildInfo {
	out := buildInfo{version: version, commit: commit, goVersion: runtime.Version()}
	if bi == nil {
		if out.version == "" {
			out.version = "devel"
		}
		return out
	}
	if bi.GoVersion != "" {
		out.goVersion = bi.GoVersion
	}
	if out.version == "" {
		out.version = bi.Main.Version
		if out.version == "" || out.version == "(devel)" {
			out.version = "devel"
		}
	}
	if out.commit == "" {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" && modified == "true" {
			rev += "+dirty"
		}
		out.commit = rev
	}
	return out
}

// versionString is the one-line version: "hermes-wasm-exec VERSION".
func versionString() string { return "hermes-wasm-exec " + versionOnce().version }

// printVersion prints the version, the commit, the Go toolchain and
// platform, and the embedded interpreter's pins.
func printVersion(w io.Writer) {
	v := versionOnce()
	commit := v.commit
	if commit == "" {
		commit = "unknown (built outside a git checkout, without -ldflags)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", versionString())
	for _, row := range [][2]string{
		{"commit", commit},
		{"go", v.goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH},
		{"interpreter", pyodideassets.Description},
		{"python.wasm", fmt.Sprintf("sha256 %s, %d bytes", pyodideassets.SHA256, pyodideassets.Size)},
		{pyodideassets.StdlibName, fmt.Sprintf("sha256 %s, %d bytes", pyodideassets.StdlibSHA256, pyodideassets.StdlibSize)},
		{"recipe", "sha256 " + pyodideassets.RecipeSHA256},
	} {
		fmt.Fprintf(&b, "%-14s %s\n", row[0], row[1])
	}
	io.WriteString(w, b.String())
}
