package hostfuncs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"
)

// blockedMsg is web_extract's per-URL error for a URL (or a redirect
// target) that resolves to an internal address.
const blockedMsg = "Blocked: URL targets a private or internal network address"

// errBlocked is returned by the SSRF guard's resolver and dialer; the
// fetcher maps it to blockedMsg.
var errBlocked = errors.New("blocked: the address is private or internal")

// ssrfGuard keeps web_extract away from internal networks. It checks a host
// before the request is sent (for a clear error, and for every redirect
// target) and again when connecting: the dialer resolves the name itself,
// refuses the connection if any address is internal, dials only the checked
// addresses, and its Control hook re-checks the address actually being
// dialled. A DNS answer that changes between the check and the connection
// (DNS rebinding) therefore cannot reach an internal address.
//
// # Security
//
// The HTTP transport built by newExtractTransport dials through this guard
// only and never uses a proxy (a proxy would resolve the name itself and so
// bypass the check).
type ssrfGuard struct {
	// allowPrivate turns the checks off (web.extract.allow_private_networks).
	allowPrivate bool
	// lookup resolves a host name; nil means net.DefaultResolver.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// treatAsPublic exempts addresses (a test seam; nil in production).
	treatAsPublic func(netip.Addr) bool
}

func newSSRFGuard(w WebOptions) *ssrfGuard {
	return &ssrfGuard{allowPrivate: w.AllowPrivateNetworks, lookup: w.lookupIP, treatAsPublic: w.treatAsPublic}
}

// blocked reports whether the guard refuses a connection to a.
func (g *ssrfGuard) blocked(a netip.Addr) bool {
	if g.allowPrivate {
		return false
	}
	if g.treatAsPublic != nil && g.treatAsPublic(a) {
		return false
	}
	return isInternalAddr(a)
}

// resolve returns the addresses of host (a name or a literal address, with
// or without brackets), refusing with errBlocked when any of them is
// internal. Every answer is checked, not only the first: the client may
// fall back to any of them.
func (g *ssrfGuard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return nil, errors.New("empty host")
	}
	var addrs []netip.Addr
	if a, ok := parseHostIP(host); ok {
		addrs = []netip.Addr{a}
	} else {
		if !isASCII(host) {
			// As http.Transport does for the connection: IDNA to ASCII.
			ascii, err := idna.Lookup.ToASCII(host)
			if err != nil {
				return nil, &net.DNSError{Err: "invalid internationalized host name", Name: host, IsNotFound: true}
			}
			host = ascii
		}
		if isLocalhostName(host) {
			if !g.allowPrivate {
				return nil, errBlocked
			}
			// RFC 6761 §6.3: localhost names are loopback, answered
			// without the resolver (a host without a hosts file, as
			// wine's minimal chroot, cannot resolve them otherwise).
			return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
		}
		var err error
		if g.lookup != nil {
			addrs, err = g.lookup(ctx, host)
		} else {
			addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	for _, a := range addrs {
		if g.blocked(a) {
			return nil, errBlocked
		}
	}
	return addrs, nil
}

// dialContext is the transport's DialContext: it resolves addr's host
// through resolve (so the check holds for this very connection) and dials
// the checked addresses in order until one answers.
func (g *ssrfGuard) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		addrs, err := g.resolve(ctx, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		if d.Timeout > 0 {
			// One budget for all the addresses, as net.Dialer does.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d.Timeout)
			defer cancel()
		}
		var firstErr error
		for _, a := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return c, nil
			}
			if firstErr == nil || errors.Is(err, errBlocked) {
				firstErr = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, firstErr
	}
}

// control is the dialer's Control hook: the last check, on the address the
// socket is about to connect to.
func (g *ssrfGuard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to dial unparsable address %q", address)
	}
	if g.blocked(ap.Addr()) {
		return errBlocked
	}
	return nil
}

// newDialer returns the guarded net.Dialer (its Control refuses internal
// addresses) with the connect timeout.
func (g *ssrfGuard) newDialer(connectTimeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second, Control: g.control}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isLocalhostName reports whether host is "localhost" or a name under it
// (RFC 6761 reserves them for loopback), so they are refused, or resolved
// to loopback, without trusting the resolver.
func isLocalhostName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// parseHostIP parses a literal address in a URL host: IPv6 (with an
// optional zone) and IPv4, including the legacy inet_aton forms that
// browsers and some resolvers accept (2130706433, 0x7f.1, 0177.0.0.1,
// 127.1), so that such a host is checked as the address it names.
func parseHostIP(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	return parseLegacyIPv4(host)
}

// parseLegacyIPv4 parses the inet_aton forms of an IPv4 address: one to
// four dot-separated parts, each decimal, octal (leading 0) or hex (0x),
// the last part filling the remaining bytes.
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(s, ".")
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base, digits := 10, p
		switch {
		case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*uint(i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*uint(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// internalPrefixes are the special-purpose ranges web_extract refuses on
// top of what netip's predicates catch (loopback, private, link-local,
// multicast, unspecified): the IANA special-purpose registries' entries
// that are not globally reachable, plus deprecated ones.
var internalPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // RFC 1918
		"100.64.0.0/10",   // shared address space (CGNAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata (169.254.169.254)
		"172.16.0.0/12",   // RFC 1918
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // RFC 1918
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
		// IPv6
		"::/128",         // unspecified
		"::1/128",        // loopback
		"64:ff9b:1::/48", // local-use NAT64
		"100::/64",       // discard-only
		"2001::/32",      // Teredo
		"2001:2::/48",    // benchmarking
		"2001:10::/28",   // ORCHID
		"2001:db8::/32",  // documentation
		"3fff::/20",      // documentation
		"5f00::/16",      // SRv6 SIDs
		"fc00::/7",       // unique local
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// IPv6 ranges that embed an IPv4 address, which is then what is checked.
var (
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 NAT64
	v4CompatPrefix  = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated)
	v4TranslPrefix  = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT IPv4-translated
	sixToFourPrefix = netip.MustParsePrefix("2002::/16")       // 6to4
)

// isInternalAddr reports whether a is an address web_extract must not
// reach: loopback, private, link-local, multicast, unspecified, broadcast,
// CGNAT and the other special-purpose ranges in internalPrefixes, also when
// written as an IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64 or
// 6to4 IPv6 address. An invalid address counts as internal.
func isInternalAddr(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.WithZone("")
	if a.Is4In6() {
		return isInternalAddr(a.Unmap())
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64Prefix.Contains(a), v4TranslPrefix.Contains(a), v4CompatPrefix.Contains(a):
			// ::/96 also holds :: and ::1, whose embedded 0.0.0.x is internal.
			return isInternalAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFourPrefix.Contains(a):
			if isInternalAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})) {
				return true
			}
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsMulticast() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range internalPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
