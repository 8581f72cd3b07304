package toolcatalog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-logr/logr"
)

// OIDCOptions configure the catalog's own validation of JWTs from one
// OpenID provider (--catalog-auth=oidc, or alongside kubernetes). Claims
// map to a Kubernetes user as the API server's JWT authenticator maps
// them, so RBAC (SubjectAccessReviews on the mapped user) still decides
// what each caller may read and call.
type OIDCOptions struct {
	// IssuerURL is the provider's issuer, exactly as its tokens' iss
	// claim says it; its discovery document is read at
	// IssuerURL/.well-known/openid-configuration on the first token.
	IssuerURL string
	// HTTPClient reaches the provider (its CA, its proxy). Default: one
	// with the system roots and a 10s timeout.
	HTTPClient *http.Client
	// Audiences a token may name besides the endpoint it is presented to
	// (and the catalog's public URL): for providers that put a client id
	// in aud. Empty: only those two.
	Audiences []string
	// UsernameClaim is the claim that names the user (default sub).
	UsernameClaim string
	// UsernamePrefix is put before that name, so that users of this
	// provider never collide with the cluster's own. Default, as the API
	// server's: the issuer URL and "#", or nothing for the email claim;
	// "-" for no prefix.
	UsernamePrefix string
	// GroupsClaim is the claim listing the user's groups (a string or an
	// array of strings); empty maps no groups.
	GroupsClaim string
	// GroupsPrefix is put before each group name.
	GroupsPrefix string
	// SigningAlgorithms accepted (default RS256, ES256; "none" and HMAC
	// algorithms are never accepted: a public key cannot check them).
	SigningAlgorithms []string
}

// Bounds on what the catalog accepts of a token.
const (
	// maxTokenBytes: longer bearer values are refused unread.
	maxTokenBytes = 16 << 10
	// notBeforeSkew is how far ahead of the catalog's clock a token's
	// nbf and iat may be. exp has none.
	notBeforeSkew = time.Minute
	// jwksMinRefresh: the provider's keys are fetched again at most this
	// often, however many tokens name keys it does not know.
	jwksMinRefresh = 10 * time.Second
	// discoveryRetry: after the provider could not be reached, tokens are
	// answered 503 for this long before it is asked again.
	discoveryRetry = 2 * time.Second
)

// DefaultSigningAlgorithms are the algorithms accepted when none are set.
var DefaultSigningAlgorithms = []string{oidc.RS256, oidc.ES256}

