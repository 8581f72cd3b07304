package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

func TestEgressPolicy(t *testing.T) {
	defaults := &EgressPolicy{Deny: DefaultEgressDeny}
	allowOnly := &EgressPolicy{Deny: DefaultEgressDeny, Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	tests := []struct {
		name    string
		policy  *EgressPolicy
		addr    string
		allowed bool
	}{
		{"cloud metadata is denied", defaults, "169.254.169.254:80", false},
		{"metadata spelled as IPv4-mapped IPv6 is denied", defaults, "[::ffff:169.254.169.254]:80", false},
		{"IPv6 link-local is denied", defaults, "[fe80::1]:443", false},
		{"AWS IPv6 metadata is denied", defaults, "[fd00:ec2::254]:80", false},
		{"Alibaba metadata is denied", defaults, "100.100.100.200:80", false},
		{"a pod address is allowed by default", defaults, "10.1.2.3:8080", true},
		{"loopback is allowed by default", defaults, "127.0.0.1:3001", true},
		{"an allow list admits its ranges", allowOnly, "10.9.9.9:80", true},
		{"an allow list refuses the rest", allowOnly, "192.0.2.1:80", false},
		{"deny wins over allow", &EgressPolicy{Deny: DefaultEgressDeny, Allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}, "169.254.1.1:80", false},
		{"no policy allows everything", nil, "169.254.169.254:80", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.policy.check(tt.addr); (err == nil) != tt.allowed {
				t.Errorf("check(%s) = %v, want allowed=%v", tt.addr, err, tt.allowed)
			}
		})
	}
}

func TestAmbiguousAddressSpellingsAreRefused(t *testing.T) {
	policy := &EgressPolicy{Deny: DefaultEgressDeny}
	tests := []struct {
		name    string
		addr    string
		refused bool
	}{
		{"hex", "0xA9FEA9FE:80", true},
		{"octal", "0251.0376.0251.0376:80", true},
		{"one decimal number", "2852039166:80", true},
		{"two parts", "169.16689662:80", true},
		{"mixed bases", "0xa9.0376.169.254:80", true},
		{"a canonical address is the dial's to check", "169.254.169.254:80", false},
		{"a host name", "tools.example.com:443", false},
		{"a name with a number in it", "mcp01.internal:80", false},
		{"a name that ends in a number", "10.0.0.example:80", false},
		{"IPv6", "[fe80::1]:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := policy.checkName(tt.addr); (err != nil) != tt.refused {
				t.Errorf("checkName(%s) = %v, want refused=%v", tt.addr, err, tt.refused)
			}
		})
	}
}

// TestEgressIsEnforcedWhenDialing: a real server on loopback is refused
// when loopback is denied, with its own error kind.
func TestEgressIsEnforcedWhenDialing(t *testing.T) {
	srv, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	srv.AddTools("a")
	policy := &EgressPolicy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	_, err = Connect(context.Background(), Target{URL: srv.URL(), Timeout: 2 * time.Second, Egress: policy}, nil)
	if KindOf(err) != ErrEgressDenied {
		t.Fatalf("got %v, want EgressDenied", err)
	}
	if srv.Connects() != 0 {
		t.Fatal("the denied server was reached")
	}
	s, err := Connect(context.Background(), Target{URL: srv.URL(), Timeout: 2 * time.Second, Egress: &EgressPolicy{Deny: DefaultEgressDeny}}, nil)
	if err != nil {
		t.Fatalf("the default policy refused loopback: %v", err)
	}
	s.Close()
}

// TestRedirectsAreNotFollowed: a server cannot send the client on to an
// address the policy would refuse, because no redirect is followed.
func TestRedirectsAreNotFollowed(t *testing.T) {
	redirector := httptest.NewServer(http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusTemporaryRedirect))
	defer redirector.Close()
	_, err := Connect(context.Background(), Target{URL: redirector.URL + "/mcp", Transport: TransportStreamableHTTP,
		Timeout: 2 * time.Second, Egress: &EgressPolicy{Deny: DefaultEgressDeny}}, nil)
	if KindOf(err) != ErrHTTPStatus || !strings.Contains(err.Error(), "HTTP 307") {
		t.Fatalf("got %v, want the 307 reported, not followed", err)
	}
}
