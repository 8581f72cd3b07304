package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

const (
	clientID     = "mcp operator"
	clientSecret = "cl1ent-s3cret/marker"
)

// tokenEndpoint is a token service on 127.0.0.1 that checks the client's
// credentials and answers each request with answer.
type tokenEndpoint struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	forms  []url.Values
	answer func(w http.ResponseWriter, form url.Values)
	// requests counts the requests that reached the endpoint.
	requests atomic.Int64
	// entered, when set, hears each request as it arrives.
	entered chan struct{}
}

func startTokenEndpoint(t *testing.T, answer func(w http.ResponseWriter, form url.Values)) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{t: t, answer: answer}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		if e.entered != nil {
			e.entered <- struct{}{}
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
			return
		}
		// client_secret_basic form-encodes both before Basic encoding.
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		if r.Method != http.MethodPost || id != clientID || secret != clientSecret {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
			return
		}
		if err := r.ParseForm(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request"})
			return
		}
		e.mu.Lock()
		e.forms = append(e.forms, r.PostForm)
		answer := e.answer
		e.mu.Unlock()
		answer(w, r.PostForm)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *tokenEndpoint) setAnswer(answer func(w http.ResponseWriter, form url.Values)) {
	e.mu.Lock()
	e.answer = answer
	e.mu.Unlock()
}

func (e *tokenEndpoint) lastForm() url.Values {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.forms) == 0 {
		return nil
	}
	return e.forms[len(e.forms)-1]
}

