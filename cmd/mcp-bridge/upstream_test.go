package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// sentMessage is a message the bridge wrote to the server's stdin.
type sentMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		RequestID json.RawMessage `json:"requestId"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

var stderrLine = regexp.MustCompile(`msg="MCP server stderr" pid=\d+ line=("(?:[^"\\]|\\.)*")`)

// sent reads what the bridge wrote to a server run under tee.sh, which
// copies its stdin to stderr, which the bridge logs.
func sent(t *testing.T, b *bridgeProc) []sentMessage {
	t.Helper()
	var out []sentMessage
	for _, m := range stderrLine.FindAllStringSubmatch(b.log.String(), -1) {
		line, err := strconv.Unquote(m[1])
		if err != nil {
			t.Fatalf("reading the log line %s: %v", m[1], err)
		}
		var msg sentMessage
		if json.Unmarshal([]byte(line), &msg) == nil && msg.Method != "" {
			out = append(out, msg)
		}
	}
	return out
}

func sentWith(t *testing.T, b *bridgeProc, method string) []sentMessage {
	var out []sentMessage
	for _, m := range sent(t, b) {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// The server sees one session, the bridge's, whatever the clients do: one
// initialize and one notifications/initialized, requests under the
// bridge's ids with progress tokens made unique, and cancellations that
// name the bridge's ids.
func TestTheServerSeesOneSession(t *testing.T) {
	command := append([]string{script("tee.sh")}, everythingCommand(t)...)
	b := startBridge(t, nil, nil, command...)
	a, aNotes := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	c, _ := connect(t, b, sse, "2024-11-05")
	ctx := timeout(t)

	// Both clients' long calls carry the same progress token.
	aCtx, cancelA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "trigger-long-running-operation"
		req.Params.Arguments = map[string]any{"duration": 600, "steps": 600}
		req.Params.Meta = &mcp.Meta{ProgressToken: "same"}
		_, err := a.CallTool(aCtx, req)
		aDone <- err
	}()
	cDone := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("c-long"), Method: "tools/call",
			Params: map[string]any{"name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 600, "steps": 600}, "_meta": map[string]any{"progressToken": "same"}}})
		if err != nil {
			t.Errorf("c's long call: %v", err)
		}
		cDone <- resp
	}()
	var calls []sentMessage
	eventually(t, time.Minute, "both calls to reach the server", func() bool {
		calls = sentWith(t, b, "tools/call")
		return len(calls) == 2
	})
	for _, call := range calls {
		token := call.Params.Meta.ProgressToken
		if _, err := strconv.ParseInt(string(call.ID), 10, 64); err != nil || string(token) != string(call.ID) {
			t.Errorf("the server got id %s and progress token %s; want the bridge's number id as both", call.ID, token)
		}
	}
	if string(calls[0].ID) == string(calls[1].ID) {
		t.Errorf("both calls reached the server as id %s", calls[0].ID)
	}
	if n := len(sentWith(t, b, "initialize")) + len(sentWith(t, b, "notifications/initialized")); n != 2 {
		t.Errorf("the server got %d initialize messages; want the bridge's one initialize and one initialized", n)
	}

	// a gives up (its HTTP request ends); c cancels explicitly.
	aNotes.waitFor(t, string(mcp.MethodNotificationProgress))
	cancelA()
	if err := <-aDone; err == nil {
		t.Error("a's cancelled call succeeded")
	}
	if err := c.GetTransport().SendNotification(ctx, mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{
		Method: "notifications/cancelled", Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": "c-long", "reason": "changed my mind"}}}}); err != nil {
		t.Fatal(err)
	}
	if resp := <-cDone; resp == nil || resp.Error == nil || !strings.Contains(resp.Error.Message, "cancelled by the client") {
		t.Errorf("c's cancelled call was answered %+v", resp)
	}
	eventually(t, time.Minute, "both cancellations to reach the server", func() bool {
		return len(sentWith(t, b, "notifications/cancelled")) == 2
	})
	cancelled := map[string]bool{}
	for _, m := range sentWith(t, b, "notifications/cancelled") {
		cancelled[string(m.Params.RequestID)] = true
	}
	for _, call := range calls {
		if !cancelled[string(call.ID)] {
			t.Errorf("the server was not told to cancel request %s; it was told %v", call.ID, cancelled)
		}
	}
}

// Requests from the server to "the client" that the bridge does not relay:
// ping is answered by the bridge, roots/list refused (the bridge declares no
// roots), and sampling refused for a client that did not declare it, each
// with a message that says why.
func TestRequestsFromTheServerAreAnsweredByTheBridge(t *testing.T) {
	b := startBridge(t, nil, nil, askerCommand(t))
	c, _ := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	text, err := callText(timeout(t), c, "ask", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var answers map[string]struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(text), &answers); err != nil {
		t.Fatalf("the server's answer %q: %v", text, err)
	}
	if ping := answers["ping"]; string(ping.Result) != "{}" || ping.Error != nil {
		t.Errorf("ping was answered %+v", ping)
	}
	for method, want := range map[string]struct {
		code int
		text string
	}{
		"roots/list":             {-32601, "mcp-bridge: the bridge declared no roots capability: the MCP server's one session is shared by every client, and roots belong to one client"},
		"sampling/createMessage": {-32016, "mcp-bridge: the client of this call did not declare the sampling capability"},
	} {
		e := answers[method].Error
		if e == nil || e.Code != want.code || e.Message != want.text {
			t.Errorf("%s was answered %+v; want %d %q", method, answers[method], want.code, want.text)
		}
	}
	b.waitLog(`msg="Refused a request from the MCP server" method=roots/list`)
}

// askerCommand builds testdata/asker, a stdio server whose tools send
// requests to the client.
func askerCommand(t *testing.T) string {
	t.Helper()
	asker := filepath.Join(t.TempDir(), "asker")
	if err := goBuild(asker, "./testdata/asker", nil); err != nil {
		t.Fatal(err)
	}
	return asker
}
