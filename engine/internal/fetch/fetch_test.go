package fetch

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	def := Policy{}.WithDefaults()
	hosts := Policy{Hosts: []string{"docs.example.com", ".wiki.example"}}.WithDefaults()
	cases := []struct {
		name   string
		policy Policy
		uri    string
		ok     bool
	}{
		{"public https", def, "https://example.com/a.txt", true},
		{"public http", def, "http://example.com/a.txt", true},
		{"file", def, "file:///etc/passwd", false},
		{"file listed but unfetchable", Policy{Schemes: []string{"file"}}.WithDefaults(), "file:///etc/passwd", false},
		{"ftp", def, "ftp://example.com/x", false},
		{"relative", def, "/etc/passwd", false},
		{"loopback v4", def, "http://127.0.0.1:8080/x", false},
		{"loopback v6", def, "http://[::1]/x", false},
		{"localhost", def, "http://localhost/x", false},
		{"private 10/8", def, "http://10.1.2.3/x", false},
		{"private 192.168", def, "http://192.168.0.1/x", false},
		{"link-local metadata", def, "http://169.254.169.254/latest/meta-data", false},
		{"cgnat", def, "http://100.64.0.1/x", false},
		{"unspecified", def, "http://0.0.0.0/x", false},
		{"mapped loopback", def, "http://[::ffff:127.0.0.1]/x", false},
		{"private allowed", Policy{AllowPrivate: true}.WithDefaults(), "http://127.0.0.1/x", true},
		{"host allowed", hosts, "https://docs.example.com/x", true},
		{"subdomain allowed", hosts, "https://a.wiki.example/x", true},
		{"domain itself", hosts, "https://wiki.example/x", true},
		{"host not allowed", hosts, "https://evil.example.com/x", false},
		{"disabled", Policy{Disabled: true}.WithDefaults(), "https://example.com/x", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.policy.check(tc.uri)
			if (err == nil) != tc.ok {
				t.Fatalf("check(%q) = %v, want ok=%v", tc.uri, err, tc.ok)
			}
		})
	}
}

// TestContentURI: a text block carrying a uri is fetched when the policy
// allows it and the body is text/*, else -32602 with field query[i].uri;
// non-text blocks are -32005 (text-only server).
// The dial-time check covers the whole special-purpose registry and this
// host's own addresses (item 14: 0.0.0.0/8, 198.18.0.0/15, 240.0.0.0/4,
// [::127.0.0.1], 64:ff9b::/96 and public interface addresses were dialled).
func TestBlockedAddresses(t *testing.T) {
	for _, s := range []string{
		"0.1.2.3", "10.0.0.1", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "192.0.0.8",
		"192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.1",
		"224.0.0.1", "240.0.0.1", "255.255.255.255", "::", "::1", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b:1::1", "100::1", "2001::1", "2001:db8::1", "2002:7f00:1::", "fc00::1", "fd12::1",
		"fe80::1", "fec0::1", "ff02::1", "3fff::1",
	} {
		if !blockedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s is dialled", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"} {
		if blockedAddr(netip.MustParseAddr(s)) && !ownAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s is refused", s)
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if pn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(pn.IP); ok && !blockedAddr(ip.Unmap()) {
				t.Errorf("this host's address %s is dialled", ip)
			}
		}
	}
	if _, err := (Policy{}.WithDefaults()).check("http://[::127.0.0.1]/x"); err == nil {
		t.Error("[::127.0.0.1] passes the literal check")
	}
}

// The dial-time check refuses private addresses whatever the name
// resolved to (DNS cannot smuggle them past the policy).
func TestDialRefusesPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	strict := New(Policy{}, nil)
	resp, err := strict.client.Get(srv.URL + "/q.txt")
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, errPrivateAddress) {
		t.Fatalf("dialling loopback: %v", err)
	}
}
