// Package testoidc starts a real OpenID provider in-process for tests.
//
// What is real: the provider is the OpenID Provider of the certified library
// github.com/zitadel/oidc/v3 (pkg/op, v3.52.0), served over HTTPS on
// 127.0.0.1 with a certificate from a throw-away ECDSA test CA (SANs
// 127.0.0.1 and localhost). Discovery (/.well-known/openid-configuration),
// the JWKS (/keys), the authorization endpoint (/authorize and its
// /authorize/callback) and the token endpoint (/oauth/token) are zitadel's
// handlers. Every token is issued by zitadel through its token endpoint:
// zitadel parses the request, authenticates the client (client_secret_basic
// or client_secret_post; none for public clients), verifies subject tokens
// and PKCE code verifiers, builds the claims, signs the JWT (RS256) and
// writes the OAuth error answers. There is no token minter in this package;
// the helpers (ClientCredentialsToken, Exchange, RequestToken) are plain
// HTTP clients of the token endpoint.
//
// The authorization code flow with PKCE is zitadel's, for public clients (a
// page in a browser): /authorize parses the request and checks the client,
// the redirect_uri (exactly one of the client's RedirectURIs), the
// response_type (code) and the code_challenge_method, then sends the browser
// to the login; the callback issues a code (zitadel's, encrypted with a key
// of the provider's run) and redirects to the redirect_uri with code and
// state, or with error, error_description and state. The token endpoint
// checks the code, the client_id, the redirect_uri and the code_verifier
// against the S256 challenge (invalid_grant otherwise), and the code works
// once.
//
// CORS: zitadel's router answers every origin (rs/cors, any Origin
// reflected in Access-Control-Allow-Origin, preflights for GET, HEAD and
// POST), so a page on another origin can read the discovery document and
// exchange its code at the token endpoint with fetch. Nothing here adds to
// it.
//
// What is configured (the compact op.Storage in storage.go, the "policy"):
//
//   - Clients: confidential clients from Options.Clients. Access tokens are
//     JWTs with iss, sub, aud, exp, iat, nbf, jti, client_id and, when scopes
//     were granted, scope (space-delimited). No refresh tokens, no
//     introspection, no userinfo.
//   - Public clients (Client.Public): no secret, the authorization code flow
//     only, and only with PKCE S256 (an authorization request without a
//     code_challenge, or with method plain, is redirected back with
//     invalid_request; zitadel alone would accept plain). Redirect URIs are
//     https, or http on a loopback address (zitadel's dev mode, which only
//     lifts its rule against http redirect URIs: the match is still exact).
//   - The login is not interactive: zitadel sends the browser to the
//     provider's /login, which signs in the client's LoginSubject at once and
//     sends it on to zitadel's callback. There are no users, passwords or
//     consent pages; the user is configured, the flow around it is real.
//     Tokens of the flow: sub = LoginSubject, aud = Client.Audience plus the
//     client's ID, an ID token besides the access token (aud the same).
//     Authorization requests and their codes live 5 minutes.
//   - client_credentials: sub = Client.Subject (default Client.ID); aud =
//     Client.Audience (zitadel uses [Client.ID] when empty); scopes must be
//     in Client.Scopes unless that is empty (else invalid_scope).
//   - RFC 8707 resource on client_credentials: zitadel v3.52.0 does NOT parse
//     it (oidc.ClientCredentialsRequest has no resource field). This package
//     honours it with an HTTP interceptor in front of zitadel's handler that
//     hands the values to the storage: the token's aud becomes the resource
//     values, each of which must be in Client.Audience (or be Client.ID when
//     Audience is empty), else zitadel answers invalid_target.
//   - Token exchange (RFC 8693, urn:ietf:params:oauth:grant-type:token-exchange):
//     the subject token must be an access token this provider issued
//     (subject_token_type urn:ietf:params:oauth:token-type:access_token),
//     signed by a key still in the JWKS and not expired; zitadel checks
//     that. The new token has sub = the subject token's sub, aud = the
//     requested audience plus resource values (zitadel itself only puts
//     audience into aud; the interceptor copies resource values into
//     audience), client_id = the exchanging client and act = {"sub":
//     exchanging client} (nesting the subject token's act, if any). The
//     subject token's own aud is not checked. Policy per exchanging client:
//     empty Client.ExchangeAudiences → unauthorized_client; a target not in
//     it → invalid_target; no audience/resource → invalid_request; only
//     access tokens can be requested.
//   - Refusals as zitadel answers them (all JSON {"error", "error_description"}):
//     unknown client or wrong secret → 401 invalid_client; unknown, garbage,
//     expired, foreign-signed or rotated-away subject token → 400
//     invalid_request ("subject_token is invalid"; zitadel checks the subject
//     token before the client policy, and never answers invalid_grant here);
//     policy refusals above → 400 with the stated code.
//
// Fault knobs (outside zitadel, in a wrapper handler): SetDown makes every
// endpoint answer 503 {"error":"temporarily_unavailable"}; SetDelay holds
// every request before it is answered; TokenRequests counts requests that
// reached the token endpoint path (including ones answered 503).
//
// Keys: RotateKeys makes a new RSA key the signing key. By default the JWKS
// keeps serving all earlier keys too (tokens signed before the rotation stay
// verifiable); with Options.DropOldKeysOnRotate it serves only the new one.
package testoidc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// DefaultAccessTokenLifetime is the access token lifetime when none is set.
const DefaultAccessTokenLifetime = 5 * time.Minute

