package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/humanpath"
)

// webMaxExtractURLs caps the URLs of one web_extract call.
const webMaxExtractURLs = 5

// extractHeadPercent is the share of char_limit kept from the start of a
// page that is too long; the rest is kept from its end.
const extractHeadPercent = 70

type webExtractArgs struct {
	URLs      []string `json:"urls"`
	CharLimit *int     `json:"char_limit"`
}

// webExtract implements web_extract: it fetches up to five http(s) URLs
// concurrently and returns each page as markdown (HTML, reduced to its
// article) or as is (plain text, JSON and other text types), in input
// order. A URL's failure is its own "error"; only invalid arguments and a
// URL carrying a credential fail the whole call, before anything is
// fetched.
//
// # Security
//
// Unless WebOptions.AllowPrivateNetworks, URLs and redirect targets
// resolving to internal addresses are refused (see ssrfGuard), and no
// proxy is used. URLs that look like they carry an API key or token are
// refused (see urlCredential) so that web_extract cannot send a secret to
// a page's server.
func (t *Tools) webExtract(ctx context.Context, raw json.RawMessage) result {
	var a webExtractArgs
	if r := decodeArgs("web_extract", raw, &a); r != nil {
		return r
	}
	if len(a.URLs) == 0 {
		return result{"error": "Invalid arguments for web_extract: urls must be a non-empty list of URLs"}
	}
	if len(a.URLs) > webMaxExtractURLs {
		return result{"error": fmt.Sprintf("Too many URLs: %d given, at most %d per web_extract call.", len(a.URLs), webMaxExtractURLs)}
	}
	if a.CharLimit != nil && *a.CharLimit <= 0 {
		return result{"error": fmt.Sprintf("Invalid arguments for web_extract: char_limit must be positive, got %d", *a.CharLimit)}
	}
	for i, u := range a.URLs {
		if msg := urlSecretCheck(i+1, u); msg != "" {
			return result{"error": msg}
		}
	}
	limit := config.DefaultExtractCharLimit
	if t.web.CharLimit > 0 {
		limit = t.web.CharLimit
	}
	if a.CharLimit != nil {
		limit = *a.CharLimit
	}

	f := newExtractFetcher(t.web, extractLimitsFrom(ctx))
	defer f.Close()
	results := make([]map[string]any, len(a.URLs))
	var wg sync.WaitGroup
	for i, u := range a.URLs {
		wg.Go(func() { results[i] = t.extractOne(ctx, f, u, limit) })
	}
	wg.Wait()
	return result{"results": results}
}

// extractOne fetches and extracts one URL into its result entry.
func (t *Tools) extractOne(ctx context.Context, f *extractFetcher, raw string, limit int) (res map[string]any) {
	res = map[string]any{"url": raw, "title": nil, "content": "", "error": nil}
	fail := func(msg string) map[string]any {
		res["title"], res["content"], res["error"] = nil, "", msg
		return res
	}
	defer func() {
		// A parser bug on a hostile page must not take the process down.
		if p := recover(); p != nil {
			fail(fmt.Sprintf("Internal error while extracting the page: %v", p))
		}
	}()

	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return fail(fmt.Sprintf("Invalid URL: %v", err))
	case u.Scheme == "":
		return fail("Invalid URL: it has no scheme; web_extract fetches http:// and https:// URLs")
	case u.Scheme != "http" && u.Scheme != "https":
		return fail(fmt.Sprintf("Unsupported URL scheme %q: web_extract fetches only http and https URLs", u.Scheme))
	case u.Hostname() == "":
		return fail("Invalid URL: it has no host")
	}

	page, err := f.fetch(ctx, u)
	if err != nil {
		return fail(err.Error())
	}
	var content string
	switch extractKindOf(page.mediaType) {
	case extractHTML:
		title, md, err := htmlToMarkdown(ctx, page.text, page.finalURL)
		if err != nil {
			return fail(fmt.Sprintf("Could not parse the HTML: %v", err))
		}
		if md == "" {
			return fail("The page had no readable text (it may be built by JavaScript, which web_extract does not run)")
		}
		if title != "" {
			res["title"] = title
		}
		content = md
	default:
		// Text types are returned unchanged, without a title: they have
		// none of their own, and the URL is in the result already.
		if strings.TrimSpace(page.text) == "" {
			return fail("The page had no readable text: the response body is empty")
		}
		content = page.text
	}
	res["content"] = t.limitContent(ctx, raw, content, limit)
	return res
}

// limitContent returns content whole when it is at most limit characters
// (runes). Otherwise it keeps the first 70% and the last 30% of limit
// (moved to a line break when one is near), replaces the middle with a
// one-line notice, saves the full text in the web cache (webcache.go) and
// ends with a line giving the saved file's path and how to page it with
// read_file, or why it was not saved. The notice and that line come on top
// of limit.
func (t *Tools) limitContent(ctx context.Context, rawURL, content string, limit int) string {
	total := utf8.RuneCountInString(content)
	if total <= limit {
		return content
	}
	head, tail, omitted := extractCutHeadTail(content, limit)
	var b strings.Builder
	b.WriteString(strings.TrimRight(head, "\n"))
	fmt.Fprintf(&b, "\n\n... [%d characters omitted] ...\n\n", omitted)
	b.WriteString(strings.Trim(tail, "\n"))
	b.WriteString("\n\n")
	path, err := t.saveFull(ctx, rawURL, content)
	if err != nil {
		b.WriteString(savedNote(limit, total, len(content), err))
		return b.String()
	}
	omittedLine := strings.Count(head, "\n") + 1
	fmt.Fprintf(&b, "[Cut to char_limit=%d of %d characters. Full text saved to %s — page it with read_file(%s, offset=%d, limit=500): the omitted part starts at line %d.]",
		limit, total, path, humanpath.PyLiteral(path), omittedLine, omittedLine)
	return b.String()
}

// extractCutHeadTail splits s (longer than limit runes) into the head and tail to
// keep, limit runes together, and the number of runes between them. The
// head ends after a line break in its last fifth if there is one, and the
// tail starts after one in its first fifth, so the cuts fall between lines
// where they can.
func extractCutHeadTail(s string, limit int) (head, tail string, omitted int) {
	r := []rune(s)
	headN := limit * extractHeadPercent / 100
	tailStart := len(r) - (limit - headN)
	for i := headN - 1; i >= 0 && i >= headN*4/5; i-- {
		if r[i] == '\n' {
			headN = i + 1
			break
		}
	}
	tailN := len(r) - tailStart
	for j := tailStart; j < len(r) && j-tailStart < tailN/5; j++ {
		if r[j] == '\n' {
			tailStart = j + 1
			break
		}
	}
	return string(r[:headN]), string(r[tailStart:]), tailStart - headN
}
