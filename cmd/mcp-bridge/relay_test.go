package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// The server's requests to "the client" (elicitation, sampling) reach the
// client of the one call that asked, through go-sdk's client.

// connectSDK opens a go-sdk client session through the bridge: Streamable
// HTTP at 2025-11-25, or HTTP+SSE at 2024-11-05. opts carries its handlers,
// which declare the capabilities.
func connectSDK(t *testing.T, b *bridgeProc, kind clientKind, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	var tr sdk.Transport = &sdk.StreamableClientTransport{Endpoint: b.url("/mcp")}
	revision := "2025-11-25"
	if kind == sse {
		tr, revision = &sdk.SSEClientTransport{Endpoint: b.url("/sse")}, "2024-11-05"
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "bridge-relay-test", Version: "1"}, opts)
	cs, err := c.Connect(timeout(t), tr, &sdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connecting go-sdk's %s client: %v", kind, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callSDK calls a tool and returns its text content, joined, and whether it
// is an error result.
func callSDK(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	if args == nil {
		args = map[string]any{} // server-everything refuses null arguments
	}
	res, err := cs.CallTool(timeout(t), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	var texts []string
	for _, c := range res.Content {
		if text, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, text.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}

// asked records the requests a client's handlers received.
type asked struct {
	mu          sync.Mutex
	elicitation []*sdk.ElicitParams
	//nolint:staticcheck // sampling, deprecated in 2026-07-28, is what is relayed
	sampling []*sdk.CreateMessageParams
}

func (a *asked) counts() (int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.elicitation), len(a.sampling)
}

// answering is a client that answers every elicitation with a name and a
// number, and every sampling request with "forty-two".
func (a *asked) answering() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			a.mu.Lock()
			a.elicitation = append(a.elicitation, req.Params)
			a.mu.Unlock()
			if req.Params.Mode == "url" {
				return &sdk.ElicitResult{Action: "accept"}, nil
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "integer": 7}}, nil
		},
		//nolint:staticcheck // sampling, deprecated in 2026-07-28, is what is relayed
		CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			a.mu.Lock()
			a.sampling = append(a.sampling, req.Params)
			a.mu.Unlock()
			//nolint:staticcheck // sampling, deprecated in 2026-07-28, is what is relayed
			return &sdk.CreateMessageResult{Model: "bridge-test-model", Role: "assistant", Content: &sdk.TextContent{Text: "forty-two"}}, nil
		},
	}
}

// server-everything's trigger-elicitation-request and
// trigger-sampling-request ask the caller; over both transports the
// caller's handler gets the server's request as the server wrote it, and
// the tool's result holds what the handler answered.
func TestElicitationAndSamplingReachTheCallsClient(t *testing.T) {
	b := startBridge(t, nil, nil, everythingCommand(t)...)
	for _, kind := range []clientKind{streamable, sse} {
		t.Run(string(kind), func(t *testing.T) {
			var got asked
			cs := connectSDK(t, b, kind, got.answering())

			text, isError := callSDK(t, cs, "trigger-elicitation-request", nil)
			if isError || !strings.Contains(text, "- Name: Ada Lovelace") || !strings.Contains(text, "- Favorite Integer: 7") {
				t.Errorf("trigger-elicitation-request answered (error %v) %q; want the handler's name and number", isError, text)
			}
			if n, _ := got.counts(); n != 1 {
				t.Fatalf("the elicitation handler ran %d times, want once", n)
			}
			e := got.elicitation[0]
			schema, _ := e.RequestedSchema.(map[string]any)
			properties, _ := schema["properties"].(map[string]any)
			pet, _ := properties["legacyTitledEnum"].(map[string]any)
			if e.Message != "Please provide inputs for the following fields:" || len(properties) != 13 ||
				!reflect.DeepEqual(pet["enumNames"], []any{"Cats", "Dogs", "Birds", "Fish", "Reptiles"}) {
				t.Errorf("the handler got message %q and schema %v; want server-everything's 13 fields, legacy enumNames kept", e.Message, schema)
			}

			text, isError = callSDK(t, cs, "trigger-sampling-request", map[string]any{"prompt": "what is six times seven?", "maxTokens": 25})
			if isError || !strings.Contains(text, "forty-two") || !strings.Contains(text, "bridge-test-model") {
				t.Errorf("trigger-sampling-request answered (error %v) %q; want the handler's message and model", isError, text)
			}
			if _, n := got.counts(); n != 1 {
				t.Fatalf("the sampling handler ran %d times, want once", n)
			}
			s := got.sampling[0]
			content, _ := s.Messages[0].Content.(*sdk.TextContent)
			if content == nil || content.Text != "Resource trigger-sampling-request context: what is six times seven?" ||
				s.MaxTokens != 25 || s.SystemPrompt != "You are a helpful test server." {
				t.Errorf("the sampling handler got %+v (first message %+v)", s, s.Messages[0].Content)
			}
		})
	}
}

