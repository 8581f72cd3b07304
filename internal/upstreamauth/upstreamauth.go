// Package upstreamauth gets the OAuth 2.0 access tokens an MCPServer's
// spec.auth asks for and hands them to mcpclient as Credentials: the
// server's own identity with the client credentials grant (RFC 6749
// section 4.4), or the calling agent's with a token exchange (RFC 8693).
//
// A token is reused until Early before it expires, then fetched again in
// one request however many requests wait for it; a token issued without
// expires_in is reused for DefaultLifetime. Exchanged tokens are kept per
// caller and subject token, at most MaxCallers of them per Sources (per
// replica), and only exchanged at token endpoints the Sources was given.
// A failed request for a token is never remembered: the next request asks
// again; a token a server answered 401 to is forgotten.
//
// Errors are *mcpclient.CredentialsError, keeping the token service's
// OAuth code but not its description (a token service may echo what it
// was sent): ErrAuthRefused when an exchange refused the caller
// (invalid_grant, invalid_target, invalid_scope, access_denied) or a call
// to a server whose tokens are exchanged has no caller to exchange for;
// ErrAuthUnavailable for every other refusal (the client's, which the
// operator must fix) and when the token service could not be asked. No
// message holds a token, the client secret, or the query of the token
// endpoint's URL.
package upstreamauth

import (
	"context"
	"crypto/tls"
	"net/url"
	"time"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

const (
	// Early is how long before it expires a token is fetched again.
	Early = 30 * time.Second
	// DefaultLifetime is how long a token issued without expires_in is
	// reused.
	DefaultLifetime = 60 * time.Second
	// MaxCallers bounds the exchanged tokens a Sources keeps, the least
	// recently used going first.
	MaxCallers = 10000
	// MaxServers bounds the servers a Sources keeps Credentials for, the
	// least recently used going first.
	MaxServers = 4096
	// DefaultTimeout bounds one request to a token endpoint when Config
	// says nothing.
	DefaultTimeout = 30 * time.Second
)

// Token types and the grant type of RFC 8693.
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	grantTokenExchange   = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// Caller is who a tool call is made for.
type Caller struct {
	// Identity is an opaque key unique to the caller (the catalog's
	// caller identity): exchanged tokens are kept per Identity and Token.
	Identity string
	// Token is the caller's validated bearer token, the subject of a token
	// exchange; empty when the caller has none.
	Token string
}

type callerKey struct{}

type serviceKey struct{}

// WithCaller says requests made with ctx are made for caller: a server
// whose tokens are exchanged gets one exchanged for caller's token.
func WithCaller(ctx context.Context, caller Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// WithServiceIdentity says requests made with ctx are the operator's own
// (discovery): a server whose tokens are exchanged gets one for the
// exchanging client itself, with the client credentials grant.
func WithServiceIdentity(ctx context.Context) context.Context {
	return context.WithValue(ctx, serviceKey{}, true)
}

// CallerOf returns the caller ctx carries, if any.
func CallerOf(ctx context.Context) (Caller, bool) {
	caller, ok := ctx.Value(callerKey{}).(Caller)
	return caller, ok
}

func isService(ctx context.Context) bool {
	marked, _ := ctx.Value(serviceKey{}).(bool)
	return marked
}

// Grant is how a server's token is got.
type Grant string

const (
	// GrantClientCredentials is the client credentials grant: the
	// server's own identity.
	GrantClientCredentials Grant = "ClientCredentials"
	// GrantTokenExchange exchanges each caller's token (RFC 8693); the
	// service identity (WithServiceIdentity) uses the client credentials
	// grant of the same client.
	GrantTokenExchange Grant = "TokenExchange"
)

// Config is one server's spec.auth, read: the OAuth client and what it
// asks for.
type Config struct {
	Grant Grant
	// TokenURL is the token endpoint.
	TokenURL string
	// ClientID and ClientSecret authenticate the client with HTTP Basic
	// authentication (client_secret_basic).
	ClientID     string
	ClientSecret string
	// Scopes, Audience and Resource are asked for when set.
	Scopes   []string
	Audience string
	Resource string
	// RequestedTokenType is the token type a token exchange asks for
	// (default TokenTypeAccessToken).
	RequestedTokenType string
	// TLS verifies the token endpoint's certificate; nil uses the system
	// roots.
	TLS *tls.Config
	// Timeout bounds each request to the token endpoint (default
	// DefaultTimeout).
	Timeout time.Duration
	// Egress limits the addresses the token endpoint may be dialed at.
	Egress *mcpclient.EgressPolicy
}

func (c Config) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// endpoint is the token endpoint as messages may name it: no user info,
// no query, no fragment.
func (c Config) endpoint() string {
	u, err := url.Parse(c.TokenURL)
	if err != nil || u.Host == "" {
		return "the configured token URL"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
