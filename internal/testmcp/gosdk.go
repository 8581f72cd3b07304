package testmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// GoSDKMode is how a GoSDK server speaks.
type GoSDKMode string

const (
	// GoSDKSessions is go-sdk's default Streamable HTTP server: sessions,
	// revisions 2024-11-05 to 2025-11-25.
	GoSDKSessions GoSDKMode = "sessions"
	// GoSDKStateless serves 2026-07-28 and older revisions without
	// sessions; the listening GET is answered 405.
	GoSDKStateless GoSDKMode = "stateless"
	// GoSDKOnly2026 speaks only 2026-07-28.
	GoSDKOnly2026 GoSDKMode = "only-2026-07-28"
	// GoSDKLegacySSE is the 2024-11-05 HTTP+SSE transport.
	GoSDKLegacySSE GoSDKMode = "legacy-sse"
)

// GoSDKOptions tune a GoSDK server.
type GoSDKOptions struct {
	// Revisions, when set, are the only MCP revisions it speaks.
	Revisions []string
	// TTL is the ttlMs it puts on its list results (2026-07-28).
	TTL time.Duration
	// Subscriptions, when set, makes it offer resource subscriptions
	// (resources.subscribe) and is told of each resources/subscribe and
	// resources/unsubscribe it is sent, as "method uri".
	Subscriptions func(string)
}

// GoSDK is a real MCP server built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), on 127.0.0.1: an
// implementation of the other side that nobody here wrote. It keeps tool
// schemas as the raw JSON it is given, and records the methods and
// headers of what it is sent.
type GoSDK struct {
	Server *sdk.Server
	http   *httptest.Server
	path   string

	mu       sync.Mutex
	requests []Request
	// Cancelled counts calls of the "wait" tool that ended because their
	// caller went away (see AddWaitTool).
	Cancelled atomic.Int64
}

// Request is one HTTP request a GoSDK server got.
type Request struct {
	HTTPMethod string
	// Method is the JSON-RPC method of a POST.
	Method string
	Header http.Header
}

// StartGoSDK starts a go-sdk server in a mode; it is stopped when the test
// calls Stop.
func StartGoSDK(mode GoSDKMode, opts ...GoSDKOptions) *GoSDK {
	var o GoSDKOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	serverOpts := &sdk.ServerOptions{SupportedProtocolVersions: o.Revisions}
	if mode == GoSDKOnly2026 {
		serverOpts.SupportedProtocolVersions = []string{"2026-07-28"}
	}
	if o.Subscriptions != nil {
		serverOpts.SubscribeHandler = func(_ context.Context, r *sdk.SubscribeRequest) error {
			o.Subscriptions("resources/subscribe " + r.Params.URI)
			return nil
		}
		serverOpts.UnsubscribeHandler = func(_ context.Context, r *sdk.UnsubscribeRequest) error {
			o.Subscriptions("resources/unsubscribe " + r.Params.URI)
			return nil
		}
	}
	if o.TTL > 0 {
		serverOpts.SetCacheable = func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.TTLMs = int(o.TTL.Milliseconds()) }
	}
	g := &GoSDK{Server: sdk.NewServer(&sdk.Implementation{Name: "gosdk-test", Version: "1.0.0"}, serverOpts), path: "/mcp"}
	serve := func(*http.Request) *sdk.Server { return g.Server }
	var handler http.Handler
	switch mode {
	case GoSDKLegacySSE:
		handler, g.path = sdk.NewSSEHandler(serve, nil), "/sse"
	case GoSDKStateless, GoSDKOnly2026:
		handler = sdk.NewStreamableHTTPHandler(serve, &sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	default:
		handler = sdk.NewStreamableHTTPHandler(serve, nil)
	}
	mux := http.NewServeMux()
	mux.Handle(g.path, g.record(handler))
	mux.Handle("/message", g.record(handler))
	g.http = httptest.NewServer(mux)
	return g
}

// URL is the MCP endpoint.
func (g *GoSDK) URL() string { return g.http.URL + g.path }

// Stop closes the server and its connections.
func (g *GoSDK) Stop() { g.http.Close() }

// Requests lists what the server was sent so far.
func (g *GoSDK) Requests() []Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Request(nil), g.requests...)
}

// Methods lists the JSON-RPC methods of the POSTs it was sent, in order.
func (g *GoSDK) Methods() []string {
	var out []string
	for _, r := range g.Requests() {
		if r.Method != "" {
			out = append(out, r.Method)
		}
	}
	return out
}