// URL-mode elicitation goes only to a client that declared elicitation.url;
// one that declared form mode only gets the refusal in the tool's result.
func TestURLElicitationNeedsItsMode(t *testing.T) {
	b := startBridge(t, nil, nil, everythingCommand(t)...)
	args := map[string]any{"url": "https://example.com/consent", "elicitationId": "consent-1"}

	var both asked
	opts := both.answering()
	opts.Capabilities = &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}}
	text, isError := callSDK(t, connectSDK(t, b, streamable, opts), "trigger-url-elicitation", args)
	if isError || !strings.Contains(text, "User completed the URL elicitation flow") {
		t.Errorf("with elicitation.url declared, trigger-url-elicitation answered (error %v) %q", isError, text)
	}
	if n, _ := both.counts(); n != 1 || both.elicitation[0].Mode != "url" || both.elicitation[0].URL != "https://example.com/consent" {
		t.Errorf("the handler got %+v; want the URL", both.elicitation)
	}

	var formOnly asked
	text, isError = callSDK(t, connectSDK(t, b, streamable, formOnly.answering()), "trigger-url-elicitation", args)
	if want := "mcp-bridge: the client of this call did not declare URL-mode elicitation (elicitation.url)"; !isError || !strings.Contains(text, want) {
		t.Errorf("with form mode only, trigger-url-elicitation answered (error %v) %q; want %q", isError, text, want)
	}
	if n, _ := formOnly.counts(); n != 0 {
		t.Errorf("the form-only client was asked %d times", n)
	}
}

// A client that declared neither capability is not asked: the tool's
// result says why, at once.
func TestAClientWithoutTheCapabilityIsNotAsked(t *testing.T) {
	b := startBridge(t, nil, nil, everythingCommand(t)...)
	c, _ := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"trigger-sampling-request", map[string]any{"prompt": "hello"}, "mcp-bridge: the client of this call did not declare the sampling capability"},
		{"trigger-elicitation-request", map[string]any{}, "mcp-bridge: the client of this call did not declare form-mode elicitation"},
	} {
		text, err := callText(timeout(t), c, tt.tool, tt.args)
		if err == nil || !strings.Contains(text, tt.want) {
			t.Errorf("%s answered %q (%v); want an error result with %q", tt.tool, text, err, tt.want)
		}
	}
}