// Client is a client registered with the provider: confidential (with a
// Secret) or, with Public, a page in a browser that signs its user in with
// the authorization code flow and PKCE.
type Client struct {
	ID, Secret string
	// Public makes the client public: no Secret (token endpoint
	// authentication method none), grant type authorization_code only,
	// with a PKCE challenge of method S256, to RedirectURIs only.
	Public bool
	// RedirectURIs of a public client: an authorization request's
	// redirect_uri must be one of them exactly. Each is https, or http on a
	// loopback address.
	RedirectURIs []string
	// LoginSubject is the sub of the user the provider signs in when a
	// public client sends a browser to the authorization endpoint: at once,
	// with no page and no question (see the package doc).
	LoginSubject string
	// Subject is the sub of tokens the client gets with client_credentials;
	// empty means ID.
	Subject string
	// Audience is the aud of client_credentials tokens (empty: zitadel uses
	// [ID]) and the set a client_credentials resource parameter may pick from.
	// A public client's tokens have this aud and the client's ID.
	Audience []string
	// Scopes the client may request; empty means any scope.
	Scopes []string
	// ExchangeAudiences are the audiences/resources the client may request by
	// token exchange; empty means token exchange is refused for it.
	ExchangeAudiences []string
}

// Options configure Start.
type Options struct {
	Clients []Client
	// AccessTokenLifetime of issued access tokens; 0 means
	// DefaultAccessTokenLifetime. A negative value issues tokens that are
	// already expired (exp == iat, expires_in 0).
	AccessTokenLifetime time.Duration
	// DropOldKeysOnRotate makes RotateKeys remove earlier keys from the JWKS.
	DropOldKeysOnRotate bool
}

// Provider is a running OpenID provider. Its exported fields are read-only.
type Provider struct {
	Issuer           string // https://127.0.0.1:PORT, no trailing slash
	TokenURL         string
	JWKSURL          string
	AuthorizationURL string
	CAPEM            []byte // PEM of the CA that signed the serving certificate
	// Certificate is the serving certificate, for clients that pin its key
	// rather than trust CAPEM (a browser's --ignore-certificate-errors-spki-list).
	Certificate *x509.Certificate

	store     *storage
	transport *http.Transport
	srv       *http.Server
	served    chan struct{}
	stopped   chan struct{}
	stopOnce  sync.Once
	tokenPath string
	// callbackURL is zitadel's authorize callback, where the login sends
	// the browser back (with ?id=).
	callbackURL string

	down     atomic.Bool
	delay    atomic.Int64 // nanoseconds
	tokenReq atomic.Int64
	logins   atomic.Int64
}

