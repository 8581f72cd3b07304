package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// TestDetailShowsNoSecretOfTheTarget: the text of an error or an answer,
// shown in a message, loses the target's header values and whatever its
// URL holds past the path, however it appears there.
func TestDetailShowsNoSecretOfTheTarget(t *testing.T) {
	for _, tt := range []struct {
		name    string
		target  Target
		text    string
		want    string
		secrets []string
	}{
		{"a header value echoed", Target{URL: "http://h/mcp", Headers: map[string]string{"Authorization": "Bearer s3cr3t"}},
			"bad token Bearer s3cr3t", "bad token [redacted]", []string{"s3cr3t"}},
		{"the query in net/http's error", Target{URL: "http://h/mcp?key=s3cr3t&v=2"},
			`Post "http://h/mcp?key=s3cr3t&v=2": context canceled`, `Post "http://h/mcp?[redacted]": context canceled`, []string{"s3cr3t"}},
		{"a query value echoed decoded", Target{URL: "http://h/mcp?key=a%2Fb%3Dc"},
			"unknown key a/b=c", "unknown key [redacted]", []string{"a/b=c", "a%2Fb%3Dc"}},
		{"a fragment", Target{URL: "http://h/mcp#tok3n-x"},
			`Post "http://h/mcp#tok3n-x": EOF`, `Post "http://h/mcp#[redacted]": EOF`, []string{"tok3n-x"}},
		{"a password", Target{URL: "http://user:pa55word@h/mcp"},
			"login pa55word refused", "login [redacted] refused", []string{"pa55word"}},
		{"a user name that is a token", Target{URL: "http://t0ken-x@h/mcp"},
			`Post "http://t0ken-x@h/mcp": EOF`, `Post "http://[redacted]@h/mcp": EOF`, []string{"t0ken-x"}},
		{"a value after a semicolon, echoed", Target{URL: "http://h/mcp?key=s3cr3t;v=1"},
			"unknown key s3cr3t", "unknown key [redacted]", []string{"s3cr3t"}},
		{"a bare key, echoed", Target{URL: "http://h/mcp?APIKEY123"},
			"unknown APIKEY123", "unknown [redacted]", []string{"APIKEY123"}},
		{"a quote in the query, as %q writes it", Target{URL: `http://h/mcp?key=s3cr3t"marker`},
			`Post "http://h/mcp?key=s3cr3t\"marker": EOF`, `Post "http://h/mcp?[redacted]": EOF`, []string{"s3cr3t", "marker"}},
		{"a header value inside a query value", Target{URL: "http://h/mcp?key=tenant-s3cr3t-key", Headers: map[string]string{"X-Tenant": "tenant"}},
			"unknown key tenant-s3cr3t-key", "unknown key [redacted]", []string{"s3cr3t"}},
		{"another URL's query (an SSE session's endpoint)", Target{URL: "http://h/sse"},
			`Post "http://h/message?sessionid=Z44J2K": EOF`, `Post "http://h/message?[redacted]": EOF`, []string{"Z44J2K"}},
		{"a user name as net/http writes it, escaped", Target{URL: "http://tok%2Fen-x@h/mcp"},
			`Post "http://tok%2Fen-x@h/mcp": EOF`, `Post "http://[redacted]@h/mcp": EOF`, []string{"tok%2Fen-x", "tok/en-x"}},
		{"a secret cut off where detail stops reading, after blanks", Target{URL: "http://h/mcp", Headers: map[string]string{"Authorization": "Bearer s3cr3t-marker"}},
			strings.Repeat(" ", detailWindow-10) + "Bearer s3cr3t-marker, and more", "…", []string{"Bearer", "s3c"}},
		{"a long text, shortened", Target{URL: "http://h/mcp"},
			strings.Repeat("word ", 2*detailWindow), strings.Repeat("word ", maxDetail/5) + "…", nil},
		{"short values are words, not secrets", Target{URL: "http://h/mcp?v=2"},
			"version 2 of v=2", "version 2 of v=2", nil},
		{"a bearer token no target knows, echoed", Target{URL: "http://h/mcp"},
			"rejected Authorization: Bearer tok-abcdefghijklmnop0123", "rejected Authorization: Bearer [redacted]", []string{"tok-abcdefghijklmnop0123"}},
		{"a JWT, echoed", Target{URL: "http://h/mcp"},
			"subject eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl expired", "subject [redacted] expired", []string{"eyJzdWIiOiJhbGljZSJ9"}},
		{"the words bearer token are words", Target{URL: "http://h/mcp"},
			"a bearer token is required", "a bearer token is required", nil},
		{"a URL that does not parse", Target{URL: "http://h/%zz"},
			"text as it was", "text as it was", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := detail(tt.text, tt.target)
			if got != tt.want {
				t.Errorf("detail(%.300q) = %q, want %q", tt.text, got, tt.want)
			}
			for _, secret := range tt.secrets {
				if strings.Contains(got, secret) {
					t.Errorf("%q shows %q", got, secret)
				}
			}
		})
	}
}

