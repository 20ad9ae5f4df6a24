package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenTarget is wrapped by every refusal of the SSRF guard, so callers
// can tell "the tenant configured a URL we will never call" from a network failure.
var ErrForbiddenTarget = errors.New("outbound: target address not allowed")

// TargetError explains which address was refused and why. It wraps ErrForbiddenTarget.
type TargetError struct {
	Host   string     // the name that was dialled, when it was not an IP literal
	Addr   netip.Addr // the refused address (zero for a refused scheme)
	Reason string     // e.g. "a cloud metadata address"
	// Private is true when the address would be allowed with AllowPrivate
	// (LEADPIPE_ALLOW_PRIVATE_TARGETS); metadata, link-local, multicast and
	// unspecified addresses are never allowed.
	Private bool
	Scheme  string // set when the URL scheme, not the address, was refused
}

func (e *TargetError) Error() string {
	if e.Scheme != "" {
		return fmt.Sprintf("outbound: %s:// targets are not allowed; use https", e.Scheme)
	}
	if !e.Addr.IsValid() {
		return "outbound: refusing to dial " + e.Reason
	}
	var b strings.Builder
	b.WriteString("outbound: ")
	if e.Host != "" && e.Host != e.Addr.String() {
		fmt.Fprintf(&b, "%s resolves to %s, which is %s", e.Host, e.Addr, e.Reason)
	} else {
		fmt.Fprintf(&b, "%s is %s", e.Addr, e.Reason)
	}
	if e.Private {
		b.WriteString("; private targets are not allowed")
	}
	return b.String()
}

func (e *TargetError) Unwrap() error { return ErrForbiddenTarget }

// metadataAddrs are cloud instance-metadata and platform endpoints. They hand
// out credentials to whoever asks from inside the VM, so they are refused even
// when private targets are allowed for local testing.
var metadataAddrs = map[netip.Addr]string{
	netip.MustParseAddr("169.254.169.254"): "a cloud metadata address", // AWS, GCP, Azure, OCI, DigitalOcean
	netip.MustParseAddr("fd00:ec2::254"):   "a cloud metadata address", // AWS IMDS over IPv6
	netip.MustParseAddr("169.254.170.2"):   "a cloud metadata address", // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"):  "a cloud metadata address", // AWS EKS pod identity
	netip.MustParseAddr("fd00:ec2::23"):    "a cloud metadata address", // AWS EKS pod identity over IPv6
	netip.MustParseAddr("100.100.100.200"): "a cloud metadata address", // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"):   "a cloud metadata address", // Azure WireServer
}

type addrRule struct {
	prefix  netip.Prefix
	reason  string
	private bool // allowed when AllowPrivate is set
}

// addrRules lists every non-public range we refuse. IPv4 link-local is never
// allowed: clouds keep their metadata, DNS and time services all over
// 169.254.0.0/16, and local testing never needs it.
var addrRules = []addrRule{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address", false}, // Linux connects 0.0.0.0 to localhost
	{netip.MustParsePrefix("::/128"), "an unspecified address", false},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address", false},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address", false},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address", false},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address", false},
	{netip.MustParsePrefix("255.255.255.255/32"), "a broadcast address", false},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address", false},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address", true},
	{netip.MustParsePrefix("::1/128"), "a loopback address", true},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address", true},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address", true},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address", true},
	{netip.MustParsePrefix("fc00::/7"), "a private address", true},
	{netip.MustParsePrefix("fec0::/10"), "a private address", true}, // deprecated site-local
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address", true},
	{netip.MustParsePrefix("192.0.0.0/24"), "a special-purpose address", true},
	{netip.MustParsePrefix("198.18.0.0/15"), "a special-purpose address", true},
}

// embeddedV4 returns the IPv4 address carried inside IPv6 forms that end up
// reaching it (NAT64, 6to4, IPv4-compatible, IPv4-translated), so that
// 64:ff9b::a9fe:a9fe cannot be used to sneak to 169.254.169.254.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case nat64Prefix.Contains(a), nat64LocalPrefix.Contains(a), v4TranslatedPrefix.Contains(a),
		v4CompatPrefix.Contains(a) && !a.IsUnspecified() && !a.IsLoopback():
		return v4(12), true
	case sixToFourPrefix.Contains(a):
		return v4(2), true
	}
	return netip.Addr{}, false
}

var (
	nat64Prefix        = netip.MustParsePrefix("64:ff9b::/96")
	nat64LocalPrefix   = netip.MustParsePrefix("64:ff9b:1::/48")
	v4TranslatedPrefix = netip.MustParsePrefix("::ffff:0:0:0/96")
	v4CompatPrefix     = netip.MustParsePrefix("::/96")
	sixToFourPrefix    = netip.MustParsePrefix("2002::/16")
)

// classify says why a is not a public unicast address; ok is true when it is.
func classify(a netip.Addr) (reason string, private bool, ok bool) {
	a = a.WithZone("").Unmap()
	if r, bad := metadataAddrs[a]; bad {
		return r, false, false
	}
	for _, r := range addrRules {
		if r.prefix.Contains(a) {
			return r.reason, r.private, false
		}
	}
	if v4, isEmbedded := embeddedV4(a); isEmbedded {
		if r, p, fine := classify(v4); !fine {
			return fmt.Sprintf("an IPv6 form of %s, %s", v4, r), p, false
		}
	}
	return "", false, true
}

// checkAddr is the guard's verdict on one address that is about to be dialled.
func checkAddr(a netip.Addr, allowPrivate bool) error {
	reason, private, ok := classify(a)
	if ok || (private && allowPrivate) {
		return nil
	}
	return &TargetError{Addr: a.WithZone("").Unmap(), Reason: reason, Private: private}
}

// control runs right before connect(2) with the address the dialer resolved,
// so the name the tenant configured cannot be re-resolved to something else
// between the check and the connection (DNS rebinding).
func (c *Client) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &TargetError{Reason: "unparseable address " + address}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return &TargetError{Reason: "unparseable address " + address}
	}
	return checkAddr(a, c.o.AllowPrivate)
}

// dial refuses IP literals before a socket even exists and names the host in
// refusals that happened after resolution.
func (c *Client) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := checkAddr(a, c.o.AllowPrivate); err != nil {
			return nil, err
		}
	}
	conn, err := c.dialer.DialContext(ctx, network, address)
	if err != nil {
		var te *TargetError
		if errors.As(err, &te) && te.Host == "" {
			te.Host = host
			return nil, te // the dialer's OpError adds nothing but noise here
		}
		return nil, err
	}
	return conn, nil
}

func checkScheme(u *url.URL, allowPrivate bool) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowPrivate:
		return nil
	case u.Scheme == "http":
		return &TargetError{Scheme: "http"}
	}
	return fmt.Errorf("outbound: unsupported URL scheme %q: %w", u.Scheme, ErrForbiddenTarget)
}

// CheckURL validates a URL a tenant wants us to call (endpoint URL, reconcile
// base URL) at save time, with a message fit to show them. It is advisory: the
// dial-time guard re-checks every connection. A name that does not resolve
// right now is accepted, because DNS may not be set up yet and the delivery
// will fail (and be retried) on its own.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("outbound: invalid URL: %w", err)
	}
	if !u.IsAbs() || u.Host == "" {
		return errors.New("outbound: URL must be absolute, like https://example.com/path")
	}
	if err := checkScheme(u, allowPrivate); err != nil {
		return err
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("outbound: URL has no host")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return checkAddr(a, allowPrivate)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := checkAddr(a, allowPrivate); err != nil {
			err.(*TargetError).Host = host
			return err
		}
	}
	return nil
}