func writeJSON(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// issuing answers every grant with a token numbered by the request, valid
// for expiresIn seconds (0: expires_in left out); an exchange's token
// names its subject's number.
func issuing(expiresIn int) func(w http.ResponseWriter, form url.Values) {
	var n atomic.Int64
	return func(w http.ResponseWriter, form url.Values) {
		body := map[string]any{"token_type": "Bearer"}
		switch form.Get("grant_type") {
		case "client_credentials":
			body["access_token"] = fmt.Sprintf("service-%d", n.Add(1))
		case grantTokenExchange:
			body["access_token"] = fmt.Sprintf("exchanged-%d-for-%s", n.Add(1), strings.TrimPrefix(form.Get("subject_token"), "subject-"))
			body["issued_token_type"] = TokenTypeAccessToken
			body["token_type"] = "N_A"
		default:
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		if expiresIn > 0 {
			body["expires_in"] = expiresIn
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// clock is a time tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func config(e *tokenEndpoint, grant Grant) Config {
	return Config{Grant: grant, TokenURL: e.srv.URL + "/oauth/token", ClientID: clientID, ClientSecret: clientSecret,
		Scopes: []string{"tools.read", "tools.call"}, Audience: "https://tools.example.com", Resource: "https://tools.example.com/mcp",
		Timeout: 5 * time.Second}
}

func caller(name string) context.Context {
	return WithCaller(context.Background(), Caller{Identity: "user:" + name, Token: "subject-" + name})
}

// TestClientCredentialsAreSharedAndReused: however many requests want
// the server's token at once, the token endpoint is asked once, with the
// client's credentials in the Authorization header and what the spec asks
// for; the token is reused until 30 seconds before it expires.
func TestClientCredentialsAreSharedAndReused(t *testing.T) {
	e := startTokenEndpoint(t, issuing(3600))
	now := newClock()
	creds := newSources(8, 8, now.Now).Credentials("team/tools", "v1", config(e, GrantClientCredentials))
	if creds.PerCaller() {
		t.Error("client credentials say they depend on the caller")
	}

	const callers = 64
	start := make(chan struct{})
	values := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			values[i], errs[i] = creds.Authorization(context.Background())
		})
	}
	close(start)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || values[i] != "Bearer service-1" {
			t.Fatalf("caller %d got %q, %v; want Bearer service-1", i, values[i], errs[i])
		}
	}
	if n := e.requests.Load(); n != 1 {
		t.Fatalf("%d concurrent callers made %d token requests, want 1", callers, n)
	}
	form := e.lastForm()
	for key, want := range map[string]string{"grant_type": "client_credentials", "scope": "tools.read tools.call",
		"audience": "https://tools.example.com", "resource": "https://tools.example.com/mcp"} {
		if got := form.Get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if form.Has("client_secret") || form.Has("client_id") {
		t.Errorf("the client's credentials were sent in the form (%v), not with HTTP Basic authentication", form)
	}

	now.advance(3600*time.Second - Early - time.Second)
	if got, err := creds.Authorization(context.Background()); err != nil || got != "Bearer service-1" || e.requests.Load() != 1 {
		t.Fatalf("31 s before expiry: got %q, %v after %d requests; want the token reused", got, err, e.requests.Load())
	}
	now.advance(2 * time.Second)
	if got, err := creds.Authorization(context.Background()); err != nil || got != "Bearer service-2" || e.requests.Load() != 2 {
		t.Fatalf("29 s before expiry: got %q, %v after %d requests; want a new token", got, err, e.requests.Load())
	}
}

// TestATokenWithoutExpiryIsReusedBriefly: a token issued without
// expires_in is reused for DefaultLifetime, not for ever.
func TestATokenWithoutExpiryIsReusedBriefly(t *testing.T) {
	e := startTokenEndpoint(t, issuing(0))
	now := newClock()
	creds := newSources(8, 8, now.Now).Credentials("team/tools", "v1", config(e, GrantClientCredentials))
	for _, step := range []struct {
		after time.Duration
		want  string
	}{{0, "Bearer service-1"}, {DefaultLifetime - time.Second, "Bearer service-1"}, {2 * time.Second, "Bearer service-2"}} {
		now.advance(step.after)
		if got, err := creds.Authorization(context.Background()); err != nil || got != step.want {
			t.Fatalf("after %s more: got %q, %v; want %q", step.after, got, err, step.want)
		}
	}
}

// TestATokenValidFor30SecondsIsNotReused: a token that expires within
// Early is used once, on the wall clock too.
func TestATokenValidFor30SecondsIsNotReused(t *testing.T) {
	e := startTokenEndpoint(t, issuing(30))
	creds := NewSources(config(e, GrantClientCredentials).TokenURL).Credentials("team/tools", "v1", config(e, GrantClientCredentials))
	for i := 1; i <= 2; i++ {
		if got, err := creds.Authorization(context.Background()); err != nil || got != fmt.Sprintf("Bearer service-%d", i) {
			t.Fatalf("request %d: got %q, %v", i, got, err)
		}
	}
}

// TestTokensAreExchangedPerCaller: each caller's token is exchanged for
// one of its own, once however many of its requests wait, with what RFC
// 8693 asks; the exchanged token is reused for that caller alone.
func TestTokensAreExchangedPerCaller(t *testing.T) {
	e := startTokenEndpoint(t, issuing(600))
	now := newClock()
	cfg := config(e, GrantTokenExchange)
	cfg.RequestedTokenType = "urn:ietf:params:oauth:token-type:jwt"
	sources := newSources(8, 8, now.Now)
	sources.exchangeURLs = []string{cfg.TokenURL}
	creds := sources.Credentials("team/issues", "v1", cfg)
	if !creds.PerCaller() {
		t.Error("exchanged credentials say they do not depend on the caller")
	}

	const requests = 32
	start := make(chan struct{})
	values := make([]string, requests)
	errs := make([]error, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			<-start
			values[i], errs[i] = creds.Authorization(caller("alice"))
		})
	}
	close(start)
	wg.Wait()
	for i := range requests {
		if errs[i] != nil || values[i] != "Bearer exchanged-1-for-alice" {
			t.Fatalf("request %d got %q, %v", i, values[i], errs[i])
		}
	}
	if n := e.requests.Load(); n != 1 {
		t.Fatalf("%d concurrent requests of one caller made %d exchanges, want 1", requests, n)
	}
	form := e.lastForm()
	for key, want := range map[string]string{
		"grant_type": grantTokenExchange, "subject_token": "subject-alice", "subject_token_type": TokenTypeAccessToken,
		"requested_token_type": "urn:ietf:params:oauth:token-type:jwt", "audience": "https://tools.example.com",
		"resource": "https://tools.example.com/mcp", "scope": "tools.read tools.call",
	} {
		if got := form.Get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}

	bob, err := creds.Authorization(caller("bob"))
	if err != nil || bob != "Bearer exchanged-2-for-bob" {
		t.Fatalf("bob got %q, %v", bob, err)
	}
	alice, err := creds.Authorization(caller("alice"))
	if err != nil || alice != "Bearer exchanged-1-for-alice" || e.requests.Load() != 2 {
		t.Fatalf("alice again got %q, %v after %d exchanges; want hers reused", alice, err, e.requests.Load())
	}
	now.advance(600*time.Second - Early)
	if alice, err := creds.Authorization(caller("alice")); err != nil || alice != "Bearer exchanged-3-for-alice" {
		t.Fatalf("30 s before expiry alice got %q, %v; want a new exchange", alice, err)
	}
}