// loginPath is the provider's non-interactive login.
const loginPath = "/login"

// TB is the part of testing.TB (and of Ginkgo's GinkgoT()) StartT needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// StartT starts a provider and stops it in t.Cleanup; it fails t on error.
func StartT(t TB, opts Options) *Provider {
	t.Helper()
	p, err := Start(opts)
	if err != nil {
		t.Fatalf("testoidc: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Start starts a provider on 127.0.0.1:0. Call Stop when done.
func Start(opts Options) (*Provider, error) {
	store, err := newStorage(opts)
	if err != nil {
		return nil, err
	}
	caPEM, serverCert, err := newTLS()
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(serverCert.Certificate[0])
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Provider{
		Issuer:      "https://" + ln.Addr().String(),
		CAPEM:       caPEM,
		Certificate: leaf,
		store:       store,
		served:      make(chan struct{}),
		stopped:     make(chan struct{}),
	}
	var cryptoKey [32]byte
	_, _ = rand.Read(cryptoKey[:])
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:      cryptoKey,
		AuthMethodPost: true,
		CodeMethodS256: true, // advertised in discovery; checked by zitadel either way
	}, store, op.StaticIssuer(p.Issuer), op.WithHttpInterceptors(p.resourceInterceptor))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("testoidc: zitadel provider: %w", err)
	}
	p.tokenPath = provider.TokenEndpoint().Relative()
	p.TokenURL = provider.TokenEndpoint().Absolute(p.Issuer)
	p.JWKSURL = provider.KeysEndpoint().Absolute(p.Issuer)
	p.AuthorizationURL = provider.AuthorizationEndpoint().Absolute(p.Issuer)
	p.callbackURL = op.AuthCallbackURL(provider)(op.ContextWithIssuer(context.Background(), p.Issuer), "")

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	p.transport = http.DefaultTransport.(*http.Transport).Clone()
	p.transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	p.srv = &http.Server{
		Handler:           p.faults(provider),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.ServeTLS(ln, "", "")
	}()
	return p, nil
}

// Stop closes the listener and all connections and waits for the server to
// finish. It is safe to call more than once.
func (p *Provider) Stop() {
	p.stopOnce.Do(func() {
		close(p.stopped)
		_ = p.srv.Close()
		<-p.served
		p.transport.CloseIdleConnections()
	})
}

// HTTPClient returns a client that trusts the provider's CA (and nothing else).
func (p *Provider) HTTPClient() *http.Client {
	return &http.Client{Transport: p.transport}
}

// RotateKeys makes a fresh RSA key the signing key and returns its key id
// (the kid header of tokens issued from now on). See the package doc for
// which keys the JWKS serves afterwards.
func (p *Provider) RotateKeys() string {
	kid, err := p.store.rotate()
	if err != nil {
		panic(err) // crypto/rand does not fail; a 2048-bit key cannot be refused
	}
	return kid
}

// KeyID returns the kid of the current signing key.
func (p *Provider) KeyID() string { return p.store.currentKeyID() }

// SetDown makes every endpoint answer 503 (true) or serve again (false).
func (p *Provider) SetDown(down bool) { p.down.Store(down) }

// SetDelay holds every request for d before answering it (0: no delay).
// A held request ends early when its client goes away or Stop is called.
func (p *Provider) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetAccessTokenLifetime changes the lifetime of tokens issued from now on,
// with the meaning of Options.AccessTokenLifetime.
func (p *Provider) SetAccessTokenLifetime(d time.Duration) { p.store.setLifetime(d) }

// TokenRequests is the number of HTTP requests that reached the token
// endpoint path, whatever their answer.
func (p *Provider) TokenRequests() int { return int(p.tokenReq.Load()) }

