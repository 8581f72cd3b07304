package testoidc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the compact in-memory op.Storage behind the provider. It holds
// the registered clients, the signing keys and the token lifetime; zitadel's
// op package does the parsing, client authentication, subject-token
// verification, claim assembly, signing and error answers. Tokens are not
// stored: access tokens are self-contained JWTs.
var (
	_ op.Storage                        = (*storage)(nil)
	_ op.ClientCredentialsStorage       = (*storage)(nil)
	_ op.TokenExchangeStorage           = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
)

var errInteractive = errors.New("testoidc: interactive flows (authorize, refresh, users) are not supported")

type storage struct {
	clients map[string]*client // read-only after Start

	mu       sync.Mutex
	signing  *rsaKey
	keys     []*rsaKey // served in the JWKS, newest first
	keySeq   int
	dropOld  bool
	lifetime time.Duration
}

func newStorage(opts Options) (*storage, error) {
	s := &storage{clients: map[string]*client{}, dropOld: opts.DropOldKeysOnRotate}
	s.setLifetime(opts.AccessTokenLifetime)
	for _, c := range opts.Clients {
		if c.ID == "" || c.Secret == "" {
			return nil, fmt.Errorf("testoidc: client %q needs an ID and a Secret", c.ID)
		}
		if _, dup := s.clients[c.ID]; dup {
			return nil, fmt.Errorf("testoidc: client %q registered twice", c.ID)
		}
		s.clients[c.ID] = &client{c}
	}
	if _, err := s.rotate(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *storage) setLifetime(d time.Duration) {
	if d == 0 {
		d = DefaultAccessTokenLifetime
	}
	s.mu.Lock()
	s.lifetime = d
	s.mu.Unlock()
}

// rotate makes a fresh RSA key the signing key and returns its key id.
func (s *storage) rotate() (string, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("testoidc: generating RSA key: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keySeq++
	k := &rsaKey{id: fmt.Sprintf("testoidc-%d-%s", s.keySeq, randomID()[:8]), priv: priv}
	s.signing = k
	if s.dropOld {
		s.keys = []*rsaKey{k}
	} else {
		s.keys = append([]*rsaKey{k}, s.keys...)
	}
	return k.id, nil
}

func (s *storage) currentKeyID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signing.id
}

func (s *storage) client(id string) (*client, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("testoidc: unknown client %q", id)
	}
	return c, nil
}

// --- keys ---

type rsaKey struct {
	id   string
	priv *rsa.PrivateKey
}

func (k *rsaKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *rsaKey) Key() any                                    { return k.priv }
func (k *rsaKey) ID() string                                  { return k.id }

type publicKey struct{ k *rsaKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.priv.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signing, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		keys[i] = publicKey{k}
	}
	return keys, nil
}

// --- clients ---

// client adapts a registered Client to op.Client: a confidential web client
// (client_secret_basic or client_secret_post) that gets JWT access tokens
// through client_credentials and token exchange only.
type client struct{ c Client }

func (c *client) GetID() string                        { return c.c.ID }
func (c *client) RedirectURIs() []string               { return nil }
func (c *client) PostLogoutRedirectURIs() []string     { return nil }
func (c *client) ApplicationType() op.ApplicationType  { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod          { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType   { return nil }
func (c *client) LoginURL(string) string               { return "" }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return DefaultAccessTokenLifetime }
func (c *client) DevMode() bool                        { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) IsScopeAllowed(scope string) bool     { return c.scopeAllowed(scope) }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange}
}

func (c *client) scopeAllowed(scope string) bool {
	return len(c.c.Scopes) == 0 || slices.Contains(c.c.Scopes, scope)
}

func (c *client) checkScopes(scopes []string) error {
	for _, sc := range scopes {
		if !c.scopeAllowed(sc) {
			return oidc.ErrInvalidScope().WithDescription("scope %q is not allowed for client %q", sc, c.c.ID)
		}
	}
	return nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	return s.client(id)
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	c, err := s.client(id)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(c.c.Secret), []byte(secret)) != 1 {
		return errors.New("testoidc: wrong client secret")
	}
	return nil
}

// --- client credentials ---

func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return s.client(id)
}

// ccRequest is the op.TokenRequest of a client_credentials grant.
type ccRequest struct {
	subject          string
	audience, scopes []string
}

func (r *ccRequest) GetSubject() string    { return r.subject }
func (r *ccRequest) GetAudience() []string { return r.audience }
func (r *ccRequest) GetScopes() []string   { return r.scopes }

