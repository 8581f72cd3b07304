// Package resourceuri rewrites the URIs of the resources a server offers
// into URIs that name the server too, so that one catalog endpoint can offer
// the resources of many servers without two colliding, and reads the server
// and the original URI back from a rewritten one.
//
// The server goes where a client reads a host, its scheme stays (so an MCP
// App's ui:// resource is still a ui:// resource):
//
//	scheme://authority/path  ->  scheme://NAME.NAMESPACE/authority/path
//	file:///home/a.txt       ->  file://NAME.NAMESPACE//home/a.txt
//	scheme:opaque            ->  scheme:NAME.NAMESPACE:opaque
//
// The rewrite only inserts text after the scheme, so it works on RFC 6570
// URI templates as well: expanding a rewritten template gives the rewritten
// expansion. A URI without a scheme, or a template whose scheme is not
// literal, cannot be rewritten.
package resourceuri

import (
	"errors"
	"strings"
)

// Server names an MCPServer in a rewritten URI.
type Server struct {
	Namespace, Name string
}

// key is the server as it appears in a rewritten URI. A namespace has no
// dots (it is a DNS label), so the last dot splits the two.
func (s Server) key() string { return s.Name + "." + s.Namespace }

// ErrNoScheme says a URI has no scheme to keep, so it cannot be rewritten.
var ErrNoScheme = errors.New("the URI has no scheme (RFC 3986: a letter, then letters, digits, '+', '-' or '.', then ':')")

// Expose rewrites a server's URI (or URI template) into the one the
// catalog offers.
func Expose(s Server, uri string) (string, error) {
	scheme, rest, ok := splitScheme(uri)
	if !ok {
		return "", ErrNoScheme
	}
	if after, hierarchical := strings.CutPrefix(rest, "//"); hierarchical {
		return scheme + "://" + s.key() + "/" + after, nil
	}
	return scheme + ":" + s.key() + ":" + rest, nil
}

// Resolve reads the server and its own URI back from an exposed URI; ok is
// false for a URI Expose did not write, so that each resource has one
// exposed URI and no alias of it gets past a filter written for it.
func Resolve(exposed string) (s Server, uri string, ok bool) {
	s, uri, ok = resolve(exposed)
	if !ok {
		return Server{}, "", false
	}
	if again, err := Expose(s, uri); err != nil || again != exposed {
		return Server{}, "", false
	}
	return s, uri, true
}

func resolve(exposed string) (s Server, uri string, ok bool) {
	scheme, rest, ok := splitScheme(exposed)
	if !ok {
		return Server{}, "", false
	}
	var key string
	if after, hierarchical := strings.CutPrefix(rest, "//"); hierarchical {
		key, rest, ok = strings.Cut(after, "/")
		rest = "//" + rest
	} else {
		key, rest, ok = strings.Cut(rest, ":")
	}
	if !ok {
		return Server{}, "", false
	}
	dot := strings.LastIndexByte(key, '.')
	if dot <= 0 || dot == len(key)-1 {
		return Server{}, "", false
	}
	return Server{Namespace: key[dot+1:], Name: key[:dot]}, scheme + ":" + rest, true
}

// splitScheme splits uri at the colon that ends its scheme.
func splitScheme(uri string) (scheme, rest string, ok bool) {
	for i := 0; i < len(uri); i++ {
		c := uri[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return uri[:i], uri[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}
