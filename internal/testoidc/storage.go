package testoidc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the compact in-memory op.Storage behind the provider. It holds
// the registered clients, the signing keys, the token lifetime and the
// authorization requests of the code flow in progress; zitadel's op package
// does the parsing, client authentication, redirect URI, PKCE and
// subject-token verification, claim assembly, signing and error answers.
// Tokens are not stored: access tokens are self-contained JWTs.
var (
	_ op.Storage                        = (*storage)(nil)
	_ op.ClientCredentialsStorage       = (*storage)(nil)
	_ op.TokenExchangeStorage           = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
)

var errUnsupported = errors.New("testoidc: refresh tokens and userinfo are not supported")

// authRequestLifetime is how long an authorization request, and the code
// issued for it, may be used.
const authRequestLifetime = 5 * time.Minute

type storage struct {
	clients map[string]*client // read-only after Start

	mu       sync.Mutex
	signing  *rsaKey
	keys     []*rsaKey // served in the JWKS, newest first
	keySeq   int
	dropOld  bool
	lifetime time.Duration
	// authRequests are the authorization requests of the code flow by id,
	// codes the id each issued code is for.
	authRequests map[string]*authRequest
	codes        map[string]string
}

func newStorage(opts Options) (*storage, error) {
	s := &storage{clients: map[string]*client{}, dropOld: opts.DropOldKeysOnRotate,
		authRequests: map[string]*authRequest{}, codes: map[string]string{}}
	s.setLifetime(opts.AccessTokenLifetime)
	for _, c := range opts.Clients {
		if err := checkClient(c); err != nil {
			return nil, err
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

// checkClient refuses a registration the provider could not honour.
func checkClient(c Client) error {
	if !c.Public {
		if c.ID == "" || c.Secret == "" {
			return fmt.Errorf("testoidc: client %q needs an ID and a Secret", c.ID)
		}
		if len(c.RedirectURIs) > 0 || c.LoginSubject != "" {
			return fmt.Errorf("testoidc: client %q: only public clients use the authorization code flow", c.ID)
		}
		return nil
	}
	switch {
	case c.ID == "":
		return errors.New("testoidc: a public client needs an ID")
	case c.Secret != "":
		return fmt.Errorf("testoidc: public client %q may not have a Secret", c.ID)
	case len(c.RedirectURIs) == 0:
		return fmt.Errorf("testoidc: public client %q needs RedirectURIs", c.ID)
	case c.LoginSubject == "":
		return fmt.Errorf("testoidc: public client %q needs a LoginSubject, the user the provider signs in", c.ID)
	case len(c.ExchangeAudiences) > 0:
		return fmt.Errorf("testoidc: public client %q may not exchange tokens", c.ID)
	}
	for _, uri := range c.RedirectURIs {
		u, err := url.Parse(uri)
		if err != nil || u.Host == "" || u.Fragment != "" {
			return fmt.Errorf("testoidc: public client %q: redirect URI %q is not an absolute URL without fragment", c.ID, uri)
		}
		_, loopback := op.HTTPLoopbackOrLocalhost(uri)
		if secure := u.Scheme == "https" || u.Scheme == "http" && loopback; !secure {
			return fmt.Errorf("testoidc: public client %q: redirect URI %q must be https, or http on a loopback address", c.ID, uri)
		}
	}
	return nil
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

// client adapts a registered Client to op.Client. A confidential client is
// a web client (client_secret_basic or client_secret_post) that gets JWT
// access tokens through client_credentials and token exchange. A public
// client is a user-agent client (a page in a browser): no secret
// (authentication method none), the authorization code flow with PKCE
// only, to its registered redirect URIs.
type client struct{ c Client }

func (c *client) GetID() string                    { return c.c.ID }
func (c *client) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return nil }
func (c *client) ApplicationType() op.ApplicationType {
	if c.c.Public {
		return op.ApplicationTypeUserAgent
	}
	return op.ApplicationTypeWeb
}
func (c *client) AuthMethod() oidc.AuthMethod {
	if c.c.Public {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	if c.c.Public {
		return []oidc.ResponseType{oidc.ResponseTypeCode}
	}
	return nil
}

// LoginURL is where zitadel sends the browser to sign the user in: the
// provider's non-interactive login (Provider.login).
func (c *client) LoginURL(id string) string            { return loginPath + "?id=" + url.QueryEscape(id) }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return DefaultAccessTokenLifetime }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) IsScopeAllowed(scope string) bool     { return c.scopeAllowed(scope) }

// DevMode lets zitadel accept a public client's http redirect URIs, which
// checkClient allows on loopback addresses only (a console served over
// plain HTTP on 127.0.0.1 in tests). The URI must still be registered,
// exactly.
func (c *client) DevMode() bool { return c.c.Public }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) GrantTypes() []oidc.GrantType {
	if c.c.Public {
		return []oidc.GrantType{oidc.GrantTypeCode}
	}
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
	if c.c.Public {
		return fmt.Errorf("testoidc: client %q is public: it has no secret", id)
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

// --- authorization code flow (public clients, PKCE S256) ---

// authRequest is an authorization request of a public client, as zitadel
// parsed and checked it (client, registered redirect URI, response type,
// scopes), from /authorize until its code is exchanged.
type authRequest struct {
	id          string
	created     time.Time
	clientID    string
	redirectURI string
	state       string
	nonce       string
	scopes      []string
	audience    []string
	mode        oidc.ResponseMode
	challenge   *oidc.CodeChallenge
	// subject and authTime are set by the login; done then.
	subject  string
	authTime time.Time
	done     bool
	// redeemed is set when its code is first presented at the token
	// endpoint: the code is refused from then on.
	redeemed bool
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return nil }
func (a *authRequest) GetAudience() []string                 { return a.audience }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return oidc.ResponseTypeCode }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.mode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// CreateAuthRequest stores an authorization request zitadel has checked.
// The policy added here: only public clients, and only with a PKCE
// challenge of method S256 (zitadel itself accepts plain, and requires a
// challenge of public clients only when the code is exchanged).
func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	c, err := s.client(req.ClientID)
	if err != nil {
		return nil, err
	}
	if !c.c.Public {
		return nil, oidc.ErrUnauthorizedClient().WithDescription("client %q may not use the authorization code flow", c.c.ID)
	}
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE with code_challenge_method S256 is required")
	}
	// Scopes were filtered by zitadel: the standard ones and those the
	// client may have (IsScopeAllowed) are kept, others dropped.
	//
	// aud: what the client is registered for, and the client itself (an ID
	// token's aud must name it; zitadel gives both tokens the same aud).
	audience := append([]string(nil), c.c.Audience...)
	if !slices.Contains(audience, c.c.ID) {
		audience = append(audience, c.c.ID)
	}
	a := &authRequest{
		id: randomID(), created: time.Now(), clientID: c.c.ID, redirectURI: req.RedirectURI,
		state: req.State, nonce: req.Nonce, scopes: req.Scopes, audience: audience, mode: req.ResponseMode,
		challenge: &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpiredLocked()
	s.authRequests[a.id] = a
	return a, nil
}

// login signs the client's LoginSubject in for the authorization request
// id, at once and without asking anything.
func (s *storage) login(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpiredLocked()
	a, ok := s.authRequests[id]
	if !ok {
		return errors.New("testoidc: no such authorization request (expired, or used)")
	}
	c, err := s.client(a.clientID)
	if err != nil {
		return err
	}
	a.subject, a.authTime, a.done = c.c.LoginSubject, time.Now(), true
	return nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpiredLocked()
	a, ok := s.authRequests[id]
	if !ok {
		return nil, oidc.ErrInvalidRequest().WithDescription("no such authorization request (expired, or used)")
	}
	c := *a // zitadel reads it unlocked
	return &c, nil
}

// AuthRequestByCode finds the request a code was issued for; zitadel then
// checks the client, the redirect URI and the code verifier against it.
// A code is redeemed here, under the lock, the first time it is presented:
// zitadel deletes the request only once it signed the tokens, so two
// requests racing with one code would otherwise both get tokens. A code
// presented once is refused after, whether that exchange succeeded or not.
func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpiredLocked()
	a, ok := s.authRequests[s.codes[code]]
	if !ok || !a.done || a.redeemed {
		return nil, errors.New("testoidc: unknown, expired or used code")
	}
	a.redeemed = true
	c := *a // zitadel reads it unlocked
	return &c, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.authRequests[id]; !ok {
		return oidc.ErrInvalidRequest().WithDescription("no such authorization request (expired, or used)")
	}
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest is called by zitadel once a code was exchanged: the
// code cannot be used again.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(id)
	return nil
}

func (s *storage) deleteLocked(id string) {
	delete(s.authRequests, id)
	for code, of := range s.codes {
		if of == id {
			delete(s.codes, code)
		}
	}
}

func (s *storage) dropExpiredLocked() {
	for id, a := range s.authRequests {
		if time.Since(a.created) > authRequestLifetime {
			s.deleteLocked(id)
		}
	}
}

// --- unsupported parts of op.Storage ---

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, oidc.ErrInvalidRequest().WithDescription("refresh tokens are not issued")
}
func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errUnsupported
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
	return errUnsupported
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
