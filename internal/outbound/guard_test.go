package outbound

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr         string
		allowPrivate bool
		wantOK       bool
		wantReason   string
	}{
		{"93.184.215.14", false, true, ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", false, true, ""},
		{"8.8.8.8", true, true, ""},

		{"169.254.169.254", false, false, "cloud metadata"},
		{"169.254.169.254", true, false, "cloud metadata"},
		{"fd00:ec2::254", true, false, "cloud metadata"},
		{"100.100.100.200", true, false, "cloud metadata"},
		{"169.254.170.2", true, false, "cloud metadata"},
		{"::ffff:169.254.169.254", true, false, "cloud metadata"},
		{"64:ff9b::a9fe:a9fe", true, false, "IPv6 form of 169.254.169.254, a cloud metadata"},
		{"2002:a9fe:a9fe::1", true, false, "IPv6 form of 169.254.169.254"},
		{"169.254.1.1", true, false, "link-local"},
		{"fe80::1%eth0", true, false, "link-local"},

		{"0.0.0.0", true, false, "unspecified"},
		{"0.1.2.3", true, false, "unspecified"},
		{"::", true, false, "unspecified"},
		{"224.0.0.1", true, false, "multicast"},
		{"ff02::1", true, false, "multicast"},
		{"255.255.255.255", true, false, "broadcast"},

		{"127.0.0.1", false, false, "loopback"},
		{"127.0.0.1", true, true, ""},
		{"127.10.0.1", false, false, "loopback"},
		{"::1", false, false, "loopback"},
		{"::1", true, true, ""},
		{"::ffff:127.0.0.1", false, false, "loopback"},
		{"::127.0.0.1", false, false, "IPv6 form of 127.0.0.1"},
		{"64:ff9b::10.0.0.1", false, false, "IPv6 form of 10.0.0.1"},
		{"64:ff9b::10.0.0.1", true, true, ""},
		{"64:ff9b::8.8.8.8", false, true, ""},
		{"10.0.0.1", false, false, "private"},
		{"10.0.0.1", true, true, ""},
		{"172.16.5.4", false, false, "private"},
		{"172.32.0.1", false, true, ""},
		{"192.168.1.1", false, false, "private"},
		{"fd12:3456::1", false, false, "private"},
		{"fd12:3456::1", true, true, ""},
		{"100.64.0.1", false, false, "carrier-grade NAT"},
		{"100.127.255.254", false, false, "carrier-grade NAT"},
		{"100.128.0.1", false, true, ""},
		{"100.64.0.1", true, true, ""},
		{"198.18.0.1", false, false, "special-purpose"},
	}
	for _, tt := range tests {
		name := tt.addr
		if tt.allowPrivate {
			name += "/allowPrivate"
		}
		t.Run(name, func(t *testing.T) {
			err := checkAddr(netip.MustParseAddr(tt.addr), tt.allowPrivate)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("allowed, want refused")
			}
			if !errors.Is(err, ErrForbiddenTarget) {
				t.Errorf("error %v does not wrap ErrForbiddenTarget", err)
			}
			if !strings.Contains(err.Error(), tt.wantReason) {
				t.Errorf("error %q does not mention %q", err, tt.wantReason)
			}
		})
	}
}

func TestTargetErrorMessage(t *testing.T) {
	err := checkAddr(netip.MustParseAddr("169.254.169.254"), true)
	if got, want := err.Error(), "outbound: 169.254.169.254 is a cloud metadata address"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	te := &TargetError{Host: "localhost", Addr: netip.MustParseAddr("127.0.0.1"), Reason: "a loopback address", Private: true}
	want := "outbound: localhost resolves to 127.0.0.1, which is a loopback address; private targets are not allowed"
	if te.Error() != want {
		t.Errorf("got %q, want %q", te.Error(), want)
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url          string
		allowPrivate bool
		wantErr      string // "" = accepted
	}{
		{"https://93.184.215.14/hook", false, ""},
		{"https://169.254.169.254/latest/meta-data/", true, "cloud metadata"},
		{"http://169.254.169.254/", true, "cloud metadata"},
		{"https://10.0.0.1/", false, "private"},
		{"https://[::1]:8443/", false, "loopback"},
		{"https://localhost/", false, "localhost resolves to"},
		{"https://localhost/", true, ""},
		{"http://127.0.0.1:8080/", true, ""},
		{"http://93.184.215.14/", false, "http:// targets are not allowed"},
		{"ftp://93.184.215.14/", true, "unsupported URL scheme"},
		{"/relative/path", true, "absolute"},
		{"https://", true, "absolute"},
		{"://bad", true, "invalid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := CheckURL(tt.url, tt.allowPrivate)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
