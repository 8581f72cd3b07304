package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// rawPost sends one JSON-RPC message to /mcp with the given headers.
func rawPost(t *testing.T, b *bridgeProc, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url("/mcp"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func initializeBody(revision string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + revision +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
}

const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// rawSession initializes a session and returns its id.
func rawSession(t *testing.T, b *bridgeProc) string {
	t.Helper()
	resp, body := rawPost(t, b, initializeBody("2025-11-25"), nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s (session %q)", resp.StatusCode, body, id)
	}
	return id
}

// Each client gets the revision it asks for, down to 2024-11-05, and the
// server's own (2025-11-25) for anything the bridge does not speak.
func TestEachClientNegotiatesItsRevision(t *testing.T) {
	b := startBridge(t, nil, nil, demoCommand()...)
	tests := []struct{ asked, want string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2026-07-28", "2025-11-25"},
		{"2099-01-01", "2025-11-25"},
	}
	for _, tt := range tests {
		resp, body := rawPost(t, b, initializeBody(tt.asked), nil)
		var answer struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
				ServerInfo      struct{ Name string }
			}
		}
		if err := json.Unmarshal([]byte(body), &answer); err != nil || resp.StatusCode != http.StatusOK ||
			answer.Result.ProtocolVersion != tt.want || answer.Result.ServerInfo.Name != "demo-tools" {
			t.Errorf("asking for %s: %d %s; want %s from demo-tools", tt.asked, resp.StatusCode, body, tt.want)
		}
	}
	// mcp-go's default, without the listening stream: it probes
	// server/discover without a session, is refused with 400, and falls
	// back to initialize.
	c, err := client.NewStreamableHttpClient(b.url("/mcp"), transport.WithHTTPLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := timeout(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.Initialize(ctx, mcp.InitializeRequest{})
	if err != nil || res.ProtocolVersion != "2025-11-25" {
		t.Fatalf("mcp-go's default negotiation: %v %v", res, err)
	}
}

// The rules of Streamable HTTP sessions (2025-11-25).
func TestStreamableHTTPSessionRules(t *testing.T) {
	b := startBridge(t, nil, []string{"--max-request-body", "1024"}, demoCommand()...)
	sid := rawSession(t, b)
	session := map[string]string{"Mcp-Session-Id": sid}
	tests := []struct {
		name   string
		body   string
		header map[string]string
		status int
		has    string
	}{
		{"a session's request", listBody, session, 200, `"name":"convert_units"`},
		{"no session header", listBody, nil, 400, "Mcp-Session-Id header is required"},
		{"an unknown session", listBody, map[string]string{"Mcp-Session-Id": "nope"}, 404, "initialize again"},
		{"a known protocol version header", listBody, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}, 200, `"tools"`},
		{"an unknown protocol version header", listBody, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2099-01-01"}, 400, "unsupported MCP-Protocol-Version"},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session, 202, ""},
		{"a foreign origin", listBody, map[string]string{"Mcp-Session-Id": sid, "Origin": "http://evil.example"}, 403, "not allowed"},
		{"the bridge's own origin", listBody, map[string]string{"Mcp-Session-Id": sid, "Origin": "http://" + b.addr}, 200, `"tools"`},
		{"a batch", "[" + listBody + "]", session, 400, "batches are not supported"},
		{"not JSON", "hello", session, 400, "not a JSON-RPC message"},
		{"a body over --max-request-body", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"text_stats","arguments":{"text":"` + strings.Repeat("a", 2000) + `"}}}`, session, 413, "larger than 1024 bytes"},
		{"another content type", listBody, map[string]string{"Mcp-Session-Id": sid, "Content-Type": "text/plain"}, 415, "application/json"},
		{"ping", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, session, 200, `"result":{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawPost(t, b, tt.body, tt.header)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.has) {
				t.Errorf("%d %s; want %d with %q", resp.StatusCode, body, tt.status, tt.has)
			}
		})
	}

	t.Run("one listening stream per session", func(t *testing.T) {
		get := func(accept string) *http.Response {
			req, _ := http.NewRequest(http.MethodGet, b.url("/mcp"), nil)
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Accept", accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		if resp := get("application/json"); resp.StatusCode != http.StatusNotAcceptable {
			t.Errorf("GET without text/event-stream: %d", resp.StatusCode)
		}
		first := get("text/event-stream")
		defer first.Body.Close()
		if first.StatusCode != http.StatusOK || first.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET: %d %s", first.StatusCode, first.Header.Get("Content-Type"))
		}
		second := get("text/event-stream")
		second.Body.Close()
		if second.StatusCode != http.StatusConflict {
			t.Errorf("a second GET: %d", second.StatusCode)
		}
	})

	t.Run("DELETE ends the session", func(t *testing.T) {
		del := func() int {
			req, _ := http.NewRequest(http.MethodDelete, b.url("/mcp"), nil)
			req.Header.Set("Mcp-Session-Id", sid)
			resp, _ := do(t, req)
			return resp.StatusCode
		}
		if status := del(); status != http.StatusOK {
			t.Fatalf("DELETE: %d", status)
		}
		if resp, body := rawPost(t, b, listBody, session); resp.StatusCode != http.StatusNotFound {
			t.Errorf("a request after DELETE: %d %s", resp.StatusCode, body)
		}
		if status := del(); status != http.StatusNotFound {
			t.Errorf("a second DELETE: %d", status)
		}
	})
}