func (g *GoSDK) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := Request{HTTPMethod: r.Method, Header: r.Header.Clone()}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			req.Method = msg.Method
		}
		g.mu.Lock()
		g.requests = append(g.requests, req)
		g.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// AddRawTool adds a tool whose input schema is the given JSON, kept byte
// for byte; it answers with the text answer returns for its arguments.
func (g *GoSDK) AddRawTool(name, description, schema string, answer func(arguments json.RawMessage) string) {
	g.Server.AddTool(&sdk.Tool{Name: name, Description: description, InputSchema: json.RawMessage(schema)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(answer(req.Params.Arguments)), nil
		})
}

// AddProgressTool adds "steps", which reports progress 1..n of n (when
// asked for progress) and logs each step at info, then answers "done".
func (g *GoSDK) AddProgressTool(n int) {
	g.Server.AddTool(&sdk.Tool{Name: "steps", Description: "Reports its progress.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= n; i++ {
				//nolint:staticcheck // logging is deprecated in 2026-07-28 but spoken by the revisions before it, which the operator relays
				_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("step %d", i)})
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(n), Message: fmt.Sprintf("step %d", i)})
				}
			}
			return text("done"), nil
		})
}

// AddWaitTool adds "wait", which answers when release is closed, or ends
// (counting Cancelled) when its caller goes away; started hears each call
// begin.
func (g *GoSDK) AddWaitTool(release <-chan struct{}, started chan<- struct{}) {
	g.Server.AddTool(&sdk.Tool{Name: "wait", Description: "Waits.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-release:
				return text("released"), nil
			case <-ctx.Done():
				g.Cancelled.Add(1)
				return nil, ctx.Err()
			}
		})
}

// AddAskingTool adds "ask", which, as a 2026-07-28 server does, answers a
// call with an elicitation for the client to fulfil (input_required)
// unless the call brings its answer.
func (g *GoSDK) AddAskingTool() {
	g.Server.AddTool(&sdk.Tool{Name: "ask", Description: "Asks for a name.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["who"].(*sdk.ElicitResult); ok {
				return text(fmt.Sprint("hello ", r.Content["name"])), nil
			}
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"who": &sdk.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, RequestState: "s1"}, nil
		})
}

// AddAskingPrompt adds the prompt "ask", which answers as AddAskingTool's
// tool does: with an elicitation for the client to fulfil.
func (g *GoSDK) AddAskingPrompt() {
	g.Server.AddPrompt(&sdk.Prompt{Name: "ask", Description: "Asks for a name."},
		func(_ context.Context, _ *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{InputRequests: sdk.InputRequestMap{"who": &sdk.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}, RequestState: "s1"}, nil
		})
}

// AddElicitingTool adds "elicit", which, as a server of the revisions
// before 2026-07-28 does, asks its client for a name (elicitation/create
// on the call's stream) and answers "hello <name>", or what the user
// did instead ("declined", "cancelled"). A refused request is the tool's
// error, with the client's message.
func (g *GoSDK) AddElicitingTool() {
	g.Server.AddTool(&sdk.Tool{Name: "elicit", Description: "Asks for a name.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			answer, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string", "default": "Ann"}}}})
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "asking failed: " + err.Error()}}}, nil
			}
			if answer.Action != "accept" {
				return text(answer.Action), nil
			}
			return text(fmt.Sprint("hello ", answer.Content["name"])), nil
		})
}

// AddSamplingTool adds "sample", which asks its client's model to
// complete its prompt argument (sampling/createMessage on the call's
// stream) and answers with the model's name and text.
func (g *GoSDK) AddSamplingTool() {
	g.Server.AddTool(&sdk.Tool{Name: "sample", Description: "Asks the client's model.", InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct {
				Prompt string `json:"prompt"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &args)
			//nolint:staticcheck // sampling, deprecated in 2026-07-28, is what is relayed
			answer, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 50,
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: args.Prompt}}}})
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "sampling failed: " + err.Error()}}}, nil
			}
			said := ""
			if t, ok := answer.Content.(*sdk.TextContent); ok {
				said = t.Text
			}
			return text(answer.Model + ": " + said), nil
		})
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// AddMetaTool adds "meta", which answers with the _meta its request
// carried, as JSON.
func (g *GoSDK) AddMetaTool() {
	g.Server.AddTool(&sdk.Tool{Name: "meta", Description: "Shows its _meta.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			raw, _ := json.Marshal(req.Params.Meta)
			return text(string(raw)), nil
		})
}
