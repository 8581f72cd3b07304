package toolcatalog

// Plain-testing tests of the catalog as an OAuth 2.1 resource server that
// checks the JWTs of one OpenID provider itself (auth_oidc.go), of its
// challenges and Protected Resource Metadata (auth_resource.go) and of the
// token cache in front of both (auth.go). The provider is a fake on an
// httptest TLS server (auth_oidc_helpers_test.go); tokens are signed
// directly with go-jose. No control plane: run with
//
//	go test -race -run 'TestOIDC|TestProtected|TestChallenge' ./internal/toolcatalog/

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Endpoints of the catalog the tests knock at: the global MCP endpoint, a
// collection's, and the REST API.
const (
	oidcMCP        = "/mcp"
	oidcCollection = "/v1/namespaces/a/toolcollections/b/mcp"
	oidcREST       = "/v1/tools"
)

func TestOIDCValidToken(t *testing.T) {
	t.Parallel()
	rsaKey, ecKey := oidcKeyFor(t, "rsa-a", jose.RS256), oidcKeyFor(t, "ec-a", jose.ES256)
	rig := newOIDCRig(t, nil, rsaKey, ecKey)
	for _, key := range []oidcKey{rsaKey, ecKey} {
		t.Run(string(key.alg), func(t *testing.T) {
			token := key.sign(t, rig.iss.claims(oidcPublicURL+oidcMCP))
			who := rig.get(oidcMCP, token).pass(t)
			if want := rig.iss.url + "#alice"; who.username != want {
				t.Errorf("username = %q, want %q (the issuer and # before sub)", who.username, want)
			}
			if want := []string{"oidc:dev", "oidc:ops"}; !slices.Equal(who.groups, want) {
				t.Errorf("groups = %q, want %q", who.groups, want)
			}
			if who.issuer != rig.iss.url {
				t.Errorf("issuer = %q, want %q", who.issuer, rig.iss.url)
			}
			if who.token != token {
				t.Errorf("the caller does not carry its validated token")
			}
			if who.uid != "" || len(who.extra) != 0 {
				t.Errorf("uid %q, extra %v: want none", who.uid, who.extra)
			}
		})
	}
	if d, j := rig.iss.fetches(); d != 1 || j != 1 {
		t.Errorf("discovery fetched %d times and the JWKS %d: want once each", d, j)
	}
}

func TestOIDCClaimMapping(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	cases := []struct {
		name       string
		edit       func(*OIDCOptions)
		claims     func(map[string]any)
		user       func(issuer string) string
		wantGroups []string
	}{
		{name: "no username prefix with -", edit: func(o *OIDCOptions) { o.UsernamePrefix = "-" },
			user: func(string) string { return "alice" }, wantGroups: []string{"oidc:dev", "oidc:ops"}},
		{name: "a username prefix of its own", edit: func(o *OIDCOptions) { o.UsernamePrefix = "corp:" },
			user: func(string) string { return "corp:alice" }, wantGroups: []string{"oidc:dev", "oidc:ops"}},
		{name: "another username claim keeps the issuer prefix",
			edit:   func(o *OIDCOptions) { o.UsernameClaim = "preferred_username" },
			claims: func(c map[string]any) { c["preferred_username"] = "al" },
			user:   func(iss string) string { return iss + "#al" }, wantGroups: []string{"oidc:dev", "oidc:ops"}},
		{name: "no groups prefix", edit: func(o *OIDCOptions) { o.GroupsPrefix = "" },
			user: func(iss string) string { return iss + "#alice" }, wantGroups: []string{"dev", "ops"}},
		{name: "a group as a string", claims: func(c map[string]any) { c["groups"] = "dev" },
			user: func(iss string) string { return iss + "#alice" }, wantGroups: []string{"oidc:dev"}},
		{name: "no groups claim configured", edit: func(o *OIDCOptions) { o.GroupsClaim = "" },
			user: func(iss string) string { return iss + "#alice" }},
		{name: "no groups in the token", claims: func(c map[string]any) { delete(c, "groups") },
			user: func(iss string) string { return iss + "#alice" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := newOIDCRig(t, func(o *Options) {
				if tc.edit != nil {
					tc.edit(o.OIDC)
				}
			}, key)
			claims := rig.iss.claims(oidcPublicURL)
			if tc.claims != nil {
				tc.claims(claims)
			}
			who := rig.get(oidcMCP, key.sign(t, claims)).pass(t)
			if want := tc.user(rig.iss.url); who.username != want {
				t.Errorf("username = %q, want %q", who.username, want)
			}
			if !slices.Equal(who.groups, tc.wantGroups) {
				t.Errorf("groups = %q, want %q", who.groups, tc.wantGroups)
			}
		})
	}
}

func TestOIDCEmailClaim(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	rig := newOIDCRig(t, func(o *Options) { o.OIDC.UsernameClaim = "email" }, key)
	withEmail := func(verified any) map[string]any {
		c := rig.iss.claims(oidcPublicURL)
		c["email"] = "alice@example.com"
		if verified != nil {
			c["email_verified"] = verified
		}
		return c
	}
	for name, verified := range map[string]any{"verified": true, "without email_verified": nil} {
		t.Run(name, func(t *testing.T) {
			who := rig.get(oidcMCP, key.sign(t, withEmail(verified))).pass(t)
			if who.username != "alice@example.com" {
				t.Errorf("username = %q, want the email without a prefix", who.username)
			}
		})
	}
	t.Run("not verified", func(t *testing.T) {
		token := key.sign(t, withEmail(false))
		rig.get(oidcMCP, token).invalid(t, oidcMCP, "the token's email is not verified", token)
	})
	t.Run("no email", func(t *testing.T) {
		c := rig.iss.claims(oidcPublicURL)
		token := key.sign(t, c)
		rig.get(oidcMCP, token).invalid(t, oidcMCP, "the token has no email claim", token)
	})
}

