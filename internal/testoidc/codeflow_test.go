package testoidc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

const (
	consoleID       = "console"
	consoleRedirect = "http://127.0.0.1:8090/ui/"
	catalogAudience = "http://127.0.0.1:8090"
)

func codeFlowClients() []Client {
	return append(testClients(), Client{ID: consoleID, Public: true, RedirectURIs: []string{consoleRedirect},
		LoginSubject: "dana", Audience: []string{catalogAudience}})
}

// pkce is a code verifier and its S256 challenge.
func pkce(t *testing.T) (verifier, challenge string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func authorizeParams(challenge string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {consoleID},
		"redirect_uri":          {consoleRedirect},
		"scope":                 {"openid"},
		"state":                 {"st-123"},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
	}
}

// browse follows the provider's redirects from the authorization endpoint,
// as a browser does, until one leads away from the provider; it returns
// that redirect's target, or the status and body of an answer that is not
// a redirect.
func browse(t *testing.T, p *Provider, params url.Values) (*url.URL, int, string) {
	t.Helper()
	hc := p.HTTPClient()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	next := p.AuthorizationURL + "?" + params.Encode()
	for range 5 {
		resp, err := hc.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			return nil, resp.StatusCode, string(body)
		}
		loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(loc.String(), p.Issuer+"/") {
			return loc, resp.StatusCode, ""
		}
		next = loc.String()
	}
	t.Fatal("more than 5 redirects inside the provider")
	return nil, 0, ""
}

// redeem exchanges a code at the token endpoint as a public client does:
// no client authentication, client_id and code_verifier in the form.
func redeem(t *testing.T, p *Provider, form url.Values, origin string) (int, map[string]any, http.Header) {
	t.Helper()
	status, out, header, err := post(ctxT(t), p, form, origin)
	if err != nil {
		t.Fatal(err)
	}
	return status, out, header
}

// post is redeem for any goroutine: it returns what went wrong.
func post(ctx context.Context, p *Provider, form url.Values, origin string) (int, map[string]any, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := p.HTTPClient().Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, nil, nil, fmt.Errorf("token answer %d: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, out, resp.Header, nil
}

func codeForm(code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {consoleRedirect},
		"client_id": {consoleID}, "code_verifier": {verifier}}
}

// signIn runs the front channel and returns the code the provider sent
// the browser back with.
func signIn(t *testing.T, p *Provider, challenge string) string {
	t.Helper()
	back, status, body := browse(t, p, authorizeParams(challenge))
	if back == nil {
		t.Fatalf("the provider answered %d instead of redirecting back: %s", status, body)
	}
	if got := back.Scheme + "://" + back.Host + back.Path; got != consoleRedirect {
		t.Fatalf("redirected to %s, want %s", back, consoleRedirect)
	}
	q := back.Query()
	if q.Get("error") != "" || q.Get("code") == "" || q.Get("state") != "st-123" {
		t.Fatalf("redirected back with %v, want a code and the state", q)
	}
	return q.Get("code")
}