func (s *storage) ClientCredentialsTokenRequest(ctx context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c, err := s.client(id)
	if err != nil {
		return nil, err
	}
	if err := c.checkScopes(scopes); err != nil {
		return nil, err
	}
	req := &ccRequest{subject: c.c.Subject, audience: c.c.Audience, scopes: scopes}
	if req.subject == "" {
		req.subject = c.c.ID
	}
	// RFC 8707 resource, carried here by resourceInterceptor: narrows aud to
	// values the client is registered for.
	if res, _ := ctx.Value(resourceKey{}).([]string); len(res) > 0 {
		allowed := c.c.Audience
		if len(allowed) == 0 {
			allowed = []string{c.c.ID}
		}
		for _, r := range res {
			if !slices.Contains(allowed, r) {
				return nil, oidc.ErrInvalidTarget().WithDescription("resource %q is not allowed for client %q", r, id)
			}
		}
		req.audience = res
	}
	return req, nil
}

// --- token creation ---

func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	d := s.lifetime
	s.mu.Unlock()
	now := time.Now()
	if d < 0 {
		return randomID(), now, nil // already expired: exp == iat, expires_in 0
	}
	return randomID(), now.Add(d), nil
}

func (s *storage) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, _ []string) (map[string]any, error) {
	return scopeClaim(req.GetScopes()), nil
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, _, _ string, scopes []string) (map[string]any, error) {
	return scopeClaim(scopes), nil
}

func scopeClaim(scopes []string) map[string]any {
	if len(scopes) == 0 {
		return map[string]any{}
	}
	return map[string]any{"scope": strings.Join(scopes, " ")}
}

// --- token exchange (RFC 8693) ---

// ValidateTokenExchangeRequest is called by zitadel after it authenticated the
// client and verified the subject token (signature by a key in the JWKS,
// issuer, expiry). It applies the per-client policy.
func (s *storage) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	c, err := s.client(req.GetClientID())
	if err != nil {
		return err
	}
	if len(c.c.ExchangeAudiences) == 0 {
		return oidc.ErrUnauthorizedClient().WithDescription("client %q may not use token exchange", c.c.ID)
	}
	switch req.GetRequestedTokenType() {
	case "":
		req.SetRequestedTokenType(oidc.AccessTokenType)
	case oidc.AccessTokenType:
	default:
		return oidc.ErrInvalidRequest().WithDescription("only %s can be requested", oidc.AccessTokenType)
	}
	// resourceInterceptor copied every resource into audience already.
	targets := req.GetAudience()
	if len(targets) == 0 {
		return oidc.ErrInvalidRequest().WithDescription("audience or resource is required")
	}
	for _, t := range targets {
		if !slices.Contains(c.c.ExchangeAudiences, t) {
			return oidc.ErrInvalidTarget().WithDescription("audience %q is not allowed for client %q", t, c.c.ID)
		}
	}
	return c.checkScopes(req.GetScopes())
}

func (s *storage) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest adds scope and an RFC 8693 act
// claim naming the exchanging client (nesting any act of the subject token).
func (s *storage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	claims := scopeClaim(req.GetScopes())
	act := map[string]any{"sub": req.GetClientID()}
	if prior, ok := req.GetExchangeSubjectTokenClaims()["act"]; ok && prior != nil {
		act["act"] = prior
	}
	claims["act"] = act
	return claims, nil
}

func (s *storage) SetUserinfoFromTokenExchangeRequest(context.Context, *oidc.UserInfo, op.TokenExchangeRequest) error {
	return nil
}

// --- unsupported parts of op.Storage ---

func (s *storage) CreateAuthRequest(context.Context, *oidc.AuthRequest, string) (op.AuthRequest, error) {
	return nil, errInteractive
}
func (s *storage) AuthRequestByID(context.Context, string) (op.AuthRequest, error) {
	return nil, errInteractive
}
func (s *storage) AuthRequestByCode(context.Context, string) (op.AuthRequest, error) {
	return nil, errInteractive
}
func (s *storage) SaveAuthCode(context.Context, string, string) error { return errInteractive }
func (s *storage) DeleteAuthRequest(context.Context, string) error    { return nil }
func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, oidc.ErrInvalidRequest().WithDescription("refresh tokens are not issued")
}
func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errInteractive
}
func (s *storage) TerminateSession(context.Context, string, string) error { return nil }
func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return nil
}
func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errInteractive
}
func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("testoidc: introspection is not supported")
}
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("testoidc: JWT profile / private_key_jwt is not supported")
}
func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("testoidc: JWT profile is not supported")
}
func (s *storage) Health(context.Context) error { return nil }