func TestChallengeWithoutToken(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, nil)
	paths := map[string]string{
		oidcMCP:        oidcPublicURL + "/.well-known/oauth-protected-resource/mcp",
		oidcCollection: oidcPublicURL + "/.well-known/oauth-protected-resource/v1/namespaces/a/toolcollections/b/mcp",
		oidcREST:       oidcPublicURL + "/.well-known/oauth-protected-resource",
		"/v1/namespaces/a/toolcollections/b/tools": oidcPublicURL + "/.well-known/oauth-protected-resource",
		"/v1/execute": oidcPublicURL + "/.well-known/oauth-protected-resource",
	}
	for path, metadata := range paths {
		for _, authorization := range []string{"", "Bearer ", "Bearer    ", "Bearer", "Basic YWxpY2U6c2VjcmV0", "Token abc"} {
			t.Run(path+" "+authorization, func(t *testing.T) {
				rig.request(path, authorization).challenged(t, metadata)
			})
		}
		t.Run(path+" names metadata that describes it", func(t *testing.T) {
			ans := rig.request(strings.TrimPrefix(metadata, oidcPublicURL), "")
			if ans.code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", metadata, ans.code, ans.body)
			}
			var doc protectedResourceMetadata
			if err := json.Unmarshal([]byte(ans.body), &doc); err != nil {
				t.Fatal(err)
			}
			want := oidcPublicURL
			if isMCPEndpoint(path) {
				want += path
			}
			if doc.Resource != want {
				t.Errorf("the metadata a 401 on %s names is of %q, want %q", path, doc.Resource, want)
			}
		})
	}
	if d, j := rig.iss.fetches(); d != 0 || j != 0 {
		t.Errorf("requests without a token fetched discovery %d times and the JWKS %d: want never", d, j)
	}
}

func TestChallengeNamesScopes(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	rig := newOIDCRig(t, func(o *Options) { o.Scopes = []string{"tools.read", "tools.call"} }, key)
	rig.request(oidcMCP, "").challenged(t, oidcPublicURL+metadataPrefix+oidcMCP+`", scope="tools.read tools.call`)

	token := key.sign(t, rig.iss.claims("https://other.example"))
	ans := rig.get(oidcCollection, token)
	ans.invalid(t, oidcCollection, "not meant for this resource", token)
	www := ans.header.Get("WWW-Authenticate")
	if want := `Bearer resource_metadata="` + oidcPublicURL + metadataPrefix + oidcCollection + `", scope="tools.read tools.call", error="invalid_token", error_description="`; !strings.HasPrefix(www, want) {
		t.Errorf("WWW-Authenticate = %q, want it to start with %q", www, want)
	}
}