// While another client's call is in flight, a request from the server could
// belong to either call: it is refused with the count, and no client is
// asked.
func TestSeveralAskingCallsAreRefusedWithTheCount(t *testing.T) {
	b := startBridge(t, nil, nil, everythingCommand(t)...)
	long, longNotes := connect(t, b, streamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	longCtx, endLong := context.WithCancel(timeout(t))
	defer endLong()
	longDone := make(chan struct{})
	go func() {
		defer close(longDone)
		var req mcp.CallToolRequest
		req.Params.Name = "trigger-long-running-operation"
		req.Params.Arguments = map[string]any{"duration": 600, "steps": 600}
		req.Params.Meta = &mcp.Meta{ProgressToken: "long"}
		_, _ = long.CallTool(longCtx, req)
	}()
	longNotes.waitFor(t, string(mcp.MethodNotificationProgress)) // the server has the long call

	var got asked
	text, isError := callSDK(t, connectSDK(t, b, streamable, got.answering()), "trigger-sampling-request", map[string]any{"prompt": "hello"})
	want := "mcp-bridge: 2 calls that may ask the client (tools/call, prompts/get, resources/read, completion/complete) are in flight; stdio gives no way to tell which one asked"
	if !isError || !strings.Contains(text, want) {
		t.Errorf("trigger-sampling-request answered (error %v) %q; want %q", isError, text, want)
	}
	if _, n := got.counts(); n != 0 {
		t.Errorf("the sampling handler ran %d times", n)
	}
	endLong()
	<-longDone
}

// A relayed request the client does not answer ends with its call, at the
// call's timeout: the caller gets the timeout, the server an error for its
// request, and the bridge serves on.
func TestARelayedRequestEndsWithItsCall(t *testing.T) {
	b := startBridge(t, nil, []string{"--debug", "--request-timeout", "3s"}, everythingCommand(t)...)
	handlerAsked := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	cs := connectSDK(t, b, streamable, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			handlerAsked <- struct{}{}
			select { // a person who never answers
			case <-ctx.Done():
			case <-release:
			}
			return nil, fmt.Errorf("no answer")
		},
	})
	_, err := cs.CallTool(timeout(t), &sdk.CallToolParams{Name: "trigger-elicitation-request", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "the MCP server did not answer within 3s") {
		t.Errorf("the call ended with %v; want the bridge's timeout", err)
	}
	select {
	case <-handlerAsked:
	default:
		t.Error("the client was never asked")
	}
	b.waitLog(`msg="Ended a relayed request with its call" id=bridge-relay-1 reason="the tools/call request it was relayed for ended before its client answered: it failed: mcp-bridge: the MCP server did not answer within 3s`)
	if text, isError := callSDK(t, cs, "echo", map[string]any{"message": "still here"}); isError || text != "Echo: still here" {
		t.Errorf("echo after the timeout: %q (error %v)", text, isError)
	}
}

// sseEvents reads a response's event stream, handing each event's data to
// the channel it returns, which closes when the stream ends.
func sseEvents(resp *http.Response) <-chan []byte {
	events := make(chan []byte, 16)
	go func() {
		defer close(events)
		_ = wire.ReadEvents(resp.Body, 64*1024, func(data []byte) bool {
			events <- append([]byte(nil), data...)
			return false
		})
	}()
	return events
}

func nextEvent(t *testing.T, events <-chan []byte) []byte {
	t.Helper()
	select {
	case data, ok := <-events:
		if !ok {
			t.Fatal("the event stream ended early")
		}
		return data
	case <-time.After(time.Minute):
		t.Fatal("timed out waiting for an event")
	}
	return nil
}

