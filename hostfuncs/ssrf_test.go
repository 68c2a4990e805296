package hostfuncs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsInternalAddr(t *testing.T) {
	internal := []string{
		// IPv4
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.0.9",
		"169.254.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.88.99.1",
		"192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
		"240.0.0.1", "255.255.255.255",
		// IPv6
		"::", "::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "febf::1", "fec0::1", "ff02::1", "ff05::2",
		"100::1", "2001:db8::1", "2001::1", "2001:2::1", "2001:10::1", "3fff::1", "5f00::1", "64:ff9b:1::1",
		// IPv4 in IPv6
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0", "::ffff:100.64.0.1",
		"::127.0.0.1", "::10.0.0.1", "::ffff:0:127.0.0.1", "64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::10.1.2.3",
		"2002:7f00:1::1", "2002:a00:1::",
	}
	public := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
		"192.0.1.1", "198.17.255.255", "198.20.0.0", "223.255.255.255", "169.253.255.255", "11.0.0.1",
		"2606:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8",
		"2002:808:808::1",
	}
	for _, s := range internal {
		assert.True(t, isInternalAddr(netip.MustParseAddr(s)), "%s is internal", s)
	}
	for _, s := range public {
		assert.False(t, isInternalAddr(netip.MustParseAddr(s)), "%s is public", s)
	}
	assert.True(t, isInternalAddr(netip.Addr{}), "the zero Addr is refused")
}

func TestParseHostIP(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "2130706433": "127.0.0.1", "0x7f.1": "127.0.0.1", "0x7f000001": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "0": "0.0.0.0",
		"169.254.43518": "169.254.169.254", "10.0.0.1.": "10.0.0.1", "::1": "::1", "fe80::1%eth0": "fe80::1%eth0",
		"::ffff:127.0.0.1": "::ffff:127.0.0.1",
	} {
		a, ok := parseHostIP(host)
		if assert.True(t, ok, host) {
			assert.Equal(t, want, a.String(), host)
		}
	}
	for _, host := range []string{"example.com", "1.2.3.4.5", "256.1.1.1", "4294967296", "08.0.0.1", "1..2", "", "a.b.c.d", "127.0.0.1x"} {
		_, ok := parseHostIP(host)
		assert.False(t, ok, host)
	}
}

func TestWebExtractSSRFBlocked(t *testing.T) {
	srv, hits := countingServer(t, serveAs("text/plain", "internal secret"))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	tl := newExtractTools(t, WebOptions{}) // AllowPrivateNetworks false
	batches := [][]string{
		{
			fmt.Sprintf("http://127.0.0.1:%d/", port),
			fmt.Sprintf("http://localhost:%d/", port),
			fmt.Sprintf("http://[::1]:%d/", port),
			"http://169.254.169.254/latest/meta-data/",
			"http://10.0.0.1/",
		},
		{
			fmt.Sprintf("http://0.0.0.0:%d/", port),
			fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port),
			fmt.Sprintf("http://2130706433:%d/", port),
			fmt.Sprintf("http://0x7f.1:%d/", port),
			fmt.Sprintf("https://sub.localhost:%d/", port),
		},
		{
			"http://[fe80::1%25lo]/",
			"http://[fd00::1]/",
			"http://192.168.0.1/",
			"http://100.64.0.1/",
			"http://[64:ff9b::7f00:1]/",
		},
	}
	for _, urls := range batches {
		res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
		for i, r := range res {
			assert.Equal(t, failed(urls[i], "Blocked: URL targets a private or internal network address"), r)
		}
	}
	assert.Zero(t, hits.Load(), "no request reached the server")

	// The operator's switch lets the same pages through.
	tl = newExtractTools(t, localWeb)
	urls := []string{fmt.Sprintf("http://127.0.0.1:%d/", port), fmt.Sprintf("http://localhost:%d/", port), fmt.Sprintf("http://2130706433:%d/", port)}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	for _, r := range res {
		assert.Nil(t, r["error"])
		assert.Equal(t, "internal secret", r["content"])
	}
}

// publicTestHost listens on 127.0.0.2, which the returned options treat as
// a public address reached by the name "public.test"; it skips the test
// where 127.0.0.2 cannot be listened on (only Linux routes all of 127/8
// by default).
func publicTestHost(t *testing.T, h http.Handler) (*httptest.Server, WebOptions, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2 (only Linux routes all of 127/8 to loopback by default, macOS and Windows only 127.0.0.1): %v", err)
	}
	var lookups atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	public := netip.MustParseAddr("127.0.0.2")
	w := WebOptions{
		treatAsPublic: func(a netip.Addr) bool { return a == public },
		lookupIP: func(_ context.Context, host string) ([]netip.Addr, error) {
			lookups.Add(1)
			if host == "public.test" {
				return []netip.Addr{public}, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		},
	}
	return srv, w, &lookups
}

func TestWebExtractRedirectToInternal(t *testing.T) {
	secret, secretHits := countingServer(t, serveAs("text/plain", "the secret"))
	secretPort := secret.Listener.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("/page", serveAs("text/plain", "a public page"))
	mux.HandleFunc("/to-loopback", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/secret", secretPort), http.StatusFound)
	})
	mux.HandleFunc("/to-localhost", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/secret", secretPort), http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/to-public", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/page", http.StatusFound)
	})
	pub, w, _ := publicTestHost(t, mux)
	base := fmt.Sprintf("http://public.test:%d", pub.Listener.Addr().(*net.TCPAddr).Port)
	tl := newExtractTools(t, w)

	urls := []string{base + "/page", base + "/to-loopback", base + "/to-localhost", base + "/to-metadata", base + "/to-public"}
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": urls})
	assert.Equal(t, map[string]any{"url": urls[0], "title": nil, "content": "a public page", "error": nil}, res[0])
	for _, r := range res[1:4] {
		assert.Equal(t, failed(r["url"].(string), blockedMsg), r)
	}
	assert.Equal(t, "a public page", res[4]["content"])
	assert.Zero(t, secretHits.Load(), "the internal server saw no request")
}