// TestRefusalsKeepTheCodeAndNoSecret: a token service's refusal keeps
// its OAuth code; it is ErrAuthRefused (the caller is answered 403) when
// the exchange refused the caller, and ErrAuthUnavailable (502) when the
// client was refused, which is the operator's to fix. What is said of it
// shows no token, no client secret and no query of the token URL,
// whatever the service echoed; a refusal is not remembered.
func TestRefusalsKeepTheCodeAndNoSecret(t *testing.T) {
	const subject = "subject-alice"
	for _, tt := range []struct {
		name   string
		grant  Grant
		status int
		code   string
		want   string // the code said
		kind   mcpclient.ErrorKind
	}{
		{"an expired subject token", GrantTokenExchange, http.StatusBadRequest, "invalid_grant", "invalid_grant", mcpclient.ErrAuthRefused},
		{"an audience the caller may not have", GrantTokenExchange, http.StatusBadRequest, "invalid_target", "invalid_target", mcpclient.ErrAuthRefused},
		{"scopes the caller may not have", GrantTokenExchange, http.StatusBadRequest, "invalid_scope", "invalid_scope", mcpclient.ErrAuthRefused},
		{"the exchanging client refused", GrantTokenExchange, http.StatusUnauthorized, "invalid_client", "invalid_client", mcpclient.ErrAuthUnavailable},
		{"a client the service does not know", GrantClientCredentials, http.StatusUnauthorized, "unauthorized_client", "unauthorized_client", mcpclient.ErrAuthUnavailable},
		{"client credentials with a bad scope", GrantClientCredentials, http.StatusBadRequest, "invalid_scope", "invalid_scope", mcpclient.ErrAuthUnavailable},
		{"a code that is the subject token", GrantTokenExchange, http.StatusBadRequest, subject, "", mcpclient.ErrAuthUnavailable},
		{"a code that is not one", GrantTokenExchange, http.StatusBadRequest, "bad " + clientSecret, "", mcpclient.ErrAuthUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := startTokenEndpoint(t, func(w http.ResponseWriter, form url.Values) {
				writeJSON(w, tt.status, map[string]any{"error": tt.code,
					"error_description": "refused " + form.Get("subject_token") + " of " + clientSecret,
					"error_uri":         "https://idp.example.com/errors?token=" + form.Get("subject_token")})
			})
			cfg := config(e, tt.grant)
			cfg.TokenURL += "?tenant=t3nant-key"
			creds := NewSources(cfg.TokenURL).Credentials("team/issues", "v1", cfg)
			_, err := creds.Authorization(caller("alice"))
			if mcpclient.KindOf(err) != tt.kind || mcpclient.AuthErrorCode(err) != tt.want {
				t.Fatalf("got %v (kind %s, code %q), want %s with code %q", err, mcpclient.KindOf(err), mcpclient.AuthErrorCode(err), tt.kind, tt.want)
			}
			var ce *mcpclient.CredentialsError
			if !errors.As(err, &ce) {
				t.Fatalf("got %T, want a CredentialsError", err)
			}
			for _, text := range []string{err.Error(), ce.Public, fmt.Sprintf("%+v", ce.Err)} {
				for _, secret := range []string{subject, clientSecret, "t3nant-key"} {
					if strings.Contains(text, secret) {
						t.Errorf("%q shows %q", text, secret)
					}
				}
				if !strings.Contains(text, fmt.Sprintf("HTTP %d", tt.status)) || (tt.want != "" && !strings.Contains(text, tt.want)) {
					t.Errorf("%q does not say the code and status", text)
				}
			}
			if !strings.Contains(err.Error(), e.srv.URL+"/oauth/token") || strings.Contains(ce.Public, "127.0.0.1") {
				t.Errorf("operators are told %q, callers %q: want the endpoint named to operators only", err.Error(), ce.Public)
			}

			e.setAnswer(issuing(600))
			if got, err := creds.Authorization(caller("alice")); err != nil || !strings.HasPrefix(got, "Bearer ") {
				t.Errorf("after the service relented: %q, %v; want a token (the refusal was remembered?)", got, err)
			}
		})
	}
}

