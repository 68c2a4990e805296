package hostfuncs

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"sync"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// extractKind is how web_extract treats a media type.
type extractKind int

const (
	extractUnsupported extractKind = iota
	// extractHTML is reduced to its article and converted to markdown.
	extractHTML
	// extractText is returned unchanged.
	extractText
)

// extractTextTypes are the non-text/* media types passed through as text.
var extractTextTypes = map[string]bool{
	"application/json":         true,
	"application/x-ndjson":     true,
	"application/xml":          true,
	"application/javascript":   true,
	"application/x-javascript": true,
	"application/ecmascript":   true,
	"application/yaml":         true,
	"application/x-yaml":       true,
	"application/toml":         true,
}

// extractKindOf classifies a lower-case media type.
func extractKindOf(mediaType string) extractKind {
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return extractHTML
	case mediaType == "text/event-stream":
		return extractUnsupported // never ends
	case strings.HasPrefix(mediaType, "text/"),
		extractTextTypes[mediaType],
		strings.HasSuffix(mediaType, "+json"),
		strings.HasSuffix(mediaType, "+xml"):
		return extractText
	}
	return extractUnsupported
}

// chromeTags are removed from the HTML before conversion, whether
// readability found an article or the whole body is used: navigation,
// page chrome, forms and embedded media that have no text to give.
var chromeTags = []string{
	"nav", "footer", "aside", "form", "button", "select", "dialog", "template",
	"svg", "canvas", "object", "embed", "video", "audio",
}

// extractMarkdownConverter is the shared HTML-to-markdown converter (safe for
// concurrent use).
var extractMarkdownConverter = sync.OnceValue(func() *converter.Converter {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
	))
	for _, tag := range chromeTags {
		conv.Register.TagType(tag, converter.TagTypeRemove, converter.PriorityEarly)
	}
	return conv
})

// htmlToMarkdown reduces an HTML page to its readable article (Mozilla's
// Readability algorithm) and converts it to markdown, links and images
// made absolute against pageURL (or the page's <base href>). When
// readability finds nothing, the whole <body> is converted, minus its
// obvious chrome. title is the article's title, else the <title>, else "".
func htmlToMarkdown(ctx context.Context, text string, pageURL *url.URL) (title, markdown string, err error) {
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return "", "", err
	}
	baseURL := extractBaseURL(doc, pageURL)
	docTitle := extractCollapseSpace(extractNodeText(extractFindElement(doc, atom.Title)))
	// Readability strips class names and keeps small boxes on short
	// pages, so banners and hidden parts go first.
	pruneChrome(doc)

	var md string
	article, err := readability.FromDocument(doc, baseURL) // works on a copy
	if err == nil && article.Node != nil {
		title = extractCollapseSpace(article.Title())
		md, err = convertToMarkdown(ctx, article.Node, baseURL)
		if err != nil {
			return "", "", err
		}
		if md != "" && extractHasHeadline(doc, title) && !extractStartsWithHeading(md, title) {
			// Readability drops the headline that repeats the title; put
			// it back.
			md = "# " + title + "\n\n" + md
		}
	}
	if strings.TrimSpace(md) == "" {
		if body := extractFindElement(doc, atom.Body); body != nil {
			md, err = convertToMarkdown(ctx, body, baseURL)
			if err != nil {
				return "", "", err
			}
		}
	}
	if title == "" {
		title = docTitle
	}
	return title, strings.TrimSpace(md), nil
}

func convertToMarkdown(ctx context.Context, n *html.Node, baseURL *url.URL) (string, error) {
	out, err := extractMarkdownConverter().ConvertNode(n, converter.WithContext(ctx), converter.WithDomain(baseURL.String()))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// extractHasHeadline reports whether doc has an <h1> or <h2> reading title.
func extractHasHeadline(doc *html.Node, title string) bool {
	if title == "" {
		return false
	}
	found := false
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if found {
			return
		}
		if n.Type == html.ElementNode && (n.DataAtom == atom.H1 || n.DataAtom == atom.H2) &&
			strings.EqualFold(extractCollapseSpace(extractNodeText(n)), title) {
			found = true
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return found
}

// extractStartsWithHeading reports whether md's first line is a heading holding
// title.
func extractStartsWithHeading(md, title string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(md), "\n")
	if !strings.HasPrefix(first, "#") {
		return false
	}
	return strings.Contains(extractCollapseSpace(strings.TrimLeft(first, "# ")), title) ||
		strings.Contains(title, extractCollapseSpace(strings.TrimLeft(first, "# ")))
}

// extractBaseURL returns the page's <base href> resolved against pageURL,
// or pageURL.
func extractBaseURL(doc *html.Node, pageURL *url.URL) *url.URL {
	b := extractFindElement(doc, atom.Base)
	if b == nil {
		return pageURL
	}
	for _, a := range b.Attr {
		if a.Key == "href" {
			if ref, err := url.Parse(strings.TrimSpace(a.Val)); err == nil {
				if abs := pageURL.ResolveReference(ref); abs.Scheme == "http" || abs.Scheme == "https" {
					return abs
				}
			}
		}
	}
	return pageURL
}

// extractFindElement returns the first element a in n's tree, depth first.
func extractFindElement(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := extractFindElement(c, a); f != nil {
			return f
		}
	}
	return nil
}

// extractNodeText returns the text under n ("" for nil).
func extractNodeText(n *html.Node) string {
	if n == nil {
		return ""
	}
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			sb.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return sb.String()
}

func extractCollapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// chromeRoles are ARIA landmark roles of page chrome.
var chromeRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true,
	"search": true, "dialog": true, "alertdialog": true, "menu": true, "menubar": true,
}

// chromeClass matches class names and ids of banners and overlays.
var chromeClass = regexp.MustCompile(`(?i)(?:^|[\s_-])(?:cookies?|consent|gdpr|newsletter|popup|modal|subscribe|share|sharing|social|sidebar|breadcrumbs?|skip-link)(?:[\s_-]|$)`)

// pruneChrome removes, under n, hidden elements and elements whose role,
// class or id marks them as page chrome (cookie banners, share boxes,
// sidebars), and the site <header> directly under <body>.
func pruneChrome(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && isChrome(c) {
			n.RemoveChild(c)
		} else {
			pruneChrome(c)
		}
		c = next
	}
}

func isChrome(n *html.Node) bool {
	if n.DataAtom == atom.Header && n.Parent != nil && n.Parent.DataAtom == atom.Body {
		return true // the site header, not an article's
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if a.Val == "true" {
				return true
			}
		case "role":
			if chromeRoles[strings.ToLower(strings.TrimSpace(a.Val))] {
				return true
			}
		case "style":
			if s := strings.ToLower(strings.ReplaceAll(a.Val, " ", "")); strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden") {
				return true
			}
		case "class", "id":
			if chromeClass.MatchString(a.Val) {
				return true
			}
		}
	}
	return false
}
