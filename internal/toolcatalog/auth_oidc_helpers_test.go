package toolcatalog

// Fixtures of the plain-testing OIDC tests (auth_oidc_test.go): a fake
// OpenID provider on an httptest TLS server whose discovery document and
// JWKS the test controls and counts, keys that sign tokens directly with
// go-jose, and an authorizer configured for that provider whose middleware
// the tests drive with httptest requests. Nothing here needs a control
// plane.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// oidcPublicURL is the catalog's public URL in these tests.
const oidcPublicURL = "https://catalog.example"

// Modes of the fake provider's endpoints.
const (
	oidcUp   int32 = iota
	oidcFail       // answers 500
)

// oidcIssuer is a fake OpenID provider: discovery at
// /.well-known/openid-configuration (issuer = its own URL, jwks_uri =
// /keys) and a JWKS of the keys published so far. It counts both.
type oidcIssuer struct {
	url  string // https://127.0.0.1:PORT
	addr string // 127.0.0.1:PORT

	mu   sync.Mutex
	srv  *httptest.Server
	keys []jose.JSONWebKey

	discoveryMode, jwksMode  atomic.Int32
	discoveries, jwksFetches atomic.Int64
}

func newOIDCIssuer(t *testing.T, keys ...oidcKey) *oidcIssuer {
	t.Helper()
	iss := &oidcIssuer{}
	for _, k := range keys {
		iss.publish(k)
	}
	iss.srv = httptest.NewTLSServer(http.HandlerFunc(iss.serve))
	iss.url = iss.srv.URL
	iss.addr = iss.srv.Listener.Addr().String()
	t.Cleanup(iss.stop)
	return iss
}

func (iss *oidcIssuer) serve(w http.ResponseWriter, r *http.Request) {
	// The issuer is the URL the provider is reached at; r.Host says it
	// without reading a field written after the server started.
	self := "https://" + r.Host
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		iss.discoveries.Add(1)
		if iss.discoveryMode.Load() != oidcUp {
			http.Error(w, "provider trouble", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                self,
			"jwks_uri":                              self + "/keys",
			"authorization_endpoint":                self + "/authorize",
			"token_endpoint":                        self + "/token",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	case "/keys":
		iss.jwksFetches.Add(1)
		if iss.jwksMode.Load() != oidcUp {
			http.Error(w, "provider trouble", http.StatusInternalServerError)
			return
		}
		iss.mu.Lock()
		set := jose.JSONWebKeySet{Keys: slices.Clone(iss.keys)}
		iss.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	default:
		http.NotFound(w, r)
	}
}

// publish adds a key's public half to the JWKS.
func (iss *oidcIssuer) publish(k oidcKey) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys = append(iss.keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
}

// stop closes the provider's server: connections to it are refused.
func (iss *oidcIssuer) stop() {
	iss.mu.Lock()
	srv := iss.srv
	iss.mu.Unlock()
	srv.Close()
}

// restart serves the provider again at the same address (httptest's TLS
// servers share one certificate, so clients that trusted the first trust
// this one).
func (iss *oidcIssuer) restart(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", iss.addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", iss.addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(iss.serve))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.StartTLS()
	iss.mu.Lock()
	iss.srv = srv
	iss.mu.Unlock()
}

// fetches are the discovery and JWKS requests the provider received.
func (iss *oidcIssuer) fetches() (discovery, jwks int64) {
	return iss.discoveries.Load(), iss.jwksFetches.Load()
}

var oidcJTI atomic.Int64

// claims are those of a valid token for aud (a string or a list): sub
// alice, groups dev and ops, valid from now for five minutes, and a jti
// of its own so that no two tokens are the same string.
func (iss *oidcIssuer) claims(aud any) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss":    iss.url,
		"sub":    "alice",
		"aud":    aud,
		"exp":    now.Add(5 * time.Minute).Unix(),
		"iat":    now.Unix(),
		"nbf":    now.Unix(),
		"jti":    "jti-" + strconv.FormatInt(oidcJTI.Add(1), 10),
		"groups": []string{"dev", "ops"},
	}
}

// oidcKey is a signing key with its kid.
type oidcKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// Keys are generated once per test binary (RSA generation is slow under
// -race) and reused by name.
var oidcKeys = struct {
	sync.Mutex
	m map[string]crypto.Signer
}{m: map[string]crypto.Signer{}}

// oidcKeyFor is the key named kid for alg: RS256 (RSA 2048), ES256 (P-256)
// or ES384 (P-384).
func oidcKeyFor(t testing.TB, kid string, alg jose.SignatureAlgorithm) oidcKey {
	t.Helper()
	oidcKeys.Lock()
	defer oidcKeys.Unlock()
	name := string(alg) + "/" + kid
	priv, ok := oidcKeys.m[name]
	if !ok {
		var err error
		switch alg {
		case jose.RS256:
			priv, err = rsa.GenerateKey(rand.Reader, 2048)
		case jose.ES256:
			priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		case jose.ES384:
			priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		default:
			t.Fatalf("no key for %s", alg)
		}
		if err != nil {
			t.Fatal(err)
		}
		oidcKeys.m[name] = priv
	}
	return oidcKey{kid: kid, alg: alg, priv: priv}
}

