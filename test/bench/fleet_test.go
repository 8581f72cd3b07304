package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// fleet is many MCP servers behind one loopback listener, one per path,
// so that thousands of MCPServers cost one listener and a map entry each
// rather than a listener and a goroutine pool each. Each path answers as
// a whole mcp-go Streamable HTTP server (sessions, stateless 2026-07-28
// requests, list-change streams); paths may share one mcp-go server when
// their tools are the same, which only saves memory here: the manager
// still opens a session per MCPServer and sees each path on its own.
type fleet struct {
	base string
	http *http.Server
	mu   sync.RWMutex
	// paths is written while servers are added, before they are used.
	paths map[string]*fleetPath
}

type fleetPath struct {
	handler http.Handler
	// connects counts initialize and server/discover requests: how often
	// a client opened a session on this path.
	connects atomic.Int64
}

func startFleet() (*fleet, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the MCP servers: %w", err)
	}
	f := &fleet{base: "http://" + ln.Addr().String(), paths: map[string]*fleetPath{}}
	f.http = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	go func() { _ = f.http.Serve(ln) }()
	return f, nil
}

func (f *fleet) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.http.Shutdown(ctx)
	_ = f.http.Close()
}

// serve puts srv at path and returns its URL.
func (f *fleet) serve(path string, srv *streamable) string {
	f.mu.Lock()
	f.paths[path] = &fleetPath{handler: srv.http}
	f.mu.Unlock()
	return f.base + path
}

func (f *fleet) path(path string) *fleetPath {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.paths[path]
}

// connectsByPath is how many sessions clients opened on each path.
func (f *fleet) connectsByPath() map[string]int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make(map[string]int64, len(f.paths))
	for path, p := range f.paths {
		out[path] = p.connects.Load()
	}
	return out
}

func (f *fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := f.path(r.URL.Path)
	if p == nil {
		http.NotFound(w, r)
		return
	}
	switch methodOf(r) {
	case string(mcp.MethodInitialize), string(mcp.MethodServerDiscover):
		p.connects.Add(1)
	}
	p.handler.ServeHTTP(w, r)
}

// methodOf is the JSON-RPC method of a POST: from the Mcp-Method header
// that 2026-07-28 requests carry, else from the body, read only when no
// session is named (a request in a session cannot be initialize).
func methodOf(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	if m := r.Header.Get(mcp.HeaderMethod); m != "" {
		return m
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		return "in-session"
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// streamable is one mcp-go server and its Streamable HTTP handler.
type streamable struct {
	mcp  *server.MCPServer
	http http.Handler
}

// echoSchema is the echo tool's input: one required string.
const echoSchema = `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`

// smallSchema is every other tool's input: as small as a definition gets,
// so that one server's 10,000 tools fit one object's status in etcd.
const smallSchema = `{"type":"object"}`

// newStreamable is an mcp-go server with an echo tool (when echo is set)
// and the named tools, announcing list changes as most servers do.
func newStreamable(echo bool, names []string) *streamable {
	s := server.NewMCPServer("bench-upstream", "1.0.0", server.WithToolCapabilities(true))
	tools := make([]server.ServerTool, 0, len(names)+1)
	if echo {
		tools = append(tools, server.ServerTool{
			Tool: mcp.NewToolWithRawSchema("echo", "Echoes the message", json.RawMessage(echoSchema)),
			Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(req.GetString("message", "")), nil
			},
		})
	}
	for _, name := range names {
		tools = append(tools, server.ServerTool{
			Tool: mcp.Tool{Name: name, RawInputSchema: json.RawMessage(smallSchema)},
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(name), nil
			},
		})
	}
	s.AddTools(tools...)
	return &streamable{mcp: s, http: server.NewStreamableHTTPServer(s)}
}

// toolNames are n names t0000, t0001, …
func toolNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t%04d", i)
	}
	return names
}
