package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocsLinksResolve: every relative link of the module's Markdown files
// names a file or directory that exists and, when it has a #fragment into a
// Markdown file, a heading of that file (GitHub's anchors: lower case,
// punctuation dropped, spaces as dashes, -1, -2 for repeats). Trimming a page
// or renaming a heading must not leave a link pointing at nothing.
func TestDocsLinksResolve(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var pages []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return nil
	}))
	require.NotEmpty(t, pages)
	fences := regexp.MustCompile("(?s)```.*?```")
	links := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	external := regexp.MustCompile(`^[a-z]+:`)
	anchors := map[string]map[string]bool{}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, page)
		for _, m := range links.FindAllStringSubmatch(fences.ReplaceAllString(string(b), ""), -1) {
			link := m[1]
			if external.MatchString(link) {
				continue
			}
			path, frag, _ := strings.Cut(link, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: the link %s names nothing", rel, link)
				continue
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if anchors[target] == nil {
				anchors[target] = headingAnchors(t, target)
			}
			if !anchors[target][frag] {
				t.Errorf("%s: the link %s names no heading of %s", rel, link, filepath.Base(target))
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown file.
func headingAnchors(t *testing.T, path string) map[string]bool {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	seen := map[string]int{}
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