func TestCodeFlowWithPKCE(t *testing.T) {
	p := start(t, Options{Clients: codeFlowClients()})
	ctx, v := verifier(t, p)
	verifierValue, challenge := pkce(t)
	code := signIn(t, p, challenge)
	if p.Logins() != 1 {
		t.Fatalf("Logins %d, want 1", p.Logins())
	}

	status, answer, header := redeem(t, p, codeForm(code, verifierValue), "http://127.0.0.1:8090")
	if status != http.StatusOK {
		t.Fatalf("code exchange: %d %v", status, answer)
	}
	if got := header.Get("Access-Control-Allow-Origin"); got != "http://127.0.0.1:8090" {
		t.Errorf("token answer to a page of another origin: Access-Control-Allow-Origin %q", got)
	}
	access, _ := answer["access_token"].(string)
	idt, err := v.Verify(ctx, access)
	if err != nil {
		t.Fatalf("go-oidc verify of the access token: %v", err)
	}
	if idt.Subject != "dana" || !slices.Contains(idt.Audience, catalogAudience) || !slices.Contains(idt.Audience, consoleID) {
		t.Fatalf("access token sub %q aud %v, want dana and both %s and %s", idt.Subject, idt.Audience, catalogAudience, consoleID)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if claims["client_id"] != consoleID || claims["scope"] != "openid" {
		t.Fatalf("claims %v", claims)
	}
	if id, _ := answer["id_token"].(string); id == "" || answer["token_type"] != "Bearer" {
		t.Fatalf("answer %v lacks an ID token or the Bearer type", answer)
	}

	// A code works once.
	status, answer, _ = redeem(t, p, codeForm(code, verifierValue), "")
	if status != http.StatusBadRequest || answer["error"] != "invalid_grant" {
		t.Fatalf("second use of the code: %d %v, want 400 invalid_grant", status, answer)
	}
}

// TestCodeWorksOnceUnderConcurrentRedeems sends one code to the token
// endpoint from several requests at once: exactly one gets a token, the
// others invalid_grant (zitadel deletes the request only after signing,
// so the storage must redeem the code itself).
func TestCodeWorksOnceUnderConcurrentRedeems(t *testing.T) {
	p := start(t, Options{Clients: codeFlowClients()})
	for round := range 5 {
		verifierValue, challenge := pkce(t)
		code := signIn(t, p, challenge)
		const n = 8
		type answer struct {
			status int
			body   map[string]any
			err    error
		}
		answers := make([]answer, n)
		ready := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-ready
				status, body, _, err := post(ctxT(t), p, codeForm(code, verifierValue), "")
				answers[i] = answer{status, body, err}
			})
		}
		close(ready)
		wg.Wait()
		tokens := 0
		for i, a := range answers {
			switch {
			case a.err != nil:
				t.Fatalf("round %d, request %d: %v", round, i, a.err)
			case a.status == http.StatusOK && a.body["access_token"] != nil:
				tokens++
			case a.status != http.StatusBadRequest || a.body["error"] != "invalid_grant" || a.body["access_token"] != nil:
				t.Fatalf("round %d, request %d: %d %v, want a token or 400 invalid_grant", round, i, a.status, a.body)
			}
		}
		if tokens != 1 {
			t.Fatalf("round %d: %d of %d concurrent redeems of one code got a token, want exactly 1", round, tokens, n)
		}
	}
}

func TestCodeExchangeRefusals(t *testing.T) {
	p := start(t, Options{Clients: codeFlowClients()})
	for _, tc := range []struct {
		name   string
		change func(url.Values)
		code   string
	}{
		{"a wrong code verifier", func(f url.Values) { f.Set("code_verifier", strings.Repeat("a", 43)) }, "invalid_grant"},
		{"no code verifier", func(f url.Values) { f.Del("code_verifier") }, "invalid_request"},
		{"another redirect URI", func(f url.Values) { f.Set("redirect_uri", consoleRedirect+"x") }, "invalid_grant"},
		{"another client", func(f url.Values) { f.Set("client_id", "plain") }, "invalid_client"},
		{"a code never issued", func(f url.Values) { f.Set("code", "forged") }, "invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verifierValue, challenge := pkce(t)
			form := codeForm(signIn(t, p, challenge), verifierValue)
			tc.change(form)
			status, answer, _ := redeem(t, p, form, "")
			if status < 400 || status > 401 || answer["error"] != tc.code {
				t.Fatalf("%d %v, want %s", status, answer, tc.code)
			}
			if answer["access_token"] != nil {
				t.Fatalf("a token was issued: %v", answer)
			}
		})
	}
}

