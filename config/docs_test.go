package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's key table from the table of Settings")

// The key table of docs/configuration.md lies between these lines.
const (
	keysBegin = "<!-- keys: generated from config.Settings by `go test ./config -run TestConfigurationDocs -update`; do not edit -->"
	keysEnd   = "<!-- end of keys -->"
)

// keysMarkdown is the key table of docs/configuration.md: one row per key of Settings.
func keysMarkdown() string {
	var b strings.Builder
	b.WriteString("| key | type | default | accepts | Hermes's | what |\n|---|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, s := range Settings() {
		owner := "yes"
		if !s.Hermes {
			owner = "ours"
		}
		doc := s.Doc
		if s.Backends != nil {
			doc = strings.Join(s.Backends, ", ") + ": " + doc
		}
		def := s.Default
		if !strings.HasPrefix(def, "`") {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", s.Path, s.Type, cell(def), cell(s.Accepts), owner, cell(doc))
	}
	return b.String()
}

// docs/configuration.md's key table is the one Settings gives; -update rewrites it.
func TestConfigurationDocs(t *testing.T) {
	path := filepath.Join("..", "docs", "configuration.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, keysBegin), strings.Index(doc, keysEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s: the key table's markers are missing; put these two lines where it goes:\n%s\n%s", path, keysBegin, keysEnd)
	}
	want := doc[:begin] + keysBegin + "\n\n" + keysMarkdown() + "\n" + doc[end:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the key table differs from config.Settings; run go test ./config -run TestConfigurationDocs -update to update docs/configuration.md", path)
}

// Every key the parser reads has its type, what it accepts and its one-line doc, and the
// documented defaults are those of Default.
func TestSettingsDescribed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings() {
		if s.Path == "" || s.Type == "" || s.Accepts == "" || s.Doc == "" || s.Default == "" {
			t.Errorf("%q: incomplete: %+v", s.Path, s)
		}
		if seen[s.Path] {
			t.Errorf("%s listed twice", s.Path)
		}
		seen[s.Path] = true
		if s.Type == "enum" && len(s.Values) == 0 {
			t.Errorf("%s: an enum without values", s.Path)
		}
	}
	for path, want := range map[string]string{
		"code_execution.mode": "project", "code_execution.timeout": "300", "code_execution.landlock": "auto",
		"terminal.backend": "local", "terminal.docker_image": DefaultDockerImage, "terminal.container_cpu": "1",
		"terminal.env_passthrough": "[]", "web.search.provider": `""`, "approvals.cron_mode": "ask",
	} {
		i, ok := settingIndex[path]
		if !ok {
			t.Errorf("%s is not in the table", path)
			continue
		}
		if got := Settings()[i].Default; got != want {
			t.Errorf("%s: default %q, want %q", path, got, want)
		}
	}
}
