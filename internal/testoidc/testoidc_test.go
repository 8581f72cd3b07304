package testoidc

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/onsi/ginkgo/v2"
)

// StartT takes *testing.T and Ginkgo's GinkgoT() alike.
var (
	_ TB = testing.TB(nil)
	_ TB = ginkgo.GinkgoTInterface(nil)
)

const (
	tokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
	accessTokenType    = "urn:ietf:params:oauth:token-type:access_token"
)

func testClients() []Client {
	return []Client{
		{ID: "alice-app", Secret: "alice-secret", Subject: "alice", Audience: []string{"mcp-gateway"}, Scopes: []string{"tools.read", "tools.call"}},
		{ID: "gateway", Secret: "gw-secret", ExchangeAudiences: []string{"upstream-a", "https://upstream-b.example/mcp"}},
		{ID: "plain", Secret: "plain-secret"},
	}
}

func start(t *testing.T, opts Options) *Provider {
	t.Helper()
	if opts.Clients == nil {
		opts.Clients = testClients()
	}
	return StartT(t, opts)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// verifier builds a go-oidc verifier from the provider's discovery document.
func verifier(t *testing.T, p *Provider) (context.Context, *oidc.IDTokenVerifier) {
	t.Helper()
	ctx := oidc.ClientContext(ctxT(t), p.HTTPClient())
	prov, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatalf("oidc.NewProvider: %v", err)
	}
	return ctx, prov.VerifierContext(ctx, &oidc.Config{SkipClientIDCheck: true})
}

// decode returns the kid and the claims of a JWT without verifying it.
func decode(t *testing.T, token string) (string, map[string]any) {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("parse JWT: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	return jws.Signatures[0].Header.KeyID, claims
}

func mustToken(t *testing.T, p *Provider, id, secret string, scopes ...string) string {
	t.Helper()
	tok, err := p.ClientCredentialsToken(ctxT(t), id, secret, scopes...)
	if err != nil {
		t.Fatalf("client credentials for %s: %v", id, err)
	}
	return tok
}

func wantTokenError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var te *TokenError
	if !errors.As(err, &te) {
		t.Fatalf("want token error %d %s, got %v", status, code, err)
	}
	if te.StatusCode != status || te.Code != code {
		t.Fatalf("want %d %s, got %v", status, code, te)
	}
}