func TestOIDCRefusesTokens(t *testing.T) {
	t.Parallel()
	rsaKey, ecKey, ec384 := oidcKeyFor(t, "rsa-a", jose.RS256), oidcKeyFor(t, "ec-a", jose.ES256), oidcKeyFor(t, "ec384", jose.ES384)
	rig := newOIDCRig(t, nil, rsaKey, ecKey, ec384)
	other := newOIDCIssuer(t)
	otherKey := oidcKeyFor(t, "rsa-other", jose.RS256)
	other.publish(otherKey)

	claims := func(edit func(map[string]any)) map[string]any {
		c := rig.iss.claims(oidcPublicURL)
		if edit != nil {
			edit(c)
		}
		return c
	}
	now := time.Now()
	rsaPublic, err := x509.MarshalPKIXPublicKey(rsaKey.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	rsaPublicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPublic})

	cases := []struct {
		name  string
		path  string
		token func(t *testing.T) string
		desc  string
	}{
		{name: "expired", desc: "the token has expired", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) {
				c["exp"], c["iat"], c["nbf"] = now.Add(-time.Minute).Unix(), now.Add(-10*time.Minute).Unix(), now.Add(-10*time.Minute).Unix()
			}))
		}},
		{name: "no exp", desc: "the token has expired", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { delete(c, "exp") }))
		}},
		{name: "nbf 5 minutes ahead (go-oidc's own leeway)", desc: "the token is not valid yet", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() }))
		}},
		{name: "nbf 2 minutes ahead", desc: "the token is not valid yet", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { c["nbf"] = time.Now().Add(2 * time.Minute).Unix() }))
		}},
		{name: "nbf 10 minutes ahead", desc: "the token is not valid yet", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { c["nbf"] = time.Now().Add(10 * time.Minute).Unix() }))
		}},
		{name: "iat 5 minutes ahead", desc: "the token is not valid yet", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { c["iat"] = time.Now().Add(5 * time.Minute).Unix() }))
		}},
		{name: "another issuer's token", desc: "the token was not issued by " + rig.iss.url, token: func(t *testing.T) string {
			c := other.claims(oidcPublicURL)
			return otherKey.sign(t, c)
		}},
		{name: "our iss signed by another key under our kid", desc: "the token's signature does not verify with the issuer's keys",
			token: func(t *testing.T) string {
				return oidcKey{kid: rsaKey.kid, alg: jose.RS256, priv: otherKey.priv}.sign(t, claims(nil))
			}},
		{name: "our iss signed by another issuer's key", desc: "the token's signature does not verify with the issuer's keys",
			token: func(t *testing.T) string { return otherKey.sign(t, claims(nil)) }},
		{name: "wrong audience", desc: "the token is not meant for this resource", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { c["aud"] = "https://other.example" }))
		}},
		{name: "no audience", desc: "the token is not meant for this resource", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { delete(c, "aud") }))
		}},
		{name: "alg none", desc: "the token is not a JWT signed with an accepted algorithm", token: func(t *testing.T) string {
			return oidcCompactJWT(t, map[string]any{"alg": "none", "typ": "JWT"}, claims(nil), "")
		}},
		{name: "alg none with our kid", desc: "the token is not a JWT signed with an accepted algorithm", token: func(t *testing.T) string {
			return oidcCompactJWT(t, map[string]any{"alg": "none", "typ": "JWT", "kid": rsaKey.kid}, claims(nil), "")
		}},
		{name: "alg None", desc: "the token is not a JWT signed with an accepted algorithm", token: func(t *testing.T) string {
			return oidcCompactJWT(t, map[string]any{"alg": "None"}, claims(nil), "")
		}},
		{name: "HS256 with a secret", desc: "the token is not a JWT signed with an accepted algorithm", token: func(t *testing.T) string {
			return oidcSignHMAC(t, []byte("a shared secret of thirty-two by"), rsaKey.kid, claims(nil))
		}},
		{name: "HS256 keyed with the RSA public key", desc: "the token is not a JWT signed with an accepted algorithm", token: func(t *testing.T) string {
			return oidcSignHMAC(t, rsaPublicPEM, rsaKey.kid, claims(nil))
		}},
		{name: "ES384, not an accepted algorithm", desc: "the token is not a JWT signed with an accepted algorithm", token: func(t *testing.T) string {
			return ec384.sign(t, claims(nil))
		}},
		{name: "tampered payload", desc: "the token's signature does not verify with the issuer's keys", token: func(t *testing.T) string {
			parts := strings.Split(rsaKey.sign(t, claims(nil)), ".")
			return parts[0] + "." + oidcB64JSON(t, claims(func(c map[string]any) { c["sub"] = "admin" })) + "." + parts[2]
		}},
		{name: "tampered ECDSA payload", desc: "the token's signature does not verify with the issuer's keys", token: func(t *testing.T) string {
			parts := strings.Split(ecKey.sign(t, claims(nil)), ".")
			return parts[0] + "." + oidcB64JSON(t, claims(func(c map[string]any) { c["groups"] = []string{"system:masters"} })) + "." + parts[2]
		}},
		{name: "no signature", desc: "the token's signature does not verify with the issuer's keys", token: func(t *testing.T) string {
			parts := strings.Split(rsaKey.sign(t, claims(nil)), ".")
			return parts[0] + "." + parts[1] + "."
		}},
		{name: "header not JSON", desc: "the token is not a JWT signed with an accepted algorithm", token: func(t *testing.T) string {
			return oidcB64JSON(t, json.RawMessage("{nope")) + "." + oidcB64JSON(t, claims(nil)) + ".c2ln"
		}},
		{name: "no sub", desc: "the token has no sub claim naming its user", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { delete(c, "sub") }))
		}},
		{name: "groups not strings", desc: "the token's groups claim is neither a string nor a list of strings", token: func(t *testing.T) string {
			return rsaKey.sign(t, claims(func(c map[string]any) { c["groups"] = []int{1, 2} }))
		}},
		{name: "a refusal on a collection points at its metadata", path: oidcCollection, desc: "the token is not meant for this resource",
			token: func(t *testing.T) string {
				return rsaKey.sign(t, claims(func(c map[string]any) { c["aud"] = "https://other.example" }))
			}},
		{name: "a refusal on the REST API points at the catalog's metadata", path: oidcREST, desc: "the token has expired",
			token: func(t *testing.T) string {
				return ecKey.sign(t, claims(func(c map[string]any) { c["exp"] = now.Add(-time.Second).Unix() }))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = oidcMCP
			}
			token := tc.token(t)
			rig.get(path, token).invalid(t, path, tc.desc, token)
			// Asked again (from the cache of refusals or not), the same.
			rig.get(path, token).invalid(t, path, tc.desc, token)
		})
	}
	t.Run("a token within the nbf skew passes", func(t *testing.T) {
		rig.get(oidcMCP, rsaKey.sign(t, claims(func(c map[string]any) {
			c["nbf"], c["iat"] = time.Now().Add(30*time.Second).Unix(), time.Now().Add(30*time.Second).Unix()
		}))).pass(t)
	})
}

func TestOIDCRefusesWithoutAskingTheProvider(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	rig := newOIDCRig(t, nil, key)
	other := newOIDCIssuer(t)
	notOurs := "the token was not issued by " + rig.iss.url

	huge := rig.iss.claims(oidcPublicURL)
	huge["padding"] = strings.Repeat("p", 1<<20)
	cases := map[string]struct{ token, desc string }{
		"abc":                  {"abc", notOurs},
		"a.b.c":                {"a.b.c", notOurs},
		"three dots":           {"a.b.c.d", notOurs},
		"only dots":            {"...", notOurs},
		"base64 junk":          {"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOi.c2lnbmF0dXJl", notOurs},
		"payload not JSON":     {"eyJhbGciOiJSUzI1NiJ9." + oidcB64JSON(t, json.RawMessage("[1,2]")) + ".c2ln", notOurs},
		"another issuer":       {key.sign(t, other.claims(oidcPublicURL)), notOurs},
		"1 MiB of junk":        {strings.Repeat("a", 1<<20), "the token is longer than 16384 bytes"},
		"1 MiB JWT of our iss": {key.sign(t, huge), "the token is longer than 16384 bytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rig.get(oidcMCP, tc.token).invalid(t, oidcMCP, tc.desc, tc.token)
		})
	}
	if d, j := rig.iss.fetches(); d != 0 || j != 0 {
		t.Errorf("tokens that are not the issuer's fetched discovery %d times and the JWKS %d: want never", d, j)
	}
}