// CheckSigningAlgorithms refuses algorithms that cannot be checked with a
// provider's public keys, or that no one should accept.
func CheckSigningAlgorithms(algs []string) error {
	allowed := []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}
	for _, alg := range algs {
		if !slices.Contains(allowed, alg) {
			return fmt.Errorf("signing algorithm %q is not accepted: use asymmetric ones (%s)", alg, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// oidcValidator checks JWTs of one provider. The provider's discovery
// document is read on the first token (the catalog starts whether or not
// the provider is up), and its keys as go-oidc decides: when a token names
// a key id it does not hold, at most once per jwksMinRefresh.
type oidcValidator struct {
	opts OIDCOptions
	// log hears why the provider could not be read (at most once per
	// discoveryRetry): callers are told only that it could not be.
	log            logr.Logger
	usernamePrefix string
	client         *http.Client

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	// failedAt is when discovery last failed: until discoveryRetry has
	// passed, tokens are answered 503 without asking again.
	failedAt time.Time
}

func newOIDCValidator(opts OIDCOptions, log logr.Logger) (*oidcValidator, error) {
	if opts.IssuerURL == "" {
		return nil, errors.New("the OIDC issuer URL is required")
	}
	if len(opts.SigningAlgorithms) == 0 {
		opts.SigningAlgorithms = DefaultSigningAlgorithms
	}
	if err := CheckSigningAlgorithms(opts.SigningAlgorithms); err != nil {
		return nil, err
	}
	if opts.UsernameClaim == "" {
		opts.UsernameClaim = "sub"
	}
	prefix := opts.UsernamePrefix
	switch {
	case prefix == "-":
		prefix = ""
	case prefix == "" && opts.UsernameClaim != "email":
		prefix = opts.IssuerURL + "#"
	}
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{Timeout: 10 * time.Second}
	}
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	client := *base
	client.Transport = &jwksThrottle{next: next, minRefresh: jwksMinRefresh, failedWait: discoveryRetry}
	return &oidcValidator{opts: opts, log: log, usernamePrefix: prefix, client: &client}, nil
}

// peekedClaims are a JWT's iss and exp, read without checking anything:
// iss only says which validator to ask, exp only shortens how long an
// answer about the token is reused. Zero when the token is not a JWT.
type peekedClaims struct {
	Issuer string `json:"iss"`
	// Expiry is a NumericDate, which may have a fraction.
	Expiry float64 `json:"exp"`
}

func peek(token string) peekedClaims {
	var claims peekedClaims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return claims
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return peekedClaims{}
	}
	return claims
}

// expiry is exp as a time, zero when the token has none.
func (c peekedClaims) expiry() time.Time {
	if c.Expiry == 0 {
		return time.Time{}
	}
	return time.Unix(int64(c.Expiry), 0)
}

// ready returns the verifier, reading the provider's discovery document
// the first time (and again after a failure, no more than once per
// discoveryRetry).
func (v *oidcValidator) ready(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	if time.Since(v.failedAt) < discoveryRetry {
		return nil, errProviderUnavailable
	}
	ctx = oidc.ClientContext(context.WithoutCancel(ctx), v.client)
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, v.opts.IssuerURL)
	if err != nil {
		v.failedAt = time.Now()
		v.log.Error(err, "Reading the OpenID provider's discovery document failed; tokens are answered 503 until it can be read", "issuer", v.opts.IssuerURL)
		return nil, errProviderUnavailable
	}
	var meta struct {
		JWKSURL string `json:"jwks_uri"`
	}
	if err := provider.Claims(&meta); err != nil || meta.JWKSURL == "" {
		v.failedAt = time.Now()
		v.log.Error(err, "The OpenID provider's discovery document names no jwks_uri", "issuer", v.opts.IssuerURL)
		return nil, errProviderUnavailable
	}
	keys := &keySet{remote: oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), v.client), meta.JWKSURL)}
	v.verifier = oidc.NewVerifier(v.opts.IssuerURL, keys, &oidc.Config{
		SkipClientIDCheck:    true, // aud is checked below, against the endpoint
		SupportedSigningAlgs: v.opts.SigningAlgorithms,
	})
	return v.verifier, nil
}

var errProviderUnavailable = &authError{code: http.StatusServiceUnavailable,
	message: "the identity provider could not be reached to check the token; retry"}