func TestAuthorizationRequestRefusals(t *testing.T) {
	p := start(t, Options{Clients: codeFlowClients()})
	_, challenge := pkce(t)
	t.Run("PKCE is required, with S256", func(t *testing.T) {
		for name, change := range map[string]func(url.Values){
			"no challenge":      func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") },
			"plain":             func(q url.Values) { q.Set("code_challenge_method", "plain") },
			"no method (plain)": func(q url.Values) { q.Del("code_challenge_method") },
		} {
			q := authorizeParams(challenge)
			change(q)
			back, status, body := browse(t, p, q)
			if back == nil {
				t.Fatalf("%s: %d %s, want a redirect back with an error", name, status, body)
			}
			if e := back.Query(); e.Get("error") != "invalid_request" || e.Get("code") != "" || e.Get("state") != "st-123" {
				t.Fatalf("%s: redirected back with %v, want invalid_request and the state", name, e)
			}
		}
	})
	t.Run("redirect URIs match exactly, and an unknown one is not redirected to", func(t *testing.T) {
		for _, uri := range []string{consoleRedirect + "evil", "http://127.0.0.1:8091/ui/", "https://127.0.0.1:8090/ui/", "http://localhost:8090/ui/"} {
			q := authorizeParams(challenge)
			q.Set("redirect_uri", uri)
			back, status, _ := browse(t, p, q)
			if back != nil || status != http.StatusBadRequest {
				t.Fatalf("redirect_uri %s: redirected to %v (%d), want 400 at the provider", uri, back, status)
			}
		}
	})
	t.Run("confidential clients do not use the code flow", func(t *testing.T) {
		q := authorizeParams(challenge)
		q.Set("client_id", "plain")
		if back, status, _ := browse(t, p, q); back != nil || status != http.StatusBadRequest {
			t.Fatalf("redirected to %v (%d), want 400 at the provider", back, status)
		}
	})
	t.Run("public clients have no client credentials", func(t *testing.T) {
		_, err := p.ClientCredentialsToken(ctxT(t), consoleID, "")
		var te *TokenError
		if !errors.As(err, &te) || te.Code != "invalid_client" {
			t.Fatalf("client_credentials as the public client: %v, want invalid_client", err)
		}
	})
	if p.Logins() != 0 {
		t.Errorf("the provider signed a user in for a refused request (%d logins)", p.Logins())
	}
}

func TestDiscoveryAnswersOtherOrigins(t *testing.T) {
	p := start(t, Options{Clients: codeFlowClients()})
	const origin = "http://127.0.0.1:8090"
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, p.Issuer+"/.well-known/openid-configuration", nil)
	req.Header.Set("Origin", origin)
	resp, err := p.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		Methods               []string `json:"code_challenge_methods_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != origin {
		t.Errorf("discovery: Access-Control-Allow-Origin %q, want %q", got, origin)
	}
	if doc.AuthorizationEndpoint != p.AuthorizationURL || !slices.Contains(doc.Methods, "S256") {
		t.Errorf("discovery %+v, want the authorization endpoint %s and S256", doc, p.AuthorizationURL)
	}
	// A page's fetch with a non-simple header is preflighted first.
	pre, _ := http.NewRequestWithContext(ctxT(t), http.MethodOptions, p.TokenURL, nil)
	pre.Header.Set("Origin", origin)
	pre.Header.Set("Access-Control-Request-Method", http.MethodPost)
	pre.Header.Set("Access-Control-Request-Headers", "content-type")
	presp, err := p.HTTPClient().Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if presp.StatusCode >= 300 || presp.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(presp.Header.Get("Access-Control-Allow-Methods"), http.MethodPost) {
		t.Errorf("preflight of the token endpoint: %d %v", presp.StatusCode, presp.Header)
	}
}

func TestPublicClientRegistration(t *testing.T) {
	for name, c := range map[string]Client{
		"a secret":                {ID: "p", Public: true, Secret: "s", RedirectURIs: []string{consoleRedirect}, LoginSubject: "u"},
		"no redirect URIs":        {ID: "p", Public: true, LoginSubject: "u"},
		"no login subject":        {ID: "p", Public: true, RedirectURIs: []string{consoleRedirect}},
		"http off loopback":       {ID: "p", Public: true, RedirectURIs: []string{"http://tools.example.com/ui/"}, LoginSubject: "u"},
		"a fragment":              {ID: "p", Public: true, RedirectURIs: []string{"https://tools.example.com/ui/#x"}, LoginSubject: "u"},
		"a confidential redirect": {ID: "c", Secret: "s", RedirectURIs: []string{consoleRedirect}},
	} {
		if _, err := Start(Options{Clients: []Client{c}}); err == nil {
			t.Errorf("%s: registered, want refused", name)
		}
	}
}