// startCall POSTs a tools/call on a raw Streamable HTTP session with the
// given Accept header and returns the response, open.
func startCall(t *testing.T, b *bridgeProc, sid, accept, tool string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(timeout(t))
	t.Cleanup(cancel)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url("/mcp"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// rawSessionWith initializes a raw session that declares capabilities.
func rawSessionWith(t *testing.T, b *bridgeProc, capabilities string) string {
	t.Helper()
	resp, body := rawPost(t, b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+capabilities+
		`,"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return id
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// On the wire: the call's answer becomes an event stream carrying the
// server's request under an id of the bridge's, its params byte for byte;
// only the session asked may answer it (any other answer is 400, never
// 404), and its answer reaches the server.
func TestRelayedRequestsOnTheWire(t *testing.T) {
	b := startBridge(t, nil, nil, everythingCommand(t)...)
	asker := rawSessionWith(t, b, `{"elicitation":{}}`)
	other := rawSessionWith(t, b, `{"elicitation":{}}`)

	resp := startCall(t, b, asker, "application/json, text/event-stream", "trigger-elicitation-request")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the call was answered %d %s; want an event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := sseEvents(resp)
	var request rpcMessage
	if err := json.Unmarshal(nextEvent(t, events), &request); err != nil {
		t.Fatal(err)
	}
	var id string
	_ = json.Unmarshal(request.ID, &id)
	// JSON.stringify's order and bytes, as server-everything wrote them.
	const head = `{"message":"Please provide inputs for the following fields:","requestedSchema":{"type":"object","properties":{"name":{"title":"String","type":"string","description":"Your full, legal name"},`
	if request.Method != "elicitation/create" || !strings.HasPrefix(id, "bridge-relay-") || !strings.HasPrefix(string(request.Params), head) ||
		!strings.Contains(string(request.Params), `"enumNames":["Cats","Dogs","Birds","Fish","Reptiles"]`) {
		t.Fatalf("the stream's first event is %s %s %s", request.Method, request.ID, request.Params)
	}

	answer := func(sid, id, result string) (int, string) {
		resp, body := rawPost(t, b, `{"jsonrpc":"2.0","id":`+id+`,"result":`+result+`}`, map[string]string{"Mcp-Session-Id": sid})
		return resp.StatusCode, body
	}
	for _, tt := range []struct{ name, sid, id string }{
		{"another session's answer", other, string(request.ID)},
		{"an unknown id", asker, `"bridge-relay-999999"`},
		{"a number id", asker, `7`},
	} {
		status, body := answer(tt.sid, tt.id, `{"action":"decline"}`)
		var e struct {
			Error struct{ Code int }
		}
		if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != -32600 ||
			!strings.Contains(body, "no request relayed to this session waits for an answer with id") {
			t.Errorf("%s: %d %s; want 400 with a JSON-RPC error", tt.name, status, body)
		}
	}
	if status, body := answer(asker, string(request.ID), `{"action":"accept","content":{"name":"Ada"}}`); status != http.StatusAccepted {
		t.Fatalf("the asked session's answer: %d %s", status, body)
	}
	var result rpcMessage
	if err := json.Unmarshal(nextEvent(t, events), &result); err != nil {
		t.Fatal(err)
	}
	if string(result.ID) != "2" || !strings.Contains(string(result.Result), `- Name: Ada`) {
		t.Errorf("the call was answered %s %s; want the tool's result with the answer", result.ID, result.Result)
	}
	if status, _ := answer(asker, string(request.ID), `{"action":"accept","content":{"name":"Ada"}}`); status != http.StatusBadRequest {
		t.Errorf("a second answer: %d, want 400", status)
	}

	// A client whose Accept allows no event stream cannot be asked during
	// the call: JSON, and the refusal in the tool's result.
	resp = startCall(t, b, asker, "application/json", "trigger-elicitation-request")
	var refused struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&refused); err != nil || resp.Header.Get("Content-Type") != "application/json" ||
		!refused.Result.IsError || len(refused.Result.Content) == 0 ||
		!strings.Contains(refused.Result.Content[0].Text, "the client of this call does not accept an event stream (its Accept header)") {
		t.Errorf("with Accept: application/json the call was answered %+v (%v)", refused, err)
	}
}

// The server cancels a request it relayed: the client is told under the
// bridge's id, with the server's reason, and the request no longer takes
// an answer.
func TestTheServersCancellationReachesTheClient(t *testing.T) {
	b := startBridge(t, nil, nil, askerCommand(t))
	sid := rawSessionWith(t, b, `{"sampling":{}}`)
	events := sseEvents(startCall(t, b, sid, "application/json, text/event-stream", "ask-then-cancel"))
	var request, cancel struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		} `json:"params"`
	}
	if err := json.Unmarshal(nextEvent(t, events), &request); err != nil || request.Method != "sampling/createMessage" {
		t.Fatalf("the first event: %+v %v", request, err)
	}
	if err := json.Unmarshal(nextEvent(t, events), &cancel); err != nil || cancel.Method != "notifications/cancelled" ||
		string(cancel.Params.RequestID) != string(request.ID) || cancel.Params.Reason != "changed my mind" {
		t.Fatalf("the second event: %+v %v; want the cancellation of %s", cancel, err, request.ID)
	}
	resp, body := rawPost(t, b, `{"jsonrpc":"2.0","id":`+string(request.ID)+`,"result":{}}`, map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an answer to the cancelled request: %d %s; want 400", resp.StatusCode, body)
	}
}