// TestAFailedCallShowsNoKeyOfTheURL: a call that fails in net/http, whose
// error names the URL in full, is reported without the key its query
// holds.
func TestAFailedCallShowsNoKeyOfTheURL(t *testing.T) {
	g := startGoSDK(t, testmcp.GoSDKOnly2026)
	s := connectT(t, Target{URL: g.URL() + "?key=s3cr3t-marker"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.CallTool(ctx, "echo", []byte(`{"m":"hi"}`), CallOptions{})
	if err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t-marker") || !strings.Contains(err.Error(), "/mcp?[redacted]") {
		t.Errorf("the error shows the URL's key, or does not name the URL it redacted: %v", err)
	}
}

// TestARefusedRevisionsListIsShortAndShowsNoSecret: the revisions a
// server says it supports, and the one it says was requested, are its own
// text: shortened and redacted as the rest of its answer is, however many
// it names.
func TestARefusedRevisionsListIsShortAndShowsNoSecret(t *testing.T) {
	supported := append(slices.Repeat([]string{"2027-03-01"}, 10000), "Bearer s3cr3t-marker")
	err := rpcError(&mcp.JSONRPCErrorDetails{Code: codeUnsupportedVersion, Message: "unsupported protocol version",
		Data: map[string]any{"supported": supported, "requested": "Bearer s3cr3t-marker"}},
		Target{URL: "http://h/mcp", Headers: map[string]string{"Authorization": "Bearer s3cr3t-marker"}}, "calling")
	if err.Kind != ErrUnsupportedVersion || !strings.Contains(err.Message, "it named 2027-03-01, 2027-03-01") {
		t.Fatalf("got %s %q, want UnsupportedProtocolVersion naming 2027-03-01", err.Kind, err.Message)
	}
	if len(err.Message) > 1000 || strings.Contains(err.Message, "s3cr3t-marker") {
		t.Errorf("the message is %d bytes, or shows the token: %.300s…", len(err.Message), err.Message)
	}
}

// TestNamedTellsNoAddress: a failure told to a caller of the server's
// tools names the server as the caller knows it, never where it runs (its
// host, the addresses the library dialled), and is the same failure: same
// kind and code, wrapping the message that names the URL, which is kept
// for the server's operators.
func TestNamedTellsNoAddress(t *testing.T) {
	const name = "MCPServer team/tools"
	target := Target{URL: "http://tools.team.svc:8080/mcp"}
	for _, tt := range []struct {
		name string
		// fail returns the failure and the address its Message shows.
		fail func(t *testing.T) (*Error, string)
		kind ErrorKind
		says string
	}{
		{"a refused connection", func(t *testing.T) (*Error, string) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			_ = ln.Close()
			_, err = Connect(context.Background(), Target{URL: "http://" + addr + "/mcp", Timeout: 5 * time.Second}, nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			return e, addr
		}, ErrUnreachable, name + " refused the connection"},
		{"an HTTP error whose body names the URL", func(t *testing.T) (*Error, string) {
			var front string
			front = answeringCalls(t, startGoSDK(t, testmcp.GoSDKOnly2026).URL(), func(w http.ResponseWriter, _ string) {
				http.Error(w, "no backend behind "+front, http.StatusBadGateway)
			}, nil)
			s := connectT(t, Target{URL: front}, nil)
			_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			u, _ := url.Parse(front)
			return e, u.Host
		}, ErrHTTPStatus, name + " answered HTTP 502 Bad Gateway: no backend behind " + name},
		{"what the library said, naming the address it dialled", func(*testing.T) (*Error, string) {
			return classify(fmt.Errorf("dial tcp 10.96.7.8:8080: %w", errors.New("no route")), target, "calling tool echo", nil), "10.96.7.8"
		}, ErrProtocol, "calling tool echo: " + name + " failed"},
		{"an HTTP error whose body names the host and a proxy's view of the network", func(t *testing.T) (*Error, string) {
			var front string
			front = answeringCalls(t, startGoSDK(t, testmcp.GoSDKOnly2026).URL(), func(w http.ResponseWriter, _ string) {
				u, _ := url.Parse(front)
				http.Error(w, "upstream connect error to 10.1.2.3:9000 for host "+u.Hostname(), http.StatusBadGateway)
			}, nil)
			s := connectT(t, Target{URL: front}, nil)
			_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			return e, "10.1.2.3"
		}, ErrHTTPStatus, "upstream connect error to an address for host " + name},
		{"a JSON-RPC error", func(*testing.T) (*Error, string) {
			return rpcError(&mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: "the backend is down"}, target, "calling tool echo"), "tools.team.svc"
		}, ErrProtocol, "calling tool echo: " + name + " answered with JSON-RPC error -32603: the backend is down"},
		{"an error made where the URL is not known", func(*testing.T) (*Error, string) {
			return &Error{Kind: ErrTimeout, Message: "http://tools.team.svc:8080/mcp: the call ended"}, "tools.team.svc"
		}, ErrTimeout, name + " failed (Timeout)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, address := tt.fail(t)
			if !strings.Contains(e.Message, address) {
				t.Fatalf("the failure's own message %q does not show %s: the case proves nothing", e.Message, address)
			}
			told := e.Named(name)
			if strings.Contains(told.Message, address) || !strings.Contains(told.Message, tt.says) {
				t.Errorf("told %q, want it to say %q and not show %s", told.Message, tt.says, address)
			}
			if told.Kind != tt.kind || e.Kind != tt.kind || told.RPCCode != e.RPCCode {
				t.Errorf("told as %s (code %d), failed as %s (code %d), want %s both", told.Kind, told.RPCCode, e.Kind, e.RPCCode, tt.kind)
			}
			if !errors.Is(told, e) || !strings.Contains(e.Message, address) {
				t.Errorf("what was told does not wrap the whole failure, or changed it: %q", e.Message)
			}
			if code, message, ok := RPCErrorOf(e); ok && (strings.Contains(message, address) || code != e.RPCCode) {
				t.Errorf("RPCErrorOf says %d %q, showing %s", code, message, address)
			}
		})
	}
}