func TestWebExtractDNSRebinding(t *testing.T) {
	secret, secretHits := countingServer(t, serveAs("text/plain", "the secret"))
	port := secret.Listener.Addr().(*net.TCPAddr).Port
	public := netip.MustParseAddr("127.0.0.2")
	var lookups atomic.Int64
	w := WebOptions{
		treatAsPublic: func(a netip.Addr) bool { return a == public },
		// The first answer looks public; later ones point at the internal
		// server, as a rebinding DNS server would.
		lookupIP: func(_ context.Context, host string) ([]netip.Addr, error) {
			if lookups.Add(1) == 1 {
				return []netip.Addr{public}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
	}
	tl := newExtractTools(t, w)
	u := fmt.Sprintf("http://rebind.test:%d/", port)
	res := extractResults(t, context.Background(), tl, map[string]any{"urls": []string{u}})
	assert.Equal(t, failed(u, blockedMsg), res[0])
	assert.GreaterOrEqual(t, lookups.Load(), int64(2), "the dialer resolved again instead of trusting the pre-check")
	assert.Zero(t, secretHits.Load())
}

func TestSSRFDialerControl(t *testing.T) {
	g := &ssrfGuard{}
	for _, addr := range []string{"127.0.0.1:80", "[::1]:443", "169.254.169.254:80", "[::ffff:10.0.0.1]:80", "0.0.0.0:8080", "[fe80::1%lo]:80", "[64:ff9b::a00:1]:80"} {
		assert.ErrorIs(t, g.control("tcp", addr, nil), errBlocked, addr)
	}
	for _, addr := range []string{"8.8.8.8:53", "[2606:4700::1111]:443"} {
		assert.NoError(t, g.control("tcp", addr, nil), addr)
	}
	assert.Error(t, g.control("tcp", "not-an-address", nil))
	assert.NoError(t, (&ssrfGuard{allowPrivate: true}).control("tcp", "127.0.0.1:80", nil))
	exempt := &ssrfGuard{treatAsPublic: func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.2") }}
	assert.NoError(t, exempt.control("tcp", "127.0.0.2:80", nil))
	assert.ErrorIs(t, exempt.control("tcp", "127.0.0.1:80", nil), errBlocked)

	// The dialer itself refuses an internal address it is handed directly,
	// whatever was checked before: no connection is made.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, err = g.newDialer(time.Second).DialContext(context.Background(), "tcp", l.Addr().String())
	assert.ErrorIs(t, err, errBlocked)
	_, err = g.dialContext(g.newDialer(time.Second))(context.Background(), "tcp", l.Addr().String())
	assert.ErrorIs(t, err, errBlocked)
	c, err := (&ssrfGuard{allowPrivate: true}).newDialer(time.Second).DialContext(context.Background(), "tcp", l.Addr().String())
	require.NoError(t, err, "the listener works")
	c.Close()
	require.Eventually(t, func() bool { return accepted.Load() == 1 }, time.Minute, 10*time.Millisecond)
	assert.EqualValues(t, 1, accepted.Load(), "only the allowed dial connected")
}

func TestSSRFResolveChecksEveryAnswer(t *testing.T) {
	g := &ssrfGuard{lookup: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.5")}, nil
	}}
	_, err := g.resolve(context.Background(), "mixed.test")
	assert.ErrorIs(t, err, errBlocked, "one internal answer is enough to refuse")

	g.lookup = func(context.Context, string) ([]netip.Addr, error) { return nil, nil }
	_, err = g.resolve(context.Background(), "empty.test")
	var dnsErr *net.DNSError
	assert.True(t, errors.As(err, &dnsErr))

	g.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("2606:4700::1111")}, nil
	}
	addrs, err := g.resolve(context.Background(), "public.test")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("2606:4700::1111")}, addrs)
}

func TestExtractTransportHasNoProxy(t *testing.T) {
	f := newExtractFetcher(WebOptions{}, defaultExtractLimits)
	defer f.Close()
	assert.Nil(t, f.transport.Proxy, "an environment proxy would bypass the SSRF guard")
	assert.NotNil(t, f.transport.DialContext)
	assert.Nil(t, f.transport.DialTLSContext)
	assert.True(t, strings.HasPrefix(extractUserAgent, "hermes-wasm-exec/"))
}

// TestSSRFResolveLocalhost: localhost names are loopback without asking the
// resolver (RFC 6761), refused unless private networks are allowed.
func TestSSRFResolveLocalhost(t *testing.T) {
	g := &ssrfGuard{lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
		t.Errorf("the resolver was asked for %s", host)
		return nil, errors.New("no resolver")
	}}
	for _, host := range []string{"localhost", "LOCALHOST.", "app.localhost"} {
		_, err := g.resolve(context.Background(), host)
		assert.ErrorIs(t, err, errBlocked, host)
	}
	g.allowPrivate = true
	for _, host := range []string{"localhost", "LOCALHOST.", "app.localhost"} {
		addrs, err := g.resolve(context.Background(), host)
		require.NoError(t, err, host)
		assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, addrs, host)
	}
}
