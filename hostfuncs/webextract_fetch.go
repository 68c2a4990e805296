package hostfuncs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// extractUserAgent is the User-Agent of web_extract's requests.
const extractUserAgent = "hermes-wasm-exec/0.1 (web_extract)"

// extractAccept is the Accept header: the types web_extract can read.
const extractAccept = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,text/markdown;q=0.8,application/json;q=0.8,*/*;q=0.1"

// extractLimits bound one web_extract fetch.
type extractLimits struct {
	// connect bounds the TCP connect, over all of a host's addresses.
	connect time.Duration
	// tlsHandshake bounds the TLS handshake.
	tlsHandshake time.Duration
	// responseHeader bounds the wait for the response headers once the
	// request is sent.
	responseHeader time.Duration
	// perURL bounds a URL's whole fetch, redirects and body included.
	perURL time.Duration
	// maxBody caps the (decompressed) body in bytes. A larger body is an
	// error rather than extracted from its first maxBody bytes: a cut HTML
	// or JSON document reads as a complete one, and pages this large are
	// data dumps rather than articles.
	maxBody int64
	// maxRedirects is the most redirects followed.
	maxRedirects int
}

// defaultExtractLimits are the production limits.
var defaultExtractLimits = extractLimits{
	connect:        10 * time.Second,
	tlsHandshake:   10 * time.Second,
	responseHeader: 15 * time.Second,
	perURL:         30 * time.Second,
	maxBody:        5 << 20,
	maxRedirects:   5,
}

// extractLimitsKey is the context key of a test's extractLimits.
type extractLimitsKey struct{}

// withExtractLimits returns ctx carrying lim in place of
// defaultExtractLimits (a test seam: tests shorten the timeouts).
func withExtractLimits(ctx context.Context, lim extractLimits) context.Context {
	return context.WithValue(ctx, extractLimitsKey{}, lim)
}

func extractLimitsFrom(ctx context.Context) extractLimits {
	if lim, ok := ctx.Value(extractLimitsKey{}).(extractLimits); ok {
		return lim
	}
	return defaultExtractLimits
}

// extractFetcher fetches the URLs of one web_extract call through the
// SSRF guard.
type extractFetcher struct {
	guard     *ssrfGuard
	limits    extractLimits
	transport *http.Transport
	client    *http.Client
}

// newExtractFetcher returns a fetcher for w and lim. Close it when done.
func newExtractFetcher(w WebOptions, lim extractLimits) *extractFetcher {
	g := newSSRFGuard(w)
	tr := &http.Transport{
		// Never a proxy: the proxy would resolve and connect on our behalf,
		// past the guard.
		Proxy:                  nil,
		DialContext:            g.dialContext(g.newDialer(lim.connect)),
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    lim.tlsHandshake,
		ResponseHeaderTimeout:  lim.responseHeader,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           10,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	f := &extractFetcher{guard: g, limits: lim, transport: tr}
	f.client = &http.Client{Transport: tr, CheckRedirect: f.checkRedirect}
	return f
}

// Close releases the fetcher's idle connections.
func (f *extractFetcher) Close() { f.transport.CloseIdleConnections() }

// checkRedirect vets a redirect target as web_extract vets a URL: scheme,
// credentials, then the SSRF guard (the dialer checks again on connect).
func (f *extractFetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.limits.maxRedirects {
		return messagef("Too many redirects: gave up after %d", f.limits.maxRedirects)
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return messagef("Refused to follow a redirect to a %q URL: web_extract fetches only http and https URLs", s)
	}
	if shown, why, found := urlCredential(req.URL.String()); found {
		return &messageError{msg: redirectSecretMsg(shown, why)}
	}
	if _, err := f.guard.resolve(req.Context(), req.URL.Hostname()); err != nil {
		return err
	}
	return nil
}

// fetchedPage is a fetched and decoded response.
type fetchedPage struct {
	// finalURL is the URL after redirects.
	finalURL *url.URL
	// mediaType is the lower-case media type, without parameters.
	mediaType string
	// text is the body decoded to UTF-8.
	text string
}

// fetch GETs u (already checked for scheme and credentials) and returns
// the decoded page, or an error whose message is the per-URL error.
func (f *extractFetcher) fetch(ctx context.Context, u *url.URL) (*fetchedPage, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, f.limits.perURL)
	defer cancel()
	page, err := f.doFetch(ctx, u)
	if err != nil {
		return nil, f.describe(err, ctx, parent, u)
	}
	return page, nil
}

func (f *extractFetcher) doFetch(ctx context.Context, u *url.URL) (*fetchedPage, error) {
	// Checked here for a clear error before any request; the dialer checks
	// again for the connection it makes.
	if _, err := f.guard.resolve(ctx, u.Hostname()); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, messagef("Invalid URL: %v", err)
	}
	req.Header.Set("User-Agent", extractUserAgent)
	req.Header.Set("Accept", extractAccept)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 400 {
		return nil, &messageError{msg: strings.TrimSpace(fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))}
	}
	ct := resp.Header.Get("Content-Type")
	mediaType, _, perr := mime.ParseMediaType(ct)
	mediaType = strings.ToLower(mediaType)
	if ct != "" && perr == nil && extractKindOf(mediaType) == extractUnsupported {
		return nil, extractUnsupportedType(mediaType)
	}
	if resp.ContentLength > f.limits.maxBody {
		return nil, f.tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.limits.maxBody+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > f.limits.maxBody {
		return nil, f.tooLarge()
	}
	if ct == "" || perr != nil {
		// No usable Content-Type: sniff it, and let the decoder find the
		// charset itself (DetectContentType's charset is only a guess).
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
		ct = mediaType
		if extractKindOf(mediaType) == extractUnsupported {
			return nil, extractUnsupportedType(mediaType)
		}
	}
	return &fetchedPage{finalURL: resp.Request.URL, mediaType: mediaType, text: extractDecode(body, ct)}, nil
}

// extractDecode decodes body to UTF-8, by the HTML standard's rules as
// charset.DetermineEncoding applies them: a byte-order mark, else the
// Content-Type's charset, else an HTML <meta> charset. Failing those, or
// when only a <meta> names it, a body that is valid UTF-8 as a whole is
// UTF-8 (DetermineEncoding looks at the first 1 KiB only) and anything
// else windows-1252. A leading byte-order mark is dropped.
func extractDecode(body []byte, contentType string) string {
	_, name, certain := charset.DetermineEncoding(body, contentType)
	if name != "utf-8" && !(!certain && utf8.Valid(body)) {
		if r, err := charset.NewReaderLabel(name, bytes.NewReader(body)); err == nil {
			if out, err := io.ReadAll(r); err == nil {
				body = out
			}
		}
	}
	return strings.TrimPrefix(strings.ToValidUTF8(string(body), "\uFFFD"), "\uFEFF")
}

func (f *extractFetcher) tooLarge() error {
	return messagef("Page too large: the response is over web_extract's %d MiB limit, so it was not read", f.limits.maxBody>>20)
}

func extractUnsupportedType(mediaType string) error {
	return messagef("Unsupported content type %s: web_extract reads HTML, plain text, Markdown, CSV, JSON and XML", mediaType)
}

// describe turns a fetch failure into its per-URL error.
func (f *extractFetcher) describe(err error, ctx, parent context.Context, u *url.URL) error {
	var ee *messageError
	switch {
	case errors.Is(err, errBlocked):
		return &messageError{msg: blockedMsg}
	case errors.As(err, &ee):
		return ee
	case parent.Err() != nil:
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			return messagef("Timed out: the call's deadline passed before the page was fetched")
		}
		return messagef("Cancelled before the page was fetched")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return messagef("Timed out after %s fetching the page", f.limits.perURL)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr):
		name := dnsErr.Name
		if name == "" {
			name = u.Hostname()
		}
		return messagef("Could not resolve host %s: %s", name, dnsErr.Err)
	case errors.As(err, &netErr) && netErr.Timeout():
		return messagef("Timed out fetching the page: %v", err)
	}
	return messagef("Fetch failed: %v", err)
}
