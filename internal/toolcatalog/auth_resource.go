package toolcatalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The catalog as an OAuth 2.0 protected resource (RFC 9728, as the MCP
// authorization spec asks): each MCP endpoint is a resource of its own,
// and the REST API the catalog's base URL. A 401 names the metadata of the
// resource asked for, and the metadata names where to get a token.

// metadataPrefix is where Protected Resource Metadata is served: the
// well-known path, then the resource's path.
const metadataPrefix = "/.well-known/oauth-protected-resource"

// resources knows the catalog's public URL and what to advertise.
type resources struct {
	// publicURL is the catalog's URL as callers reach it (scheme, host,
	// any path prefix an ingress adds; no trailing slash). Empty: taken
	// from each request, which is right only when nothing is in front.
	publicURL string
	// authorizationServers and scopes are advertised as they are.
	authorizationServers []string
	scopes               []string
	// perEndpoint advertises each MCP endpoint as a resource of its own,
	// when the catalog checks audiences itself (OIDC). Tokens checked by
	// TokenReview are held to the API server's fixed audiences, which
	// cannot list every collection: then every endpoint advertises the
	// catalog's URL, which clients accept as a prefix of theirs.
	perEndpoint bool
}

// resource is one protected resource: its canonical URI and the URL of
// its metadata.
type resource struct {
	uri, metadata string
}

// isMCPEndpoint says path is one of the catalog's MCP endpoints: /mcp or
// /v1/namespaces/{ns}/toolcollections/{name}/mcp. Asked on every
// authenticated request, so no regular expression.
func isMCPEndpoint(path string) bool {
	if path == "/mcp" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/v1/namespaces/")
	if !ok {
		return false
	}
	ns, rest, ok := strings.Cut(rest, "/")
	if !ok || ns == "" {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, "toolcollections/"); !ok {
		return false
	}
	name, rest, ok := strings.Cut(rest, "/")
	return ok && name != "" && rest == "mcp"
}

// of is the resource a request is for: its MCP endpoint, or the REST API.
func (rs *resources) of(r *http.Request) resource {
	return rs.forPath(rs.base(r), r.URL.Path)
}

func (rs *resources) forPath(base, path string) resource {
	if !isMCPEndpoint(path) {
		return resource{uri: base, metadata: base + metadataPrefix}
	}
	if !rs.perEndpoint {
		return resource{uri: base, metadata: base + metadataPrefix + path}
	}
	return resource{uri: base + path, metadata: base + metadataPrefix + path}
}

func (rs *resources) base(r *http.Request) string {
	if rs.publicURL != "" {
		return rs.publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// audiences are the aud values a token presented with r may name: the
// resource asked for, the catalog as a whole, and the configured extras.
// They come from the configured public URL, never from the request: a
// Host header must not make a token minted for another resource fit.
func (rs *resources) audiences(r *http.Request, extra []string) []string {
	auds := []string{rs.publicURL}
	if uri := rs.forPath(rs.publicURL, r.URL.Path).uri; uri != rs.publicURL {
		auds = append(auds, uri)
	}
	return append(auds, extra...)
}

func isMetadataPath(path string) bool {
	return path == metadataPrefix || strings.HasPrefix(path, metadataPrefix+"/")
}

// protectedResourceMetadata is the RFC 9728 document.
type protectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// serveMetadata answers GET /.well-known/oauth-protected-resource[/path]
// for the REST API and each MCP endpoint; other paths are no resource.
func (rs *resources) serveMetadata(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, metadataPrefix)
	if path != "" && !isMCPEndpoint(path) {
		writeError(w, http.StatusNotFound, "no protected resource at "+path+": the catalog's are its MCP endpoints and, at the well-known path itself, its REST API")
		return
	}
	res := rs.forPath(rs.base(r), path)
	name := "mcp-operator catalog"
	if path != "" {
		name = "mcp-operator catalog MCP endpoint " + path
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_ = json.NewEncoder(w).Encode(protectedResourceMetadata{
		Resource: res.uri, AuthorizationServers: rs.authorizationServers, ScopesSupported: rs.scopes,
		BearerMethodsSupported: []string{"header"}, ResourceName: name,
	})
}

// challenge sets the WWW-Authenticate header of a 401 (RFC 6750 and RFC
// 9728): where the resource's metadata is, the scopes that apply, and,
// for a token that was presented, error="invalid_token" with why.
func (a *authorizer) challenge(w http.ResponseWriter, r *http.Request, err error) {
	ae, ok := err.(*authError) //nolint:errorlint // authError is never wrapped
	if !ok || ae.code != http.StatusUnauthorized {
		return
	}
	var b strings.Builder
	b.WriteString(`Bearer resource_metadata=`)
	b.WriteString(quoted(a.resources.of(r).metadata))
	if len(a.resources.scopes) > 0 {
		b.WriteString(`, scope=`)
		b.WriteString(quoted(strings.Join(a.resources.scopes, " ")))
	}
	if ae.oauthError != "" {
		b.WriteString(`, error=`)
		b.WriteString(quoted(ae.oauthError))
		b.WriteString(`, error_description=`)
		b.WriteString(quoted(ae.message))
	}
	w.Header().Set("WWW-Authenticate", b.String())
}

// quoted is an RFC 9110 quoted-string.
func quoted(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// configure sets up token checks and the advertised metadata from the
// options, refusing combinations that cannot work.
func (a *authorizer) configure(opts Options) error {
	switch opts.Auth {
	case AuthNone:
		if opts.OIDC != nil {
			return errors.New("OIDC validation needs authentication on: use AuthOIDC or AuthKubernetes")
		}
	case AuthKubernetes:
	case AuthOIDC:
		if opts.OIDC == nil {
			return errors.New("AuthOIDC needs the OIDC issuer to trust")
		}
	default:
		return fmt.Errorf("unknown auth mode %q", opts.Auth)
	}
	public := strings.TrimSuffix(opts.PublicURL, "/")
	if public != "" {
		u, err := url.Parse(public)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(public, "?#") {
			return fmt.Errorf("the public URL %q must be an absolute http(s) URL without query or fragment", opts.PublicURL)
		}
	}
	a.resources = &resources{publicURL: public, authorizationServers: opts.AuthorizationServers, scopes: opts.Scopes}
	if opts.OIDC == nil {
		return nil
	}
	if public == "" {
		return errors.New("OIDC validation needs the catalog's public URL: tokens must be meant for it")
	}
	v, err := newOIDCValidator(*opts.OIDC, opts.Log)
	if err != nil {
		return err
	}
	a.oidc = v
	a.resources.perEndpoint = true
	if len(a.resources.authorizationServers) == 0 {
		a.resources.authorizationServers = []string{opts.OIDC.IssuerURL}
	}
	return nil
}