// sign makes a compact JWS of the claims with kid in its header.
func (k oidcKey) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return oidcSignJWT(t, signer, claims)
}

// oidcSignHMAC makes an HS256 JWS of the claims with secret, naming kid.
func oidcSignHMAC(t testing.TB, secret []byte, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: secret, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return oidcSignJWT(t, signer, claims)
}

func oidcSignJWT(t testing.TB, signer jose.Signer, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// oidcCompactJWT builds header.payload.signature by hand from JSON values.
func oidcCompactJWT(t testing.TB, header, payload any, signature string) string {
	t.Helper()
	return oidcB64JSON(t, header) + "." + oidcB64JSON(t, payload) + "." + signature
}

func oidcB64JSON(t testing.TB, v any) string {
	t.Helper()
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// oidcRig is an authorizer configured for an oidcIssuer, its middleware in
// front of a mux like routes.go's: the Protected Resource Metadata routes
// and, for every other path, a handler that records the caller.
type oidcRig struct {
	iss *oidcIssuer
	a   *authorizer
	h   http.Handler
}

// newOIDCRig starts a provider publishing keys and configures an
// authorizer (cache TTL one minute) for it; edit may change the options
// before configure.
func newOIDCRig(t *testing.T, edit func(*Options), keys ...oidcKey) *oidcRig {
	t.Helper()
	iss := newOIDCIssuer(t, keys...)
	opts := Options{Auth: AuthOIDC, PublicURL: oidcPublicURL, OIDC: &OIDCOptions{
		IssuerURL: iss.url, HTTPClient: iss.srv.Client(), GroupsClaim: "groups", GroupsPrefix: "oidc:",
	}}
	if edit != nil {
		edit(&opts)
	}
	a := newAuthorizer(opts.Auth, nil, time.Minute, 100)
	if err := a.configure(opts); err != nil {
		t.Fatalf("configure: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+metadataPrefix, a.resources.serveMetadata)
	mux.HandleFunc("GET "+metadataPrefix+"/", a.resources.serveMetadata)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if slot, ok := r.Context().Value(oidcSlotKey{}).(*oidcSlot); ok {
			slot.reached, slot.who = true, callerFrom(r.Context())
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("reached"))
	})
	return &oidcRig{iss: iss, a: a, h: a.middleware(mux)}
}

// expireThrottle makes the JWKS throttle's last fetch look older than
// jwksMinRefresh, as if the window had passed: the next unknown kid
// fetches the keys again. (jwksMinRefresh is a const; this stands in for
// a 10s sleep.)
func (rig *oidcRig) expireThrottle(t *testing.T) {
	t.Helper()
	th, ok := rig.a.oidc.client.Transport.(*jwksThrottle)
	if !ok {
		t.Fatalf("the validator's transport is %T, not the JWKS throttle", rig.a.oidc.client.Transport)
	}
	th.mu.Lock()
	th.fetched = th.fetched.Add(-jwksMinRefresh - time.Second)
	th.mu.Unlock()
}

// refetching presents fresh tokens from mint on path until one makes the
// validator fetch the JWKS, and returns that token and its answer; it
// fails unless that took exactly one fetch.
//
// The first token usually does. But go-oidc's RemoteKeySet releases the
// requests waiting on a fetch before it forgets that fetch (on the
// fetching goroutine, under its lock), so a refetch asked for within
// moments of the last fetch can be answered with that fetch's keys, and
// nothing is fetched. In production that moment is always within
// jwksMinRefresh, where the throttle would have replayed the same keys;
// only expireThrottle makes it visible. A token answered that way is
// refused without a fetch, and the next fresh one is tried.
func (rig *oidcRig) refetching(t *testing.T, path string, mint func() string) (string, oidcAnswer) {
	t.Helper()
	for attempt := 1; attempt <= 200; attempt++ {
		_, before := rig.iss.fetches()
		token := mint()
		ans := rig.get(path, token)
		_, after := rig.iss.fetches()
		switch {
		case after == before+1:
			if attempt > 1 {
				t.Logf("go-oidc answered %d token(s) from the fetch before", attempt-1)
			}
			return token, ans
		case after != before:
			t.Fatalf("one token made %d JWKS fetches", after-before)
		case ans.code == http.StatusOK:
			t.Fatalf("a token passed without the JWKS fetch it needs")
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no token made the validator fetch the JWKS")
	return "", oidcAnswer{}
}

type oidcSlotKey struct{}

// oidcSlot is where the inner handler says it was reached, and by whom.
type oidcSlot struct {
	reached bool
	who     *caller
}

// oidcAnswer is what the middleware (and the handler behind it) answered.
type oidcAnswer struct {
	code    int
	header  http.Header
	body    string
	reached bool
	who     *caller
}

// request sends GET path with the Authorization header (none when empty).
func (rig *oidcRig) request(path, authorization string) oidcAnswer {
	slot := &oidcSlot{}
	req := httptest.NewRequest(http.MethodGet, oidcPublicURL+path, nil)
	req = req.WithContext(context.WithValue(req.Context(), oidcSlotKey{}, slot))
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	rig.h.ServeHTTP(rec, req)
	return oidcAnswer{code: rec.Code, header: rec.Header(), body: rec.Body.String(), reached: slot.reached, who: slot.who}
}

// get sends GET path with the bearer token.
func (rig *oidcRig) get(path, token string) oidcAnswer {
	return rig.request(path, "Bearer "+token)
}

// pass asserts the request reached the handler with a caller.
func (ans oidcAnswer) pass(t testing.TB) *caller {
	t.Helper()
	if ans.code != http.StatusOK || !ans.reached || ans.who == nil {
		t.Fatalf("want 200 with a caller, got %d (reached %v, caller %v): %s; WWW-Authenticate: %s",
			ans.code, ans.reached, ans.who, ans.body, ans.header.Get("WWW-Authenticate"))
	}
	return ans.who
}

// invalid asserts a 401 with error="invalid_token", whose description (in
// the challenge and the body) contains desc, the challenge pointing at the
// metadata of path's resource; and that the token is nowhere in the answer.
func (ans oidcAnswer) invalid(t testing.TB, path, desc, token string) {
	t.Helper()
	ans.refusedWith(t, http.StatusUnauthorized, desc, token)
	www := ans.header.Get("WWW-Authenticate")
	if want := `Bearer resource_metadata="` + oidcMetadataURL(path) + `"`; !strings.HasPrefix(www, want) {
		t.Errorf("WWW-Authenticate = %q, want it to start with %q", www, want)
	}
	if !strings.Contains(www, `error="invalid_token"`) {
		t.Errorf(`WWW-Authenticate = %q, want error="invalid_token"`, www)
	}
	if !strings.Contains(www, `error_description="`) || !strings.Contains(www, desc) {
		t.Errorf("WWW-Authenticate = %q, want an error_description saying %q", www, desc)
	}
}

// unavailable asserts a 503 without a challenge.
func (ans oidcAnswer) unavailable(t testing.TB, token string) {
	t.Helper()
	ans.refusedWith(t, http.StatusServiceUnavailable, "could not be reached", token)
	if www := ans.header.Get("WWW-Authenticate"); www != "" {
		t.Errorf("a 503 carries WWW-Authenticate %q", www)
	}
}

// challenged asserts a 401 for a missing token: a challenge naming the
// metadata URL, without error=.
func (ans oidcAnswer) challenged(t testing.TB, metadata string) {
	t.Helper()
	ans.refusedWith(t, http.StatusUnauthorized, "a bearer token is required", "")
	www := ans.header.Get("WWW-Authenticate")
	if want := `Bearer resource_metadata="` + metadata + `"`; www != want {
		t.Errorf("WWW-Authenticate = %q, want %q", www, want)
	}
}

func (ans oidcAnswer) refusedWith(t testing.TB, code int, desc, token string) {
	t.Helper()
	if ans.code != code {
		t.Fatalf("want %d, got %d: %s; WWW-Authenticate: %s", code, ans.code, ans.body, ans.header.Get("WWW-Authenticate"))
	}
	if ans.reached {
		t.Errorf("a refused request reached the handler")
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(ans.body), &body); err != nil {
		t.Errorf("the body is not a JSON error: %q", ans.body)
	}
	if !strings.Contains(body.Error, desc) {
		t.Errorf("error %q does not say %q", body.Error, desc)
	}
	ans.noLeak(t, token)
}

// noLeak asserts that neither the token nor any long part of it is in the
// answer's headers or body.
func (ans oidcAnswer) noLeak(t testing.TB, token string) {
	t.Helper()
	if token == "" {
		return
	}
	needles := []string{token}
	for _, part := range strings.Split(token, ".") {
		if len(part) >= 16 {
			needles = append(needles, part)
		}
	}
	for _, needle := range needles {
		if strings.Contains(ans.body, needle) {
			t.Errorf("the answer's body quotes the token")
		}
		for name, values := range ans.header {
			for _, v := range values {
				if strings.Contains(v, needle) {
					t.Errorf("header %s quotes the token", name)
				}
			}
		}
	}
}

// oidcMetadataURL is where the metadata of the resource at path is.
func oidcMetadataURL(path string) string {
	if isMCPEndpoint(path) {
		return oidcPublicURL + metadataPrefix + path
	}
	return oidcPublicURL + metadataPrefix
}

// oidcEventually polls cond every interval until it holds, failing after
// timeout.
func oidcEventually(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, timeout)
		}
		time.Sleep(interval)
	}
}
