package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

type whoKey struct{}

func as(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, whoKey{}, who)
}

// callerCredentials authorize a request as the caller its context names,
// refusing one that names none, and count what they are asked.
type callerCredentials struct {
	asked atomic.Int64
	// fail, when set, is what every request gets instead.
	mu   sync.Mutex
	fail error
}

func (c *callerCredentials) Authorization(ctx context.Context) (string, error) {
	c.asked.Add(1)
	c.mu.Lock()
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return "", fail
	}
	who, _ := ctx.Value(whoKey{}).(string)
	if who == "" {
		return "", &CredentialsError{Kind: ErrAuthRefused, Message: "no caller"}
	}
	return "Bearer " + who, nil
}

func (c *callerCredentials) PerCaller() bool { return true }

func (c *callerCredentials) failWith(err error) {
	c.mu.Lock()
	c.fail = err
	c.mu.Unlock()
}

// TestCredentialsAuthorizeEveryRequest: over every transport, each HTTP
// request a session makes carries the Authorization its Credentials give
// for the request's own context: a request its caller made as that
// caller, the session's own (its streams, the DELETE that ends it) as
// whoever opened the session.
func TestCredentialsAuthorizeEveryRequest(t *testing.T) {
	for _, tt := range []struct {
		name      string
		mode      testmcp.GoSDKMode
		revisions []string
		transport Transport
		version   string
		// own are requests the session makes on its own.
		own []string
	}{
		{"2026-07-28", testmcp.GoSDKOnly2026, nil, TransportStreamableHTTP, RevisionStateless, []string{"POST subscriptions/listen"}},
		{"Streamable HTTP", testmcp.GoSDKSessions, []string{"2025-11-25"}, TransportStreamableHTTP, "2025-11-25", []string{"GET ", "DELETE "}},
		{"HTTP+SSE", testmcp.GoSDKLegacySSE, nil, TransportSSE, "2025-11-25", []string{"GET "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGoSDK(t, tt.mode, testmcp.GoSDKOptions{Revisions: tt.revisions})
			creds := &callerCredentials{}
			s, err := Connect(as(context.Background(), "operator"), Target{URL: g.URL(), Timeout: 5 * time.Second, Credentials: creds}, func() {})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if info := s.Info(); info.Transport != tt.transport || info.ProtocolVersion != tt.version {
				t.Fatalf("connected with %s over %s, want %s over %s", info.ProtocolVersion, info.Transport, tt.version, tt.transport)
			}
			if _, err := s.ListTools(as(context.Background(), "alice"), DefaultLimits); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CallTool(as(context.Background(), "bob"), "echo", json.RawMessage(`{"m":"hi"}`), CallOptions{}); err != nil {
				t.Fatal(err)
			}
			s.Close()

			requests := g.Requests()
			if len(requests) == 0 {
				t.Fatal("the server saw no request")
			}
			byMethod := map[string]string{}
			for _, r := range requests {
				got := r.Header.Get("Authorization")
				if got != "Bearer operator" && got != "Bearer alice" && got != "Bearer bob" {
					t.Errorf("%s %s carried Authorization %q", r.HTTPMethod, r.Method, got)
				}
				byMethod[r.HTTPMethod+" "+r.Method] = got
			}
			for method, want := range map[string]string{"POST tools/list": "Bearer alice", "POST tools/call": "Bearer bob"} {
				if got := byMethod[method]; got != want {
					t.Errorf("%s carried %q, want %q (its caller's)", method, got, want)
				}
			}
			for _, method := range tt.own {
				if got := byMethod[method]; got != "Bearer operator" {
					t.Errorf("the session's own %s carried %q, want the opener's", method, got)
				}
			}
			if asked := creds.asked.Load(); asked < int64(len(requests)) {
				t.Errorf("the credentials were asked %d times for %d requests", asked, len(requests))
			}
		})
	}
}

// TestAListeningStreamIsAuthorized: a server that refuses requests
// without the token gets it on its list-changed stream too, which the
// session opens on its own, and the notification comes through.
func TestAListeningStreamIsAuthorized(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
	srv.SetRequiredHeader("Authorization", "Bearer operator")
	srv.AddTools("a")
	changed := make(chan struct{}, 1)
	s, err := Connect(as(context.Background(), "operator"), Target{URL: srv.URL(), Timeout: 5 * time.Second, Credentials: &callerCredentials{}}, func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if !s.Info().ListChanged {
		t.Fatal("the listening stream did not open")
	}
	srv.AddTools("b")
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no list change came through")
	}
}