func TestDiscoveryOverTLS(t *testing.T) {
	p := start(t, Options{})
	if !strings.HasPrefix(p.Issuer, "https://127.0.0.1:") || strings.HasSuffix(p.Issuer, "/") {
		t.Fatalf("issuer %q", p.Issuer)
	}
	resp, err := p.HTTPClient().Get(p.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("status %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
	var doc struct {
		Issuer        string   `json:"issuer"`
		TokenEndpoint string   `json:"token_endpoint"`
		JWKSURI       string   `json:"jwks_uri"`
		GrantTypes    []string `json:"grant_types_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != p.Issuer || doc.TokenEndpoint != p.TokenURL || doc.JWKSURI != p.JWKSURL {
		t.Fatalf("discovery %+v, provider %s %s %s", doc, p.Issuer, p.TokenURL, p.JWKSURL)
	}
	for _, g := range []string{"client_credentials", tokenExchangeGrant} {
		if !slices.Contains(doc.GrantTypes, g) {
			t.Errorf("grant_types_supported %v lacks %s", doc.GrantTypes, g)
		}
	}

	// The serving certificate chains to CAPEM for both SANs, and only to it.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CAPEM) {
		t.Fatal("CAPEM holds no certificate")
	}
	leaf := resp.TLS.PeerCertificates[0]
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	var unknownCA x509.UnknownAuthorityError
	if _, err := (&http.Client{}).Get(p.Issuer + "/keys"); !errors.As(err, &unknownCA) {
		t.Errorf("a client without the CA: want unknown authority, got %v", err)
	}
}

func TestClientCredentialsTokenVerifiesWithGoOIDC(t *testing.T) {
	p := start(t, Options{})
	ctx, v := verifier(t, p)

	tok := mustToken(t, p, "alice-app", "alice-secret", "tools.read")
	idt, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatalf("go-oidc verify: %v", err)
	}
	if idt.Subject != "alice" || !slices.Equal(idt.Audience, []string{"mcp-gateway"}) || idt.Issuer != p.Issuer {
		t.Fatalf("sub %q aud %v iss %q", idt.Subject, idt.Audience, idt.Issuer)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if claims["client_id"] != "alice-app" || claims["scope"] != "tools.read" || claims["iat"] == nil || claims["jti"] == nil {
		t.Fatalf("claims %v", claims)
	}
	if exp := time.Until(idt.Expiry); exp < 4*time.Minute || exp > 5*time.Minute+time.Second {
		t.Fatalf("token lives %v, want about the default 5m", exp)
	}

	// Defaults: sub and aud are the client ID.
	idt, err = v.Verify(ctx, mustToken(t, p, "plain", "plain-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if idt.Subject != "plain" || !slices.Equal(idt.Audience, []string{"plain"}) {
		t.Fatalf("defaults: sub %q aud %v", idt.Subject, idt.Audience)
	}
}

func TestClientCredentialsRefusalsAndResource(t *testing.T) {
	p := start(t, Options{})
	ctx := ctxT(t)

	_, err := p.ClientCredentialsToken(ctx, "alice-app", "wrong")
	wantTokenError(t, err, http.StatusUnauthorized, "invalid_client")
	_, err = p.ClientCredentialsToken(ctx, "nobody", "x")
	wantTokenError(t, err, http.StatusUnauthorized, "invalid_client")
	_, err = p.ClientCredentialsToken(ctx, "alice-app", "alice-secret", "admin")
	wantTokenError(t, err, http.StatusBadRequest, "invalid_scope")

	cc := func(resource string) url.Values {
		return url.Values{"grant_type": {"client_credentials"}, "resource": {resource}}
	}
	tok, err := p.RequestToken(ctx, "alice-app", "alice-secret", cc("mcp-gateway"))
	if err != nil {
		t.Fatal(err)
	}
	if _, c := decode(t, tok); !slices.Equal(toStrings(c["aud"]), []string{"mcp-gateway"}) {
		t.Fatalf("aud %v", c["aud"])
	}
	_, err = p.RequestToken(ctx, "alice-app", "alice-secret", cc("elsewhere"))
	wantTokenError(t, err, http.StatusBadRequest, "invalid_target")
}

func TestTokenExchange(t *testing.T) {
	p := start(t, Options{})
	ctx, v := verifier(t, p)
	subject := mustToken(t, p, "alice-app", "alice-secret", "tools.call")

	tok, err := p.Exchange(ctx, "gateway", "gw-secret", subject, "upstream-a")
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	idt, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatalf("go-oidc verify exchanged token: %v", err)
	}
	if idt.Subject != "alice" || !slices.Equal(idt.Audience, []string{"upstream-a"}) {
		t.Fatalf("sub %q aud %v", idt.Subject, idt.Audience)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	act, _ := claims["act"].(map[string]any)
	if claims["client_id"] != "gateway" || act["sub"] != "gateway" {
		t.Fatalf("claims %v", claims)
	}

	// resource (RFC 8707) becomes aud as well; scope is carried.
	tok, err = p.RequestToken(ctx, "gateway", "gw-secret", url.Values{
		"grant_type":         {tokenExchangeGrant},
		"subject_token":      {subject},
		"subject_token_type": {accessTokenType},
		"resource":           {"https://upstream-b.example/mcp"},
		"scope":              {"mcp"},
	})
	if err != nil {
		t.Fatalf("exchange with resource: %v", err)
	}
	_, c := decode(t, tok)
	if c["sub"] != "alice" || !slices.Equal(toStrings(c["aud"]), []string{"https://upstream-b.example/mcp"}) || c["scope"] != "mcp" {
		t.Fatalf("claims %v", c)
	}

	// A chained exchange nests the earlier actor.
	tok2, err := p.Exchange(ctx, "gateway", "gw-secret", tok, "upstream-a")
	if err != nil {
		t.Fatal(err)
	}
	_, c = decode(t, tok2)
	act, _ = c["act"].(map[string]any)
	inner, _ := act["act"].(map[string]any)
	if c["sub"] != "alice" || act["sub"] != "gateway" || inner["sub"] != "gateway" {
		t.Fatalf("chained claims %v", c)
	}
}

func TestTokenExchangeRefusals(t *testing.T) {
	p := start(t, Options{})
	other := start(t, Options{})
	ctx := ctxT(t)
	subject := mustToken(t, p, "alice-app", "alice-secret")
	foreign := mustToken(t, other, "alice-app", "alice-secret")
	p.SetAccessTokenLifetime(-1)
	expired := mustToken(t, p, "alice-app", "alice-secret")
	p.SetAccessTokenLifetime(0)

	for _, tc := range []struct {
		name, client, secret, subject, audience string
		status                                  int
		code                                    string
	}{
		{"garbage subject token", "gateway", "gw-secret", "not-a-token", "upstream-a", 400, "invalid_request"},
		{"expired subject token", "gateway", "gw-secret", expired, "upstream-a", 400, "invalid_request"},
		{"subject token of another issuer", "gateway", "gw-secret", foreign, "upstream-a", 400, "invalid_request"},
		{"audience not allowed", "gateway", "gw-secret", subject, "upstream-z", 400, "invalid_target"},
		{"client without exchange audiences", "plain", "plain-secret", subject, "upstream-a", 400, "unauthorized_client"},
		{"no audience", "gateway", "gw-secret", subject, "", 400, "invalid_request"},
		{"wrong secret", "gateway", "nope", subject, "upstream-a", 401, "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{
				"grant_type":         {tokenExchangeGrant},
				"subject_token":      {tc.subject},
				"subject_token_type": {accessTokenType},
			}
			if tc.audience != "" {
				form.Set("audience", tc.audience)
			}
			_, err := p.RequestToken(ctx, tc.client, tc.secret, form)
			wantTokenError(t, err, tc.status, tc.code)
		})
	}
}

func TestRotateKeys(t *testing.T) {
	p := start(t, Options{})
	ctx, v := verifier(t, p)
	old := mustToken(t, p, "plain", "plain-secret")
	oldKid, _ := decode(t, old)
	if oldKid != p.KeyID() {
		t.Fatalf("kid %q, provider key %q", oldKid, p.KeyID())
	}
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatal(err)
	}

	newKid := p.RotateKeys()
	tok := mustToken(t, p, "plain", "plain-secret")
	if kid, _ := decode(t, tok); kid != newKid || kid == oldKid {
		t.Fatalf("after rotation kid %q, want new %q (old %q)", kid, newKid, oldKid)
	}
	if _, err := v.Verify(ctx, tok); err != nil { // same verifier: go-oidc refetches the JWKS
		t.Fatalf("verify after rotation: %v", err)
	}
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatalf("old token after rotation (old keys kept): %v", err)
	}
	if n := len(jwks(t, p).Keys); n != 2 {
		t.Fatalf("JWKS has %d keys, want 2", n)
	}
}

func TestRotateKeysDropOld(t *testing.T) {
	p := start(t, Options{DropOldKeysOnRotate: true})
	old := mustToken(t, p, "alice-app", "alice-secret")
	newKid := p.RotateKeys()
	set := jwks(t, p)
	if len(set.Keys) != 1 || set.Keys[0].KeyID != newKid {
		t.Fatalf("JWKS %v, want only %s", set.Keys, newKid)
	}
	_, err := p.Exchange(ctxT(t), "gateway", "gw-secret", old, "upstream-a")
	wantTokenError(t, err, http.StatusBadRequest, "invalid_request")
}

func TestSetDownDelayAndCounter(t *testing.T) {
	p := start(t, Options{})
	ctx := ctxT(t)
	mustToken(t, p, "plain", "plain-secret")
	if n := p.TokenRequests(); n != 1 {
		t.Fatalf("TokenRequests %d, want 1", n)
	}

	p.SetDown(true)
	_, err := p.ClientCredentialsToken(ctx, "plain", "plain-secret")
	wantTokenError(t, err, http.StatusServiceUnavailable, "temporarily_unavailable")
	resp, err := p.HTTPClient().Get(p.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("discovery while down: %d", resp.StatusCode)
	}
	p.SetDown(false)
	mustToken(t, p, "plain", "plain-secret")
	if n := p.TokenRequests(); n != 3 {
		t.Fatalf("TokenRequests %d, want 3", n)
	}

	// A delay longer than the caller's patience: the caller gives up.
	p.SetDelay(time.Hour)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := p.ClientCredentialsToken(short, "plain", "plain-secret"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delayed request: want deadline exceeded, got %v", err)
	}
	p.SetDelay(0)
	mustToken(t, p, "plain", "plain-secret")
}

func TestStopEndsHeldRequests(t *testing.T) {
	p, err := Start(Options{Clients: testClients()})
	if err != nil {
		t.Fatal(err)
	}
	p.SetDelay(time.Hour)
	done := make(chan error, 1)
	go func() {
		_, err := p.ClientCredentialsToken(context.Background(), "plain", "plain-secret")
		done <- err
	}()
	// Stop must not wait for the request it holds: wait until it holds it.
	deadline := time.Now().Add(20 * time.Second)
	for p.TokenRequests() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the token endpoint")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Stop()
	p.Stop()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("request succeeded after Stop")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("request still held after Stop")
	}
	if _, err := p.ClientCredentialsToken(context.Background(), "plain", "plain-secret"); err == nil {
		t.Fatal("provider still answers after Stop")
	}
}

func jwks(t *testing.T, p *Provider) jose.JSONWebKeySet {
	t.Helper()
	resp, err := p.HTTPClient().Get(p.JWKSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	return set
}

func toStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}