func TestOIDCAudienceBinding(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	rig := newOIDCRig(t, nil, key)
	otherCollection := "/v1/namespaces/a/toolcollections/c/mcp"
	cases := []struct {
		aud    any
		passes []string
		fails  []string
	}{
		{aud: oidcPublicURL + oidcMCP, passes: []string{oidcMCP}, fails: []string{oidcCollection, otherCollection, oidcREST}},
		{aud: oidcPublicURL + oidcCollection, passes: []string{oidcCollection}, fails: []string{oidcMCP, otherCollection, oidcREST}},
		{aud: oidcPublicURL, passes: []string{oidcMCP, oidcCollection, otherCollection, oidcREST, "/v1/namespaces/a/toolcollections/b/tools"}},
		{aud: []string{"https://other.example", oidcPublicURL + oidcMCP}, passes: []string{oidcMCP}, fails: []string{oidcCollection}},
		{aud: "http://catalog.example/mcp", fails: []string{oidcMCP}},
		{aud: oidcPublicURL + "/mcp/", fails: []string{oidcMCP}},
		{aud: "catalog.example", fails: []string{oidcMCP, oidcREST}},
	}
	for _, tc := range cases {
		name, _ := json.Marshal(tc.aud)
		t.Run(string(name), func(t *testing.T) {
			token := key.sign(t, rig.iss.claims(tc.aud))
			for _, path := range tc.passes {
				rig.get(path, token).pass(t)
			}
			for _, path := range tc.fails {
				rig.get(path, token).invalid(t, path, "the token is not meant for this resource", token)
			}
		})
	}

	t.Run("the Host header does not make another resource's token fit", func(t *testing.T) {
		token := key.sign(t, rig.iss.claims("https://evil.example/mcp"))
		req := httptest.NewRequest(http.MethodGet, "https://evil.example/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		rig.h.ServeHTTP(rec, req)
		ans := oidcAnswer{code: rec.Code, header: rec.Header(), body: rec.Body.String()}
		ans.invalid(t, oidcMCP, "the token is not meant for this resource", token)
	})

	t.Run("configured extra audiences", func(t *testing.T) {
		rig := newOIDCRig(t, func(o *Options) { o.OIDC.Audiences = []string{"client-123"} }, key)
		token := key.sign(t, rig.iss.claims("client-123"))
		for _, path := range []string{oidcMCP, oidcCollection, oidcREST} {
			rig.get(path, token).pass(t)
		}
		token = key.sign(t, rig.iss.claims("client-999"))
		rig.get(oidcMCP, token).invalid(t, oidcMCP, "the token is not meant for this resource", token)
	})
}

func TestOIDCUnknownKeyID(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	unknownX, unknownY := oidcKeyFor(t, "rsa-x", jose.RS256), oidcKeyFor(t, "rsa-y", jose.RS256)
	const refused = "the token's signature does not verify with the issuer's keys"

	t.Run("as the first token", func(t *testing.T) {
		t.Parallel()
		rig := newOIDCRig(t, nil, key)
		start := time.Now()
		tokenX := unknownX.sign(t, rig.iss.claims(oidcPublicURL))
		rig.get(oidcMCP, tokenX).invalid(t, oidcMCP, refused, tokenX)
		if d, j := rig.iss.fetches(); d != 1 || j != 1 {
			t.Fatalf("discovery fetched %d times and the JWKS %d: want once each", d, j)
		}
		tokenY := unknownY.sign(t, rig.iss.claims(oidcPublicURL))
		rig.get(oidcMCP, tokenY).invalid(t, oidcMCP, refused, tokenY)
		rig.get(oidcMCP, tokenX).invalid(t, oidcMCP, refused, tokenX)
		if _, j := rig.iss.fetches(); j != 1 {
			t.Errorf("another unknown kid within %v fetched the JWKS again (%d fetches)", jwksMinRefresh, j)
		}
		if time.Since(start) >= jwksMinRefresh {
			t.Fatalf("the test took longer than the throttle window; its premise does not hold")
		}
	})

	t.Run("after the throttle window", func(t *testing.T) {
		t.Parallel()
		rig := newOIDCRig(t, nil, key)
		rig.get(oidcMCP, key.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		rig.expireThrottle(t)
		start := time.Now()
		tokenX, ans := rig.refetching(t, oidcMCP, func() string { return unknownX.sign(t, rig.iss.claims(oidcPublicURL)) })
		ans.invalid(t, oidcMCP, refused, tokenX)
		if _, j := rig.iss.fetches(); j != 2 {
			t.Fatalf("an unknown kid made %d JWKS fetches in all: want exactly one more than the first", j)
		}
		for i := range 5 {
			tokenY := unknownY.sign(t, rig.iss.claims(oidcPublicURL))
			rig.get(oidcMCP, tokenY).invalid(t, oidcMCP, refused, tokenY)
			if _, j := rig.iss.fetches(); j != 2 {
				t.Fatalf("unknown kid #%d within %v fetched the JWKS again (%d fetches)", i+2, jwksMinRefresh, j)
			}
		}
		rig.get(oidcMCP, key.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		if d, j := rig.iss.fetches(); d != 1 || j != 2 {
			t.Errorf("discovery fetched %d times and the JWKS %d: want 1 and 2", d, j)
		}
		if time.Since(start) >= jwksMinRefresh {
			t.Fatalf("the test took longer than the throttle window; its premise does not hold")
		}
	})
}

func TestOIDCKeyRotation(t *testing.T) {
	t.Parallel()
	keyA, keyB := oidcKeyFor(t, "rsa-a", jose.RS256), oidcKeyFor(t, "rsa-b", jose.RS256)
	ecC := oidcKeyFor(t, "ec-c", jose.ES256)

	t.Run("a key published after the keys were read", func(t *testing.T) {
		t.Parallel()
		rig := newOIDCRig(t, nil, keyA)
		rig.get(oidcMCP, keyA.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		rig.iss.publish(keyB)
		rig.iss.publish(ecC)
		// jwksMinRefresh is a const: rather than sleep 10s, the throttle's
		// last fetch is made to look that old.
		rig.expireThrottle(t)
		_, ans := rig.refetching(t, oidcMCP, func() string { return keyB.sign(t, rig.iss.claims(oidcPublicURL)) })
		if who := ans.pass(t); who.username != rig.iss.url+"#alice" {
			t.Errorf("username = %q", who.username)
		}
		if _, j := rig.iss.fetches(); j != 2 {
			t.Fatalf("the first token of the new key made %d JWKS fetches in all: want exactly one more than the first", j)
		}
		// Every key of the new set is known now: old, new, and another new.
		rig.get(oidcMCP, keyA.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		rig.get(oidcMCP, keyB.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		rig.get(oidcMCP, ecC.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		if d, j := rig.iss.fetches(); d != 1 || j != 2 {
			t.Errorf("discovery fetched %d times and the JWKS %d: want 1 and 2", d, j)
		}
	})

	t.Run("a key published before its first token", func(t *testing.T) {
		t.Parallel()
		rig := newOIDCRig(t, nil, keyA)
		rig.iss.publish(keyB)
		rig.get(oidcMCP, keyB.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		rig.get(oidcMCP, keyA.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
		if d, j := rig.iss.fetches(); d != 1 || j != 1 {
			t.Errorf("discovery fetched %d times and the JWKS %d: want once each", d, j)
		}
	})
}

func TestOIDCProviderDown(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)

	// Each case takes the provider down its own way, checks a token (503),
	// brings the provider back and polls until the same token passes. The
	// cases wait out discoveryRetry side by side, not one after another.
	type downCase struct {
		name string
		// down breaks the provider; up mends it.
		down, up func(t *testing.T, rig *oidcRig)
		// retried: the answer may only change once discoveryRetry has
		// passed since the first 503.
		retried bool
		// discoveries and jwks the provider should have answered in all.
		discoveries, jwks int64

		rig    *oidcRig
		token  string
		start  time.Time
		passed time.Time
	}
	cases := []*downCase{
		{name: "discovery answers 500", retried: true, discoveries: 2, jwks: 1,
			down: func(_ *testing.T, rig *oidcRig) { rig.iss.discoveryMode.Store(oidcFail) },
			up:   func(_ *testing.T, rig *oidcRig) { rig.iss.discoveryMode.Store(oidcUp) }},
		{name: "discovery server closed", retried: true, discoveries: 1, jwks: 1,
			down: func(_ *testing.T, rig *oidcRig) { rig.iss.stop() },
			up:   func(t *testing.T, rig *oidcRig) { rig.iss.restart(t) }},
		{name: "JWKS answers 500", discoveries: 1,
			down: func(_ *testing.T, rig *oidcRig) { rig.iss.jwksMode.Store(oidcFail) },
			up:   func(_ *testing.T, rig *oidcRig) { rig.iss.jwksMode.Store(oidcUp) }},
	}
	for _, c := range cases {
		c.rig = newOIDCRig(t, nil, key)
		c.token = key.sign(t, c.rig.iss.claims(oidcPublicURL))
		c.down(t, c.rig)
		c.start = time.Now()
		c.rig.get(oidcMCP, c.token).unavailable(t, c.token)
		// Asked again, and with other tokens: still 503, and discovery is
		// not asked again within discoveryRetry.
		for range 5 {
			c.rig.get(oidcMCP, c.token).unavailable(t, c.token)
			other := key.sign(t, c.rig.iss.claims(oidcPublicURL))
			c.rig.get(oidcMCP, other).unavailable(t, other)
		}
		if d, _ := c.rig.iss.fetches(); c.retried && d > 1 && time.Since(c.start) < discoveryRetry {
			t.Errorf("%s: discovery was asked %d times within %v of failing: want at most once", c.name, d, discoveryRetry)
		}
		c.up(t, c.rig)
	}
	// The 503s were not cached: once the provider is back, the same token
	// passes; until then every answer is a 503.
	oidcEventually(t, 10*time.Second, 25*time.Millisecond, "every token passing once its provider is back", func() bool {
		waiting := false
		for _, c := range cases {
			if !c.passed.IsZero() {
				continue
			}
			ans := c.rig.get(oidcMCP, c.token)
			if ans.code != http.StatusOK {
				ans.unavailable(t, c.token)
				waiting = true
				continue
			}
			ans.pass(t)
			c.passed = time.Now()
		}
		return !waiting
	})
	for _, c := range cases {
		if after := c.passed.Sub(c.start); c.retried && after < discoveryRetry {
			t.Errorf("%s: the provider was asked again %v after failing: want no sooner than %v", c.name, after, discoveryRetry)
		}
		if d, j := c.rig.iss.fetches(); d != c.discoveries || (c.jwks != 0 && j != c.jwks) {
			t.Errorf("%s: discovery fetched %d times and the JWKS %d: want %d and %d", c.name, d, j, c.discoveries, c.jwks)
		}
	}
}

func TestOIDCCache(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	late := oidcKeyFor(t, "rsa-late", jose.RS256)
	rig := newOIDCRig(t, nil, key)

	token := key.sign(t, rig.iss.claims(oidcPublicURL))
	first := rig.get(oidcMCP, token).pass(t)
	second := rig.get(oidcMCP, token).pass(t)
	if first != second {
		t.Errorf("the second request did not get the cached caller")
	}
	if d, j := rig.iss.fetches(); d != 1 || j != 1 {
		t.Fatalf("discovery fetched %d times and the JWKS %d: want once each", d, j)
	}

	t.Run("a cached answer needs no provider", func(t *testing.T) {
		rig.iss.discoveryMode.Store(oidcFail)
		rig.iss.jwksMode.Store(oidcFail)
		defer rig.iss.discoveryMode.Store(oidcUp)
		defer rig.iss.jwksMode.Store(oidcUp)
		rig.get(oidcMCP, token).pass(t)
		if d, j := rig.iss.fetches(); d != 1 || j != 1 {
			t.Errorf("discovery fetched %d times and the JWKS %d: want once each", d, j)
		}
	})

	t.Run("a token is cached per endpoint", func(t *testing.T) {
		token := key.sign(t, rig.iss.claims(oidcPublicURL+oidcMCP))
		rig.get(oidcMCP, token).pass(t)
		rig.get(oidcCollection, token).invalid(t, oidcCollection, "the token is not meant for this resource", token)
		rig.get(oidcMCP, token).pass(t)
	})

	t.Run("a 401 is cached", func(t *testing.T) {
		// A token of a key the provider does not publish yet is refused...
		refused := late.sign(t, rig.iss.claims(oidcPublicURL))
		const desc = "the token's signature does not verify with the issuer's keys"
		rig.get(oidcMCP, refused).invalid(t, oidcMCP, desc, refused)
		// ... and stays refused once it does: the answer is the cached
		// one, with no fetch, although checking again would pass it.
		rig.iss.publish(late)
		rig.expireThrottle(t)
		_, before := rig.iss.fetches()
		rig.get(oidcMCP, refused).invalid(t, oidcMCP, desc, refused)
		if _, j := rig.iss.fetches(); j != before {
			t.Errorf("a refused token was checked again (%d JWKS fetches, want %d)", j, before)
		}
		_, ans := rig.refetching(t, oidcMCP, func() string { return late.sign(t, rig.iss.claims(oidcPublicURL)) })
		ans.pass(t)
	})

	t.Run("a 503 is not cached", func(t *testing.T) {
		fresh := newOIDCRig(t, nil, key)
		fresh.iss.jwksMode.Store(oidcFail)
		token := key.sign(t, fresh.iss.claims(oidcPublicURL))
		fresh.get(oidcMCP, token).unavailable(t, token)
		fresh.iss.jwksMode.Store(oidcUp)
		oidcEventually(t, 5*time.Second, 10*time.Millisecond, "the token passing", func() bool {
			ans := fresh.get(oidcMCP, token)
			if ans.code != http.StatusOK {
				ans.unavailable(t, token)
			}
			return ans.code == http.StatusOK
		})
	})
}

func TestOIDCCacheNeverOutlivesExp(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	rig := newOIDCRig(t, nil, key) // cache TTL one minute
	claims := rig.iss.claims(oidcPublicURL)
	// Whole seconds, so 5 to 6 seconds: room for a pass before exp on a
	// loaded machine.
	exp := time.Now().Add(6 * time.Second).Unix()
	claims["exp"] = exp
	expAt := time.Unix(exp, 0)
	token := key.sign(t, claims)
	rig.get(oidcMCP, token).pass(t)

	var refusedAt time.Time
	passes := 0
	oidcEventually(t, 30*time.Second, 20*time.Millisecond, "the token being refused", func() bool {
		start := time.Now()
		ans := rig.get(oidcMCP, token)
		end := time.Now()
		if ans.code == http.StatusOK {
			if start.After(expAt) {
				t.Fatalf("the token passed at %v, %v after its exp", start, start.Sub(expAt))
			}
			passes++
			return false
		}
		ans.invalid(t, oidcMCP, "the token has expired", token)
		if end.Before(expAt) {
			t.Fatalf("the token was refused %v before its exp", expAt.Sub(end))
		}
		refusedAt = end
		return true
	})
	if late := refusedAt.Sub(expAt); late > 5*time.Second {
		t.Errorf("the token was still served from the cache until %v after its exp", late)
	}
	if passes == 0 {
		t.Errorf("no request passed before exp")
	}
	if d, j := rig.iss.fetches(); d != 1 || j != 1 {
		t.Errorf("discovery fetched %d times and the JWKS %d: want once each", d, j)
	}
}

func TestOIDCConcurrentFirstRequests(t *testing.T) {
	t.Parallel()
	key := oidcKeyFor(t, "rsa-a", jose.RS256)
	const n = 50
	run := func(rig *oidcRig, tokens []string) []oidcAnswer {
		answers := make([]oidcAnswer, n)
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-gate
				answers[i] = rig.get(oidcMCP, tokens[i%len(tokens)])
			})
		}
		close(gate)
		wg.Wait()
		return answers
	}

	t.Run("one token", func(t *testing.T) {
		t.Parallel()
		rig := newOIDCRig(t, nil, key)
		token := key.sign(t, rig.iss.claims(oidcPublicURL))
		for _, ans := range run(rig, []string{token}) {
			if who := ans.pass(t); who.username != rig.iss.url+"#alice" || who.token != token {
				t.Errorf("caller %q", who.username)
			}
		}
		if d, j := rig.iss.fetches(); d != 1 || j != 1 {
			t.Errorf("%d concurrent first requests fetched discovery %d times and the JWKS %d: want once each", n, d, j)
		}
	})

	t.Run("different tokens", func(t *testing.T) {
		t.Parallel()
		rig := newOIDCRig(t, nil, key)
		tokens := make([]string, n)
		for i := range tokens {
			tokens[i] = key.sign(t, rig.iss.claims(oidcPublicURL))
		}
		for _, ans := range run(rig, tokens) {
			ans.pass(t)
		}
		if d, j := rig.iss.fetches(); d != 1 || j != 1 {
			t.Errorf("%d concurrent first tokens fetched discovery %d times and the JWKS %d: want once each", n, d, j)
		}
	})
}

func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, nil)
	docs := map[string]string{
		metadataPrefix:                  oidcPublicURL,
		metadataPrefix + oidcMCP:        oidcPublicURL + oidcMCP,
		metadataPrefix + oidcCollection: oidcPublicURL + oidcCollection,
	}
	for path, resource := range docs {
		// Through the middleware, with no token, or with junk for one.
		for _, authorization := range []string{"", "Bearer junk"} {
			t.Run(path+" "+authorization, func(t *testing.T) {
				ans := rig.request(path, authorization)
				if ans.code != http.StatusOK {
					t.Fatalf("GET %s: %d %s", path, ans.code, ans.body)
				}
				if ct := ans.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(ans.body), &doc); err != nil {
					t.Fatal(err)
				}
				if doc["resource"] != resource {
					t.Errorf("resource = %v, want %q", doc["resource"], resource)
				}
				if got, _ := json.Marshal(doc["authorization_servers"]); string(got) != `["`+rig.iss.url+`"]` {
					t.Errorf("authorization_servers = %s, want [%q]", got, rig.iss.url)
				}
				if got, _ := json.Marshal(doc["bearer_methods_supported"]); string(got) != `["header"]` {
					t.Errorf(`bearer_methods_supported = %s, want ["header"]`, got)
				}
				if _, ok := doc["scopes_supported"]; ok {
					t.Errorf("scopes_supported advertised without scopes: %v", doc["scopes_supported"])
				}
			})
		}
	}
	for _, path := range []string{
		metadataPrefix + "/",
		metadataPrefix + oidcREST,
		metadataPrefix + "/mcp/extra",
		metadataPrefix + "/v1/namespaces/a/toolcollections/b/tools",
		metadataPrefix + "/v1/namespaces/a/mcpservers/b/mcp",
	} {
		t.Run(path, func(t *testing.T) {
			if ans := rig.request(path, ""); ans.code != http.StatusNotFound {
				t.Errorf("GET %s: %d %s, want 404", path, ans.code, ans.body)
			}
		})
	}
	t.Run("advertises what is configured", func(t *testing.T) {
		rig := newOIDCRig(t, func(o *Options) {
			o.PublicURL = oidcPublicURL + "/"
			o.AuthorizationServers = []string{"https://login.example"}
			o.Scopes = []string{"tools.read"}
		})
		ans := rig.request(metadataPrefix+oidcMCP, "")
		var doc protectedResourceMetadata
		if err := json.Unmarshal([]byte(ans.body), &doc); err != nil || ans.code != http.StatusOK {
			t.Fatalf("%d %s", ans.code, ans.body)
		}
		if doc.Resource != oidcPublicURL+oidcMCP || !slices.Equal(doc.AuthorizationServers, []string{"https://login.example"}) ||
			!slices.Equal(doc.ScopesSupported, []string{"tools.read"}) {
			t.Errorf("metadata %+v", doc)
		}
	})
	if d, j := rig.iss.fetches(); d != 0 || j != 0 {
		t.Errorf("serving metadata fetched discovery %d times and the JWKS %d: want never", d, j)
	}
}

func TestOIDCConfigureRefusals(t *testing.T) {
	t.Parallel()
	const issuer = "https://issuer.example"
	oidc := func(edit func(*OIDCOptions)) *OIDCOptions {
		o := &OIDCOptions{IssuerURL: issuer}
		if edit != nil {
			edit(o)
		}
		return o
	}
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"OIDC without a public URL", Options{Auth: AuthOIDC, OIDC: oidc(nil)}, "needs the catalog's public URL"},
		{"kubernetes with OIDC without a public URL", Options{Auth: AuthKubernetes, OIDC: oidc(nil)}, "needs the catalog's public URL"},
		{"AuthOIDC without OIDC", Options{Auth: AuthOIDC, PublicURL: oidcPublicURL}, "AuthOIDC needs the OIDC issuer"},
		{"OIDC with auth off", Options{Auth: AuthNone, PublicURL: oidcPublicURL, OIDC: oidc(nil)}, "needs authentication on"},
		{"an unknown mode", Options{Auth: "basic", PublicURL: oidcPublicURL}, `unknown auth mode "basic"`},
		{"no issuer URL", Options{Auth: AuthOIDC, PublicURL: oidcPublicURL, OIDC: &OIDCOptions{}}, "the OIDC issuer URL is required"},
		{"HS256", Options{Auth: AuthOIDC, PublicURL: oidcPublicURL, OIDC: oidc(func(o *OIDCOptions) { o.SigningAlgorithms = []string{"RS256", "HS256"} })},
			`signing algorithm "HS256" is not accepted`},
		{"none", Options{Auth: AuthOIDC, PublicURL: oidcPublicURL, OIDC: oidc(func(o *OIDCOptions) { o.SigningAlgorithms = []string{"none"} })},
			`signing algorithm "none" is not accepted`},
		{"a public URL with a query", Options{Auth: AuthOIDC, PublicURL: oidcPublicURL + "/?tenant=a", OIDC: oidc(nil)}, "without query or fragment"},
		{"a public URL with a fragment", Options{Auth: AuthOIDC, PublicURL: oidcPublicURL + "#top", OIDC: oidc(nil)}, "without query or fragment"},
		{"a relative public URL", Options{Auth: AuthOIDC, PublicURL: "catalog.example", OIDC: oidc(nil)}, "must be an absolute http(s) URL"},
		{"a public URL of another scheme", Options{Auth: AuthOIDC, PublicURL: "ftp://catalog.example", OIDC: oidc(nil)}, "must be an absolute http(s) URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthorizer(tc.opts.Auth, nil, time.Minute, 10)
			err := a.configure(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("configure = %v, want an error saying %q", err, tc.want)
			}
			if a.oidc != nil {
				t.Errorf("a refused configuration set up a validator")
			}
		})
	}

	t.Run("accepted", func(t *testing.T) {
		for _, mode := range []AuthMode{AuthOIDC, AuthKubernetes} {
			a := newAuthorizer(mode, nil, time.Minute, 10)
			if err := a.configure(Options{Auth: mode, PublicURL: oidcPublicURL + "/", OIDC: oidc(nil)}); err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			if a.oidc == nil || a.resources.publicURL != oidcPublicURL || !slices.Equal(a.resources.authorizationServers, []string{issuer}) {
				t.Errorf("%s: validator %v, public URL %q, authorization servers %q", mode, a.oidc != nil, a.resources.publicURL, a.resources.authorizationServers)
			}
			if !slices.Equal(a.oidc.opts.SigningAlgorithms, DefaultSigningAlgorithms) {
				t.Errorf("signing algorithms %q, want the defaults", a.oidc.opts.SigningAlgorithms)
			}
		}
	})
}

