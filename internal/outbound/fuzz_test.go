package outbound

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzCheckAddr holds the SSRF guard to an independent reading of the
// rules: whatever it lets through is a public unicast address by net/netip's
// own predicates (IPv4-mapped and NAT64/6to4-embedded forms included), and
// metadata addresses never pass, even with private targets allowed.
func FuzzCheckAddr(f *testing.F) {
	for _, s := range []string{"93.184.215.14", "127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1",
		"fd00:ec2::254", "100.64.0.1", "fe80::1%eth0", "::", "0.1.2.3", "224.0.0.1", "::ffff:10.0.0.1", "2606:4700::1111", "::127.0.0.1"} {
		a := netip.MustParseAddr(s)
		b := a.As16()
		f.Add(b[:], a.Is4(), a.Zone(), false)
		f.Add(b[:], a.Is4(), a.Zone(), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, as4 bool, zone string, allowPrivate bool) {
		var a netip.Addr
		switch {
		case as4 && len(raw) >= 4:
			a = netip.AddrFrom4([4]byte(raw[:4]))
		case len(raw) >= 16:
			a = netip.AddrFrom16([16]byte(raw[:16]))
			if zone != "" && !strings.ContainsAny(zone, "%") {
				a = a.WithZone(zone)
			}
		default:
			return
		}
		err := checkAddr(a, allowPrivate)
		var te *TargetError
		if err != nil && (!errors.As(err, &te) || !errors.Is(err, ErrForbiddenTarget) || te.Error() == "") {
			t.Fatalf("checkAddr(%s): error %v is not a TargetError", a, err)
		}
		if err != nil && allowPrivate && te.Private {
			t.Fatalf("checkAddr(%s) refused a private address with private targets allowed", a)
		}
		for _, v := range forms(a) {
			if _, meta := metadataAddrs[v]; meta && err == nil {
				t.Fatalf("checkAddr(%s, %v) let a metadata address through", a, allowPrivate)
			}
			if err != nil || allowPrivate {
				continue
			}
			if !v.IsGlobalUnicast() || v.IsPrivate() || v.IsLoopback() || v.IsLinkLocalUnicast() || v.IsMulticast() || v.IsUnspecified() ||
				netip.MustParsePrefix("100.64.0.0/10").Contains(v) || netip.MustParsePrefix("0.0.0.0/8").Contains(v) ||
				netip.MustParsePrefix("240.0.0.0/4").Contains(v) || netip.MustParsePrefix("fec0::/10").Contains(v) {
				t.Fatalf("checkAddr(%s) let through %s, which is not public unicast", a, v)
			}
		}
	})
}

// forms: the address and the IPv4 address it reaches when it is an
// IPv4-mapped, NAT64 or 6to4 form.
func forms(a netip.Addr) []netip.Addr {
	a = a.WithZone("")
	out := []netip.Addr{a.Unmap()}
	if v4, ok := embeddedV4(a.Unmap()); ok {
		out = append(out, v4)
	}
	return out
}

// FuzzCheckURL: no URL panics the check, and an accepted URL whose host is
// an IP literal names an address checkAddr accepts.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "http://127.0.0.1:8080/", "https://[::ffff:169.254.169.254]/", "https://0x7f.1/",
		"https://169.254.169.254.nip.io/", "https://[fe80::1%25eth0]/", "ftp://x/", "https://user:pw@93.184.215.14:443/a?b#c", "//x", "https://2130706433/"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, allowPrivate bool) {
		if CheckURL(raw, allowPrivate) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("CheckURL accepted %q, which url.Parse refuses: %v", raw, err)
		}
		if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
			if err := checkAddr(a, allowPrivate); err != nil {
				t.Fatalf("CheckURL accepted %q whose address is refused: %v", raw, err)
			}
		}
	})
}
