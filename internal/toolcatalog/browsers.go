package toolcatalog

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
)

// browserGuard keeps web pages from using the catalog through a visitor's
// browser. Cross-origin requests that change something (POST) are refused
// unless their origin is allowed (--catalog-allowed-origins); same-origin
// requests and requests without browser headers (agents, curl) pass, as
// the standard library's CrossOriginProtection decides. A page that
// rebinds its own name to the catalog's address is same-origin to it, so
// the guard against DNS rebinding is the Host check: with
// --catalog-allowed-hosts set, a request naming another host is refused.
type browserGuard struct {
	origins *http.CrossOriginProtection
	hosts   []string
}

func newBrowserGuard(origins, hosts []string) (*browserGuard, error) {
	g := &browserGuard{origins: http.NewCrossOriginProtection(), hosts: hosts}
	for _, o := range origins {
		if err := g.origins.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("--catalog-allowed-origins: %w", err)
		}
	}
	return g, nil
}

// check returns why the request is refused, or "".
func (g *browserGuard) check(r *http.Request) string {
	if len(g.hosts) > 0 && !hostAllowed(r.Host, g.hosts) {
		return "host " + r.Host + " is not allowed (--catalog-allowed-hosts)"
	}
	if err := g.origins.Check(r); err != nil {
		return "cross-origin request from " + r.Header.Get("Origin") + " is not allowed (--catalog-allowed-origins)"
	}
	return ""
}

// hostAllowed matches a Host header against the allowed hosts, with or
// without a port.
func hostAllowed(host string, allowed []string) bool {
	if slices.Contains(allowed, host) {
		return true
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host
	}
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, name) })
}

func (g *browserGuard) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := g.check(r); why != "" {
			writeError(w, http.StatusForbidden, why)
			return
		}
		next.ServeHTTP(w, r)
	})
}