// TestAnUnavailableTokenServiceIsSaidSo: a token service that fails,
// cannot be reached, answers too late or answers no token is
// ErrAuthUnavailable, and says no secret either.
func TestAnUnavailableTokenServiceIsSaidSo(t *testing.T) {
	closed := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		return "http://" + addr + "/oauth/token?key=t3nant-key"
	}
	answering := func(answer func(w http.ResponseWriter, r *http.Request)) func(t *testing.T) string {
		return func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(answer))
			t.Cleanup(srv.Close)
			return srv.URL + "/oauth/token?key=t3nant-key"
		}
	}
	release := make(chan struct{})
	for _, tt := range []struct {
		name   string
		url    func(t *testing.T) string
		egress *mcpclient.EgressPolicy
		says   string
	}{
		{"503", answering(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down for "+clientSecret, http.StatusServiceUnavailable)
		}), nil, "HTTP 503 Service Unavailable"},
		{"503 with an OAuth error", answering(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"temporarily_unavailable","error_description":"down for ` + clientSecret + `"}`))
		}), nil, "HTTP 503 Service Unavailable temporarily_unavailable"},
		{"down", closed, nil, "could not be reached"},
		{"too slow", answering(func(w http.ResponseWriter, r *http.Request) {
			// Read, the request's body lets the server see the client leave.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}), nil, "did not answer within 200ms"},
		{"not JSON", answering(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("<html>" + clientSecret))
		}), nil, "not a token"},
		{"no access_token", answering(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer"})
		}), nil, "token"},
		{"a token of another type", answering(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"access_token": "x", "token_type": "DPoP"})
		}), nil, `"DPoP"`},
		{"an address the egress policy denies", answering(func(w http.ResponseWriter, _ *http.Request) {}),
			&mcpclient.EgressPolicy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, "egress policy"},
	} {
		for _, grant := range []Grant{GrantClientCredentials, GrantTokenExchange} {
			t.Run(tt.name+"/"+string(grant), func(t *testing.T) {
				// 200ms only where the service never answers: a loaded
				// machine may take longer over loopback for the others.
				timeout := 5 * time.Second
				if tt.name == "too slow" {
					timeout = 200 * time.Millisecond
				}
				cfg := Config{Grant: grant, TokenURL: tt.url(t), ClientID: clientID, ClientSecret: clientSecret,
					Timeout: timeout, Egress: tt.egress}
				_, err := NewSources(cfg.TokenURL).Credentials("team/issues", "v1", cfg).Authorization(caller("alice"))
				if mcpclient.KindOf(err) != mcpclient.ErrAuthUnavailable {
					t.Fatalf("got %v (kind %s), want AuthUnavailable", err, mcpclient.KindOf(err))
				}
				if !strings.Contains(err.Error(), tt.says) {
					t.Errorf("%q does not say %q", err.Error(), tt.says)
				}
				for _, secret := range []string{"subject-alice", clientSecret, "t3nant-key"} {
					if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%v", errors.Unwrap(err)), secret) {
						t.Errorf("%q (cause %v) shows %q", err.Error(), errors.Unwrap(err), secret)
					}
				}
			})
		}
	}
	close(release)
}

// TestACallWithoutACallerIsRefused: a server whose tokens are exchanged
// is never called as the service for a call that names no caller, or a
// caller without a token; discovery, marked as the service's own, gets
// the same client's own token with what the spec asks for.
func TestACallWithoutACallerIsRefused(t *testing.T) {
	e := startTokenEndpoint(t, issuing(600))
	creds := NewSources(config(e, GrantTokenExchange).TokenURL).Credentials("team/issues", "v1", config(e, GrantTokenExchange))
	for name, ctx := range map[string]context.Context{
		"no caller":                context.Background(),
		"a caller without a token": WithCaller(context.Background(), Caller{Identity: "anonymous"}),
		"a caller without a token, in discovery's context": WithCaller(WithServiceIdentity(context.Background()), Caller{Identity: "anonymous"}),
	} {
		_, err := creds.Authorization(ctx)
		if mcpclient.KindOf(err) != mcpclient.ErrAuthRefused || !strings.Contains(err.Error(), "exchanged for the caller's") {
			t.Errorf("%s: got %v, want AuthRefused", name, err)
		}
	}
	if n := e.requests.Load(); n != 0 {
		t.Fatalf("the token endpoint was asked %d times, want never", n)
	}

	got, err := creds.Authorization(WithServiceIdentity(context.Background()))
	if err != nil || got != "Bearer service-1" {
		t.Fatalf("discovery got %q, %v; want the service's token", got, err)
	}
	form := e.lastForm()
	for key, want := range map[string]string{"grant_type": "client_credentials", "scope": "tools.read tools.call",
		"audience": "https://tools.example.com", "resource": "https://tools.example.com/mcp"} {
		if got := form.Get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if got, err := creds.Authorization(WithServiceIdentity(caller("alice"))); err != nil || got != "Bearer exchanged-2-for-alice" {
		t.Errorf("a caller's call in a context marked as the service's got %q, %v; want the caller's token", got, err)
	}
}

// TestOneCallerLeavingFailsNoOther: an exchange shared by two requests of
// one caller goes on when the request that started it ends.
func TestOneCallerLeavingFailsNoOther(t *testing.T) {
	e := startTokenEndpoint(t, issuing(600))
	e.entered = make(chan struct{}, 1)
	release := make(chan struct{})
	e.setAnswer(func(w http.ResponseWriter, form url.Values) {
		<-release
		issuing(600)(w, form)
	})
	creds := NewSources(config(e, GrantTokenExchange).TokenURL).Credentials("team/issues", "v1", config(e, GrantTokenExchange))

	ctx, cancel := context.WithCancel(caller("alice"))
	first := make(chan error, 1)
	go func() {
		_, err := creds.Authorization(ctx)
		first <- err
	}()
	<-e.entered
	cancel()
	if err := <-first; mcpclient.KindOf(err) != mcpclient.ErrAuthUnavailable {
		t.Fatalf("the request that left got %v, want AuthUnavailable", err)
	}
	second := make(chan string, 1)
	go func() {
		got, _ := creds.Authorization(caller("alice"))
		second <- got
	}()
	close(release)
	if got := <-second; got != "Bearer exchanged-1-for-alice" {
		t.Errorf("the request that stayed got %q", got)
	}
	if n := e.requests.Load(); n != 1 {
		t.Errorf("%d exchanges, want the one shared", n)
	}
}

// TestSourcesKeepCredentialsAndAreBounded: a server's Credentials, and
// the tokens they hold, are the same while its config is; a new config
// gets new ones; servers and exchanged tokens are bounded.
func TestSourcesKeepCredentialsAndAreBounded(t *testing.T) {
	e := startTokenEndpoint(t, issuing(600))
	sources := newSources(2, 2, time.Now)
	cfg := config(e, GrantTokenExchange)
	sources.exchangeURLs = []string{cfg.TokenURL}
	a := sources.Credentials("team/a", "v1", cfg)
	if sources.Credentials("team/a", "v1", cfg) != a {
		t.Error("the same server and config got new Credentials")
	}
	if sources.Credentials("team/a", "v2", cfg) == a || sources.Credentials("team/b", "v1", cfg) == a {
		t.Error("another config or server got the same Credentials")
	}
	sources.Credentials("team/c", "v1", cfg)
	if n := sources.held(); n != 2 {
		t.Errorf("%d servers held, want at most 2", n)
	}

	creds := sources.Credentials("team/c", "v1", cfg)
	for _, who := range []string{"alice", "bob", "carol"} {
		if _, err := creds.Authorization(caller(who)); err != nil {
			t.Fatal(err)
		}
	}
	if n := sources.heldCallers(); n != 2 {
		t.Errorf("%d exchanged tokens held, want at most 2", n)
	}
	before := e.requests.Load()
	if _, err := creds.Authorization(caller("carol")); err != nil || e.requests.Load() != before {
		t.Errorf("the most recent caller's token was not kept")
	}
	if _, err := creds.Authorization(caller("alice")); err != nil || e.requests.Load() != before+1 {
		t.Errorf("the least recent caller's token was kept past the bound")
	}
}

// TestEachSubjectTokenIsExchangedApart: two tokens of one user may be
// granted different things, so each is exchanged for itself; the same
// token again reuses its exchange.
func TestEachSubjectTokenIsExchangedApart(t *testing.T) {
	e := startTokenEndpoint(t, issuing(600))
	creds := NewSources(config(e, GrantTokenExchange).TokenURL).Credentials("team/issues", "v1", config(e, GrantTokenExchange))
	ide := WithCaller(context.Background(), Caller{Identity: "user:alice", Token: "subject-alice-ide"})
	readOnly := WithCaller(context.Background(), Caller{Identity: "user:alice", Token: "subject-alice-readonly"})
	first, err := creds.Authorization(ide)
	if err != nil || first != "Bearer exchanged-1-for-alice-ide" {
		t.Fatalf("the IDE token got %q, %v", first, err)
	}
	second, err := creds.Authorization(readOnly)
	if err != nil || second != "Bearer exchanged-2-for-alice-readonly" {
		t.Fatalf("alice's read-only token got %q, %v; want an exchange of its own", second, err)
	}
	again, err := creds.Authorization(ide)
	if err != nil || again != first || e.requests.Load() != 2 {
		t.Fatalf("the IDE token again got %q, %v after %d exchanges; want %q reused", again, err, e.requests.Load(), first)
	}
}

// TestARefusedTokenIsForgotten: a token the server answered 401 to is
// dropped, so the next request gets a new one instead of failing until
// the old one would have been refreshed; a token that was already
// replaced is not.
func TestARefusedTokenIsForgotten(t *testing.T) {
	type forgetting interface {
		Forget(context.Context, string)
	}
	for _, grant := range []Grant{GrantClientCredentials, GrantTokenExchange} {
		t.Run(string(grant), func(t *testing.T) {
			e := startTokenEndpoint(t, issuing(3600))
			creds := NewSources(config(e, grant).TokenURL).Credentials("team/issues", "v1", config(e, grant))
			ctx := caller("alice")
			first, err := creds.Authorization(ctx)
			if err != nil {
				t.Fatal(err)
			}
			creds.(forgetting).Forget(ctx, "Bearer not-the-current-one")
			if again, _ := creds.Authorization(ctx); again != first || e.requests.Load() != 1 {
				t.Fatalf("forgetting another value replaced the token: %q after %d requests", again, e.requests.Load())
			}
			creds.(forgetting).Forget(ctx, first)
			next, err := creds.Authorization(ctx)
			if err != nil || next == first || e.requests.Load() != 2 {
				t.Fatalf("after the server refused %q: got %q, %v after %d requests; want a new token", first, next, err, e.requests.Load())
			}
		})
	}
}

// TestCallersTokensGoOnlyWhereTheOperatorSaid: a token exchange at an
// endpoint the process was not given (--token-exchange-urls) sends no
// caller's token and says why; discovery, which sends none, still gets
// the client's own token there.
func TestCallersTokensGoOnlyWhereTheOperatorSaid(t *testing.T) {
	e := startTokenEndpoint(t, issuing(600))
	cfg := config(e, GrantTokenExchange)
	creds := NewSources("https://idp.example.com/oauth/v2/token").Credentials("team/issues", "v1", cfg)
	_, err := creds.Authorization(caller("alice"))
	if mcpclient.KindOf(err) != mcpclient.ErrAuthUnavailable || !strings.Contains(err.Error(), "--token-exchange-urls") {
		t.Fatalf("got %v (kind %s), want AuthUnavailable naming --token-exchange-urls", err, mcpclient.KindOf(err))
	}
	if n := e.requests.Load(); n != 0 {
		t.Fatalf("the token endpoint saw %d requests, want none: alice's token went to it", n)
	}
	service, err := creds.Authorization(WithServiceIdentity(context.Background()))
	if err != nil || service != "Bearer service-1" {
		t.Fatalf("discovery got %q, %v; want the client's own token", service, err)
	}
}