// TestOIDCEdges: inputs that once got through, each fixed with its test:
// email_verified that is not true, a fractional exp, the scheme's case,
// failing JWKS fetches, and a public URL with an empty query or fragment.
func TestOIDCEdges(t *testing.T) {
	key := oidcKeyFor(t, "rsa-a", jose.RS256)

	t.Run("email_verified that is not true is refused", func(t *testing.T) {
		rig := newOIDCRig(t, func(o *Options) { o.OIDC.UsernameClaim = "email" }, key)
		for _, verified := range []any{"false", nil, 0} {
			name, _ := json.Marshal(verified)
			t.Run(string(name), func(t *testing.T) {
				c := rig.iss.claims(oidcPublicURL)
				c["email"], c["email_verified"] = "alice@example.com", verified
				token := key.sign(t, c)
				rig.get(oidcMCP, token).invalid(t, oidcMCP, "email", token)
			})
		}
	})

	t.Run("a fractional exp", func(t *testing.T) {
		rig := newOIDCRig(t, nil, key)
		c := rig.iss.claims(oidcPublicURL)
		c["exp"] = json.Number(strconv.FormatInt(time.Now().Add(5*time.Minute).Unix(), 10) + ".5")
		rig.get(oidcMCP, key.sign(t, c)).pass(t)
	})

	t.Run("the bearer scheme in any case", func(t *testing.T) {
		rig := newOIDCRig(t, nil, key)
		rig.request(oidcMCP, "bearer "+key.sign(t, rig.iss.claims(oidcPublicURL))).pass(t)
	})

	t.Run("JWKS failures are throttled too", func(t *testing.T) {
		rig := newOIDCRig(t, nil, key)
		rig.iss.jwksMode.Store(oidcFail)
		for range 10 {
			token := key.sign(t, rig.iss.claims(oidcPublicURL))
			rig.get(oidcMCP, token).unavailable(t, token)
		}
		if _, j := rig.iss.fetches(); j > 2 {
			t.Errorf("10 tokens checked while the JWKS failed made %d JWKS requests", j)
		}
	})

	t.Run("a public URL with an empty query or fragment", func(t *testing.T) {
		for _, public := range []string{oidcPublicURL + "?", oidcPublicURL + "/#"} {
			a := newAuthorizer(AuthOIDC, nil, time.Minute, 10)
			if err := a.configure(Options{Auth: AuthOIDC, PublicURL: public, OIDC: &OIDCOptions{IssuerURL: "https://issuer.example"}}); err == nil {
				t.Errorf("configure accepted the public URL %q (resource %q)", public, a.resources.forPath(a.resources.publicURL, oidcMCP).uri)
			}
		}
	})
}

// TestProtectedResourcePaths: the paths that are MCP endpoints, each a
// resource of its own, and those that are not.
func TestProtectedResourcePaths(t *testing.T) {
	for path, want := range map[string]bool{
		"/mcp": true, "/v1/namespaces/a/toolcollections/b/mcp": true,
		"/mcp/": false, "//mcp": false, "/v1/namespaces//toolcollections/b/mcp": false, "/v1/namespaces/a/toolcollections//mcp": false,
		"/v1/namespaces/a/toolcollections/b/mcp/": false, "/v1/namespaces/a/b/toolcollections/c/mcp": false,
		"/v1/namespaces/a/mcpservers/b/mcp": false, "/v1/tools": false, "/v1/namespaces/a/toolcollections/b/execute": false, "": false,
	} {
		if got := isMCPEndpoint(path); got != want {
			t.Errorf("isMCPEndpoint(%q) = %v, want %v", path, got, want)
		}
	}
}