// verify checks the token and maps its claims to a caller; audiences are
// the resources the token may be meant for. It answers an authError: 401
// with what is wrong with the token, or 503 when the provider's keys
// could not be read.
func (v *oidcValidator) verify(ctx context.Context, token string, audiences []string) (*caller, time.Time, error) {
	verifier, err := v.ready(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	unavailable := new(bool)
	idToken, err := verifier.Verify(context.WithValue(ctx, keysUnavailableKey{}, unavailable), token)
	if err != nil {
		var expired *oidc.TokenExpiredError
		switch {
		case *unavailable:
			return nil, time.Time{}, errProviderUnavailable
		case errors.As(err, &expired):
			return nil, time.Time{}, invalidToken("the token has expired")
		case strings.Contains(err.Error(), "nbf"):
			return nil, time.Time{}, invalidToken("the token is not valid yet")
		case strings.Contains(err.Error(), "different provider"):
			return nil, time.Time{}, invalidToken("the token was issued by another issuer")
		case strings.Contains(err.Error(), "malformed"):
			return nil, time.Time{}, invalidToken("the token is not a JWT signed with an accepted algorithm")
		case strings.Contains(err.Error(), "unmarshal"):
			return nil, time.Time{}, invalidToken("the token's claims are not what a JWT's are (iss, sub, aud, exp as strings and numbers)")
		default:
			// Remembered only until the keys may be fetched again: the
			// token may name a key the issuer has just published.
			refused := invalidToken("the token's signature does not verify with the issuer's keys")
			refused.rememberFor = jwksMinRefresh
			return nil, time.Time{}, refused
		}
	}
	if !slices.ContainsFunc(idToken.Audience, func(aud string) bool { return slices.Contains(audiences, aud) }) {
		return nil, time.Time{}, invalidToken("the token is not meant for this resource (its aud names none of " + strings.Join(audiences, ", ") + ")")
	}
	var claims map[string]json.RawMessage
	if err := idToken.Claims(&claims); err != nil {
		return nil, time.Time{}, invalidToken("the token's claims are not a JSON object")
	}
	now := time.Now()
	for _, name := range []string{"nbf", "iat"} {
		var at float64
		if raw, ok := claims[name]; ok && json.Unmarshal(raw, &at) == nil && time.Unix(int64(at), 0).After(now.Add(notBeforeSkew)) {
			return nil, time.Time{}, invalidToken("the token is not valid yet")
		}
	}
	who, err := v.callerOf(claims)
	if err != nil {
		return nil, time.Time{}, err
	}
	return who, idToken.Expiry, nil
}

// callerOf maps the claims to a user as the API server's JWT
// authenticator does: the username claim with its prefix, the groups
// claim with its, and the issuer.
func (v *oidcValidator) callerOf(claims map[string]json.RawMessage) (*caller, error) {
	var name string
	if json.Unmarshal(claims[v.opts.UsernameClaim], &name) != nil || name == "" {
		return nil, invalidToken("the token has no " + v.opts.UsernameClaim + " claim naming its user")
	}
	if v.opts.UsernameClaim == "email" {
		// As the API server: present, it must be true.
		if raw, ok := claims["email_verified"]; ok {
			var verified bool
			if json.Unmarshal(raw, &verified) != nil || !verified {
				return nil, invalidToken("the token's email is not verified")
			}
		}
	}
	var groups []string
	if v.opts.GroupsClaim != "" {
		if raw, ok := claims[v.opts.GroupsClaim]; ok {
			var one string
			if json.Unmarshal(raw, &groups) != nil {
				if json.Unmarshal(raw, &one) != nil {
					return nil, invalidToken("the token's " + v.opts.GroupsClaim + " claim is neither a string nor a list of strings")
				}
				groups = []string{one}
			}
		}
		for i := range groups {
			groups[i] = v.opts.GroupsPrefix + groups[i]
		}
	}
	return newCaller(authenticationUser(v.usernamePrefix+name, groups), v.opts.IssuerURL), nil
}

// invalidToken is a 401 whose challenge says error="invalid_token" and
// why. The reason never quotes the token.
func invalidToken(reason string) *authError {
	return &authError{code: http.StatusUnauthorized, message: "the bearer token is not valid: " + reason, oauthError: "invalid_token"}
}

// keysUnavailableKey marks, in a verification's context, that the
// provider's keys could not be fetched: that is a 503 to retry, not a
// token to refuse (go-oidc's error says it only in words).
type keysUnavailableKey struct{}

type keySet struct{ remote *oidc.RemoteKeySet }

func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.remote.VerifySignature(ctx, jwt)
	if err != nil && strings.HasPrefix(err.Error(), "fetching keys") {
		if flag, ok := ctx.Value(keysUnavailableKey{}).(*bool); ok {
			*flag = true
		}
	}
	return payload, err
}

// jwksThrottle answers a GET it made less than jwksMinRefresh ago with the
// body it got then: a token naming an unknown key id makes go-oidc fetch
// the keys again (as it should, for rotation), and a stream of such
// tokens must not become a stream of requests to the provider.
type jwksThrottle struct {
	next http.RoundTripper
	// minRefresh is how often the keys may be fetched; failedWait how
	// long after a failed fetch none is tried (every check answers 503
	// meanwhile, and clients retrying must not become traffic to the
	// provider).
	minRefresh, failedWait time.Duration

	mu      sync.Mutex
	url     string
	body    []byte
	header  http.Header
	fetched time.Time
	failed  time.Time
}

var errKeysFailedRecently = errors.New("the issuer's keys could not be fetched a moment ago")

func (t *jwksThrottle) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || strings.HasSuffix(req.URL.Path, "/.well-known/openid-configuration") {
		return t.next.RoundTrip(req)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.url == req.URL.String() && time.Since(t.fetched) < t.minRefresh {
		return t.replay(req), nil
	}
	if time.Since(t.failed) < t.failedWait {
		return nil, errKeysFailedRecently
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		t.failed = time.Now()
		return resp, nil
	}
	if err != nil {
		t.failed = time.Now()
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if err != nil {
		t.failed = time.Now()
		return nil, err
	}
	t.url, t.body, t.header, t.fetched = req.URL.String(), body, resp.Header.Clone(), time.Now()
	return t.replay(req), nil
}

func (t *jwksThrottle) replay(req *http.Request) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: t.header.Clone(), Body: io.NopCloser(bytes.NewReader(t.body)), ContentLength: int64(len(t.body)), Request: req}
}