// The legacy transport: the stream names a relative endpoint, and messages
// without a known session are refused.
func TestLegacySSEEndpoint(t *testing.T) {
	b := startBridge(t, nil, nil, demoCommand()...)
	ctx, cancel := context.WithCancel(timeout(t))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url("/sse"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	event, _ := lines.ReadString('\n')
	data, _ := lines.ReadString('\n')
	if event != "event: endpoint\n" || !strings.HasPrefix(data, "data: message?sessionId=") {
		t.Fatalf("the stream began with %q %q", event, data)
	}
	for _, tt := range []struct {
		query  string
		status int
	}{{"", 400}, {"?sessionId=nope", 404}} {
		r, body := do(t, mustRequest(t, http.MethodPost, b.url("/message"+tt.query), listBody))
		if r.StatusCode != tt.status {
			t.Errorf("POST /message%s: %d %s", tt.query, r.StatusCode, body)
		}
	}
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Sessions are bounded: at most --max-sessions at once.
func TestSessionsAreBoundedInNumber(t *testing.T) {
	b := startBridge(t, nil, []string{"--max-sessions", "2"}, demoCommand()...)
	first := rawSession(t, b)
	rawSession(t, b)
	if resp, body := rawPost(t, b, initializeBody("2025-11-25"), nil); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "2 sessions") {
		t.Errorf("a third session: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, b.url("/mcp"), nil)
	req.Header.Set("Mcp-Session-Id", first)
	if resp, _ := do(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	rawSession(t, b) // room again
}

// A session idle for --session-idle ends; one with an open stream is not
// idle. The limit leaves the listening session time to open its stream
// on a busy machine before the sweeper could take it.
func TestIdleSessionsEnd(t *testing.T) {
	b := startBridge(t, nil, []string{"--debug", "--session-idle", "2s"}, demoCommand()...)
	listening := rawSession(t, b)
	ctx, cancel := context.WithCancel(timeout(t))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url("/mcp"), nil)
	req.Header.Set("Mcp-Session-Id", listening)
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", stream, err)
	}
	defer stream.Body.Close()

	idle := rawSession(t, b)
	b.waitLog(`msg="Ending an idle session" session=` + idle[:6])
	if resp, body := rawPost(t, b, listBody, map[string]string{"Mcp-Session-Id": idle}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the idle session: %d %s", resp.StatusCode, body)
	}
	// It was opened after the listening one, so that one has been idle for
	// longer, but its stream keeps it.
	if resp, body := rawPost(t, b, listBody, map[string]string{"Mcp-Session-Id": listening}); resp.StatusCode != http.StatusOK {
		t.Errorf("the listening session: %d %s", resp.StatusCode, body)
	}
}