// Logins is the number of times the provider signed a user in for an
// authorization request.
func (p *Provider) Logins() int { return int(p.logins.Load()) }

// TokenError is an error answer of the token endpoint.
type TokenError struct {
	StatusCode  int
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("token endpoint: %d %s: %s", e.StatusCode, e.Code, e.Description)
}

// ClientCredentialsToken gets an access token with the client_credentials
// grant, authenticating with client_secret_basic.
func (p *Provider) ClientCredentialsToken(ctx context.Context, clientID, secret string, scopes ...string) (string, error) {
	form := url.Values{"grant_type": {string(oidc.GrantTypeClientCredentials)}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	return p.RequestToken(ctx, clientID, secret, form)
}

// Exchange performs an RFC 8693 token exchange of subjectToken (an access
// token) for an access token with the given audience.
func (p *Provider) Exchange(ctx context.Context, clientID, secret, subjectToken, audience string) (string, error) {
	return p.RequestToken(ctx, clientID, secret, url.Values{
		"grant_type":         {string(oidc.GrantTypeTokenExchange)},
		"subject_token":      {subjectToken},
		"subject_token_type": {string(oidc.AccessTokenType)},
		"audience":           {audience},
	})
}

// RequestToken POSTs form to the token endpoint with client_secret_basic
// authentication and returns the access_token of a 200 answer. Other
// answers give a *TokenError.
func (p *Provider) RequestToken(ctx context.Context, clientID, secret string, form url.Values) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret)) // RFC 6749 §2.3.1
	resp, err := p.HTTPClient().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		te := &TokenError{StatusCode: resp.StatusCode}
		if json.Unmarshal(body, te) != nil || te.Code == "" {
			te.Description = strings.TrimSpace(string(body))
		}
		return "", te
	}
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		return "", fmt.Errorf("token endpoint: no access_token in %q", body)
	}
	return tr.AccessToken, nil
}

// faults wraps zitadel's handler with the counter, the delay and SetDown.
func (p *Provider) faults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == p.tokenPath {
			p.tokenReq.Add(1)
		}
		if d := time.Duration(p.delay.Load()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-p.stopped:
				t.Stop()
				return
			}
		}
		if p.down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":"temporarily_unavailable","error_description":"testoidc: provider is down"}`)
			return
		}
		if r.URL.Path == loginPath {
			p.login(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// login is the provider's login "page": zitadel sends the browser here
// with the id of the authorization request it stored; the client's
// LoginSubject is signed in at once and the browser goes on to zitadel's
// callback, which issues the code and redirects to the client.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "testoidc: the login takes GET", http.StatusMethodNotAllowed)
		return
	}
	id := r.URL.Query().Get("id")
	if err := p.store.login(id); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.logins.Add(1)
	http.Redirect(w, r, p.callbackURL+url.QueryEscape(id), http.StatusFound)
}

type resourceKey struct{}

// resourceInterceptor carries the RFC 8707 resource parameter, which
// zitadel's token endpoint does not map into aud by itself: for
// client_credentials it goes to the storage through the context; for token
// exchange every resource is added to the audience values.
func (p *Provider) resourceInterceptor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == p.tokenPath && r.ParseForm() == nil {
			if res := r.Form["resource"]; len(res) > 0 {
				switch oidc.GrantType(r.Form.Get("grant_type")) {
				case oidc.GrantTypeClientCredentials:
					r = r.WithContext(context.WithValue(r.Context(), resourceKey{}, res))
				case oidc.GrantTypeTokenExchange:
					for _, v := range res {
						if !slices.Contains(r.Form["audience"], v) {
							r.Form.Add("audience", v)
						}
					}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newTLS creates a test CA and a serving certificate for 127.0.0.1 and
// localhost, both ECDSA P-256, valid for a day.
func newTLS() (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testoidc CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}, nil
}
