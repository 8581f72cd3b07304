package testmcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"

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

// GoSDK is a real MCP server built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), on 127.0.0.1: an
// implementation of the other side that nobody here wrote. It keeps tool
// schemas as the raw JSON it is given, so a test can serve definitions
// mcp-go's server would refuse.
type GoSDK struct {
	Server *sdk.Server
	http   *httptest.Server
	path   string
}

// StartGoSDK starts a go-sdk server in a mode; Stop it when done.
func StartGoSDK(mode GoSDKMode) *GoSDK {
	var opts *sdk.ServerOptions
	if mode == GoSDKOnly2026 {
		opts = &sdk.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}}
	}
	g := &GoSDK{Server: sdk.NewServer(&sdk.Implementation{Name: "gosdk-test", Version: "1.0.0"}, opts), path: "/mcp"}
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
	mux.Handle(g.path, handler)
	g.http = httptest.NewServer(mux)
	return g
}

// URL is the MCP endpoint.
func (g *GoSDK) URL() string { return g.http.URL + g.path }

// Stop closes the server and its connections.
func (g *GoSDK) Stop() { g.http.Close() }

// AddRawTool adds a tool whose input schema is the given JSON, kept byte
// for byte; it answers with the text answer returns for its arguments.
func (g *GoSDK) AddRawTool(name, description, schema string, answer func(arguments json.RawMessage) string) {
	g.Server.AddTool(&sdk.Tool{Name: name, Description: description, InputSchema: json.RawMessage(schema)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: answer(req.Params.Arguments)}}}, nil
		})
}
