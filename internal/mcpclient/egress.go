package mcpclient

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
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

// checkName refuses, before any lookup, a host name that is an IPv4
// address written as only some resolvers read it: hex (0xA9FEA9FE), octal
// (0251.0376.0251.0376), one to three parts (2852039166). Go looks such
// names up in DNS; glibc's inet_aton, proxies and other clients read them
// as the address, so the name means a different host to each. No MCP
// server is named like that. Canonical addresses pass (the dial checks
// them).
func (p *EgressPolicy) checkName(addr string) error {
	if p == nil {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if _, err := netip.ParseAddr(host); err == nil || !numericIPv4(host) {
		return nil
	}
	return fmt.Errorf("%w: %s is an IPv4 address in a form resolvers disagree on", errEgressDenied, host)
}

// numericIPv4 reports whether inet_aton would read s as an address: one
// to four dot-separated numbers, each decimal, octal (leading 0) or hex
// (0x).
func numericIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return false
	}
	for _, part := range parts {
		digits, base := part, 10
		switch {
		case len(part) > 2 && (part[:2] == "0x" || part[:2] == "0X"):
			digits, base = part[2:], 16
		case len(part) > 1 && part[0] == '0':
			digits, base = part[1:], 8
		}
		if _, err := strconv.ParseUint(digits, base, 32); err != nil {
			return false
		}
	}
	return true
}
