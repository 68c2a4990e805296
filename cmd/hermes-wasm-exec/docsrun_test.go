package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/syntax"
)

// docCommand is a command line the docs tell a reader to type.
type docCommand struct {
	where string   // file:line
	args  []string // the words, the program first
}

// docCommands returns the commands of README.md and docs/**/*.md a reader
// runs: every line of a sh, bash, shell or console code block (a console
// block's commands are its "$ " lines), and every inline code span that
// starts with hermes-wasm-exec, bin/hermes-wasm-exec, `go test`, `go run`
// or `make`. A command with a placeholder (an upper-case word such as FILE
// or SCRIPT.py, "...", <x>) is left out: it is a pattern, not a command.
// Each command of a pipeline or list counts on its own.
func docCommands(t *testing.T, root string) []docCommand {
	var pages []string
	pages = append(pages, filepath.Join(root, "README.md"))
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	}))
	fence := regexp.MustCompile("^```([a-z]*)")
	inline := regexp.MustCompile("`((?:bin/)?hermes-wasm-exec [^`]+|go (?:test|run) [^`]+|make [a-z][^`]*)`")
	placeholder := regexp.MustCompile(`^(?:--?[a-z-]+=)?(?:[A-Z][A-Z0-9_]*(?:\.[a-z]+)?|[A-Z][A-Z0-9_]*(?:[,|\[][A-Z0-9_,|\[\]]*)?)$`)
	var out []docCommand
	add := func(where, line string) {
		f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
		if err != nil {
			return // prose in a code span, not a command
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var words []string
			for _, w := range call.Args {
				lit := w.Lit()
				if lit == "" {
					// Quoted or expanded: the literal parts joined (a
					// flag's value such as "$(cat f)" stays unknown).
					var b strings.Builder
					for _, p := range w.Parts {
						switch p := p.(type) {
						case *syntax.Lit:
							b.WriteString(p.Value)
						case *syntax.SglQuoted:
							b.WriteString(p.Value)
						case *syntax.DblQuoted:
							for _, q := range p.Parts {
								if l, ok := q.(*syntax.Lit); ok {
									b.WriteString(l.Value)
								} else {
									b.WriteString("X")
								}
							}
						default:
							b.WriteString("X")
						}
					}
					lit = b.String()
				}
				words = append(words, lit)
			}
			for _, w := range words {
				if placeholder.MatchString(w) || strings.Contains(w, "...") || strings.ContainsAny(w, "<>…") {
					return false
				}
			}
			out = append(out, docCommand{where, words})
			return false
		})
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, page)
		lang, inFence := "", false
		for i, line := range strings.Split(string(b), "\n") {
			where := rel + ":" + strconv.Itoa(i+1)
			if m := fence.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				if inFence {
					inFence = false
				} else {
					inFence, lang = true, m[1]
				}
				continue
			}
			switch {
			case inFence && (lang == "sh" || lang == "bash" || lang == "shell"):
				add(where, line)
			case inFence && lang == "console":
				if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "$ "); ok {
					add(where, cmd)
				}
			case !inFence:
				for _, m := range inline.FindAllStringSubmatch(line, -1) {
					add(where, m[1])
				}
			}
		}
	}
	return out
}

// TestDocsCommandsRun: every command the docs give (docCommands) still
// works as written, checked the cheap way: a hermes-wasm-exec command is
// parsed by the command itself (its flags, their values, its command name)
// by running it with --help appended; `go test` and `go run` name packages
// that exist; `make` names targets of the Makefile. A renamed flag, command,
// package or target breaks the build (docs/performance.md's
// benchmark command named packages that did not exist).
func TestDocsCommandsRun(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cmds := docCommands(t, root)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	var pkgs []string
	seen := map[string]bool{}
	checked := 0
	for _, c := range cmds {
		prog := c.args[0]
		switch {
		case prog == "hermes-wasm-exec" || prog == "bin/hermes-wasm-exec" || prog == "./bin/hermes-wasm-exec":
			args := c.args[1:]
			if len(args) == 0 {
				continue
			}
			var out, errb bytes.Buffer
			code := Run(append(slices.Clone(args), "--help"), strings.NewReader(""), &out, &errb)
			if code != 0 {
				t.Errorf("%s: `%s` no longer parses: %s", c.where, strings.Join(c.args, " "), strings.TrimSpace(errb.String()))
			}
			checked++
		case prog == "go" && len(c.args) > 1 && (c.args[1] == "test" || c.args[1] == "run"):
			for _, a := range c.args[2:] {
				if strings.HasPrefix(a, "./") && !seen[a] {
					seen[a] = true
					pkgs = append(pkgs, a)
				}
			}
			checked++
		case prog == "make":
			for _, a := range c.args[1:] {
				if strings.Contains(a, "=") || strings.HasPrefix(a, "-") {
					continue
				}
				if !targets[a] {
					t.Errorf("%s: `%s`: the Makefile has no target %s", c.where, strings.Join(c.args, " "), a)
				}
			}
			checked++
		}
	}
	t.Logf("%d commands of the docs checked, %d packages", checked, len(pkgs))
	require.Greater(t, checked, 40, "the docs' commands were found")
	if len(pkgs) > 0 && !testenv.UnderWine() { // wine has no go to list packages with
		list := exec.Command("go", append([]string{"list", "-e", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}"}, pkgs...)...)
		list.Dir = root
		out, err := list.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Empty(t, strings.TrimSpace(string(out)), "packages named by `go test`/`go run` in the docs")
	}
}