// TestCredentialsFailuresAreClassified: a request its Credentials cannot
// authorize is never sent, and fails with the kind they said, the OAuth
// code kept, naming the token endpoint to operators but not to callers.
func TestCredentialsFailuresAreClassified(t *testing.T) {
	const endpoint = "https://idp.example.com/oauth/token"
	refused := &CredentialsError{Kind: ErrAuthRefused, Code: "invalid_grant",
		Message: "the token endpoint " + endpoint + " refused the token exchange: invalid_grant (HTTP 400)",
		Public:  "the token endpoint refused the token exchange: invalid_grant (HTTP 400)"}
	unavailable := &CredentialsError{Kind: ErrAuthUnavailable, Message: "the token endpoint " + endpoint + " answered HTTP 503",
		Public: "the token endpoint answered HTTP 503", Err: context.DeadlineExceeded}
	for _, tt := range []struct {
		name  string
		fail  error
		kind  ErrorKind
		code  string
		says  string
		never string
	}{
		{"refused", refused, ErrAuthRefused, "invalid_grant", "invalid_grant (HTTP 400)", ""},
		{"unavailable", unavailable, ErrAuthUnavailable, "", "answered HTTP 503", ""},
		{"an error of another make", errors.New("vault said s3cr3t-marker"), ErrAuthUnavailable, "", "could not authorize", "s3cr3t-marker"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGoSDK(t, testmcp.GoSDKOnly2026)
			creds := &callerCredentials{}
			creds.failWith(tt.fail)
			_, err := Connect(context.Background(), Target{URL: g.URL(), Timeout: 5 * time.Second, Credentials: creds}, nil)
			check := func(err error) {
				t.Helper()
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("got %v, want an *Error", err)
				}
				if e.Kind != tt.kind || KindOf(err) != tt.kind || AuthErrorCode(err) != tt.code {
					t.Errorf("got kind %s code %q, want %s %q", e.Kind, AuthErrorCode(err), tt.kind, tt.code)
				}
				if !strings.Contains(e.Message, "no access token for "+g.URL()) || !strings.Contains(e.Message, tt.says) {
					t.Errorf("message %q does not say what happened", e.Message)
				}
				if tt.never != "" && strings.Contains(e.Message, tt.never) {
					t.Errorf("message %q shows %q", e.Message, tt.never)
				}
				if told := e.Named("MCPServer team/tools").Message; strings.Contains(told, "idp.example.com") || !strings.Contains(told, tt.says) {
					t.Errorf("told callers %q", told)
				}
			}
			check(err)
			if n := len(g.Requests()); n != 0 {
				t.Errorf("the server saw %d requests, want none", n)
			}

			// A session whose Credentials start failing fails the call, and
			// stays.
			creds.failWith(nil)
			s, err := Connect(as(context.Background(), "operator"), Target{URL: g.URL(), Timeout: 5 * time.Second, Credentials: creds}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			seen := len(g.Requests())
			creds.failWith(tt.fail)
			_, err = s.CallTool(as(context.Background(), "alice"), "echo", json.RawMessage(`{}`), CallOptions{})
			check(err)
			if n := len(g.Requests()); n != seen {
				t.Errorf("the server saw %d more requests, want none", n-seen)
			}
			creds.failWith(nil)
			if _, err := s.CallTool(as(context.Background(), "alice"), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Errorf("after the credentials recovered: %v", err)
			}
		})
	}
}

// TestTheTokenClientKeepsToTheEgressPolicy: the token endpoint's client
// dials no address the egress policy denies and follows no redirect.
func TestTheTokenClientKeepsToTheEgressPolicy(t *testing.T) {
	var hits atomic.Int64
	redirecting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
	})
	server := httptest.NewServer(redirecting)
	t.Cleanup(server.Close)
	srv := server.URL
	denied := NewHTTPClient(&EgressPolicy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, nil, 5*time.Second)
	if _, err := denied.Get(srv); !IsEgressDenied(err) {
		t.Errorf("a denied address: got %v, want the egress policy's refusal", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the denied server was reached")
	}
	allowed := NewHTTPClient(&EgressPolicy{Deny: DefaultEgressDeny}, nil, 5*time.Second)
	resp, err := allowed.Get(srv)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("got %d, want the redirect itself, not followed", resp.StatusCode)
	}
}

// forgettingCredentials hand out one token and hear which the server
// refused.
type forgettingCredentials struct {
	mu        sync.Mutex
	forgotten []string
}

func (c *forgettingCredentials) Authorization(context.Context) (string, error) {
	return "Bearer revoked", nil
}

func (c *forgettingCredentials) PerCaller() bool { return false }

func (c *forgettingCredentials) Forget(_ context.Context, value string) {
	c.mu.Lock()
	c.forgotten = append(c.forgotten, value)
	c.mu.Unlock()
}

// TestARefusedTokenIsForgotten: a server's 401 makes the Credentials drop
// the value it was sent, so the next request asks for a new token.
func TestARefusedTokenIsForgotten(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	creds := &forgettingCredentials{}
	_, err := Connect(context.Background(), Target{URL: srv.URL, Transport: TransportStreamableHTTP, Timeout: 5 * time.Second, Credentials: creds}, nil)
	if KindOf(err) != ErrUnauthorized {
		t.Fatalf("got %v, want Unauthorized", err)
	}
	creds.mu.Lock()
	defer creds.mu.Unlock()
	if len(creds.forgotten) == 0 || creds.forgotten[0] != "Bearer revoked" {
		t.Errorf("the credentials were told to forget %q, want the refused token", creds.forgotten)
	}
}
