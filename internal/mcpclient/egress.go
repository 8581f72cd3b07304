package mcpclient

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// EgressPolicy decides which addresses connections to MCP servers may
// reach. It is enforced when dialing, on the address actually dialed, so
// DNS answers (rebinding included) and spellings of an address (hex,
// octal, IPv4-mapped IPv6) cannot get around it.
type EgressPolicy struct {
	// Deny lists prefixes never dialed.
	Deny []netip.Prefix
	// Allow, when not empty, lists the only prefixes dialed.
	Allow []netip.Prefix
}

// DefaultEgressDeny keeps discovery and calls away from link-local
// addresses, where cloud metadata services live: AWS, GCP and Azure at
// 169.254.169.254, AWS over IPv6 at fd00:ec2::254, Alibaba at
// 100.100.100.200.
var DefaultEgressDeny = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("100.100.100.200/32"),
}

// errEgressDenied marks a dial the policy refused.
var errEgressDenied = errors.New("egress denied")

// check returns an error when the policy refuses addr (host:port).
func (p *EgressPolicy) check(addr string) error {
	if p == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", errEgressDenied, addr)
	}
	ip := ap.Addr().Unmap()
	for _, prefix := range p.Deny {
		if prefix.Contains(ip) {
			return fmt.Errorf("%w: %s is in %s", errEgressDenied, ip, prefix)
		}
	}
	if len(p.Allow) == 0 {
		return nil
	}
	for _, prefix := range p.Allow {
		if prefix.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not in the allowed ranges", errEgressDenied, ip)
}

// control is a net.Dialer Control hook applying the policy.
func (p *EgressPolicy) control(_, address string, _ syscall.RawConn) error {
	return p.check(address)
}
