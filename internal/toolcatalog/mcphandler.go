package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolmesh/mcp-operator/internal/menu"
)

// mcpPageSize is how many tools one tools/list page holds.
const mcpPageSize = 200

// mcpHandlers serve menus as MCP servers (Streamable HTTP), built on
// mcp-go's server side: /mcp for every tool the caller may see, and one per
// collection. Each endpoint's tools follow its menu's revision; a change
// reaches connected clients as notifications/tools/list_changed.
type mcpHandlers struct {
	catalog *Catalog
	mu      sync.Mutex
	byKey   map[viewKey]*mcpHandler
	kick    chan struct{}
}

type mcpHandler struct {
	key      viewKey
	server   *server.MCPServer
	http     http.Handler
	mu       sync.Mutex
	revision string
}

func newMCPHandlers(c *Catalog) *mcpHandlers {
	return &mcpHandlers{catalog: c, byKey: map[viewKey]*mcpHandler{}, kick: make(chan struct{}, 1)}
}

// changed asks for the endpoints to follow a change in the cache.
func (m *mcpHandlers) changed() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// syncOnChange brings every endpoint's tools up to date after changes,
// so that listening clients hear of them without asking.
func (m *mcpHandlers) syncOnChange(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		}
		// Changes come in bursts (a status write, then a collection's);
		// follow the burst once.
		time.Sleep(50 * time.Millisecond)
		m.mu.Lock()
		endpoints := make([]*mcpHandler, 0, len(m.byKey))
		for _, ep := range m.byKey {
			endpoints = append(endpoints, ep)
		}
		m.mu.Unlock()
		for _, ep := range endpoints {
			_ = m.sync(ctx, ep)
		}
	}
}

// endpoint returns the endpoint of a menu, creating it on first use.
func (m *mcpHandlers) endpoint(key viewKey) *mcpHandler {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ep, ok := m.byKey[key]; ok {
		return ep
	}
	ep := &mcpHandler{key: key}
	opts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithPaginationLimit(mcpPageSize),
		server.WithRecovery(),
	}
	if key.kind == globalView {
		// Callers see the tools of the servers they may get, at listing and
		// at call time alike.
		opts = append(opts, server.WithToolFilter(m.catalog.visibleTools))
	}
	name := "mcp-operator"
	if key.kind == collectionView {
		name = "mcp-operator/" + key.namespace + "/" + key.name
	}
	ep.server = server.NewMCPServer(name, "v1alpha1", opts...)
	path := "/mcp"
	if key.kind == collectionView {
		path = "/v1/namespaces/" + key.namespace + "/toolcollections/" + key.name + "/mcp"
	}
	ep.http = server.NewStreamableHTTPServer(ep.server,
		server.WithEndpointPath(path),
		// The catalog checks Origin itself, against its own allow-list.
		server.WithDisableLocalhostProtection(true),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if who := callerFrom(r.Context()); who != nil {
				return context.WithValue(ctx, callerKey{}, who)
			}
			return ctx
		}))
	m.byKey[key] = ep
	return ep
}

// sync gives the endpoint the tools of its menu's current revision.
func (m *mcpHandlers) sync(ctx context.Context, ep *mcpHandler) error {
	vw, err := m.catalog.menus.view(ctx, ep.key)
	if err != nil {
		return err
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if vw.revision == ep.revision {
		return nil
	}
	tools := make([]server.ServerTool, 0, len(vw.menu.Tools))
	for i := range vw.menu.Tools {
		tools = append(tools, server.ServerTool{Tool: mcpToolOf(&vw.menu.Tools[i]), Handler: m.catalog.mcpCall(ep.key)})
	}
	if err := setTools(ep.server, tools); err != nil {
		return err
	}
	ep.revision = vw.revision
	return nil
}

// setTools guards against mcp-go refusing a definition by panicking (it
// does so for malformed x-mcp-header annotations): one bad upstream tool
// must not take the catalog down.
func setTools(s *server.MCPServer, tools []server.ServerTool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a tool definition was refused: %v", r)
		}
	}()
	s.SetTools(tools...)
	return nil
}

func mcpToolOf(e *menu.Entry) mcp.Tool {
	t := mcp.Tool{
		Name:           e.Name,
		Title:          e.Tool.Title,
		Description:    e.Description,
		RawInputSchema: json.RawMessage(e.Tool.InputSchema.Raw),
	}
	if e.Tool.OutputSchema != nil {
		t.RawOutputSchema = json.RawMessage(e.Tool.OutputSchema.Raw)
	}
	if a := e.Tool.Annotations; a != nil {
		t.Annotations = mcp.ToolAnnotation{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint, IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return t
}

// handler serves one endpoint: Origin and size checks, access to the
// collection, its tools brought up to date, then mcp-go.
func (m *mcpHandlers) handler(key viewKey) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(m.catalog.opts.AllowedOrigins, origin) {
			writeError(w, http.StatusForbidden, "origin "+origin+" is not allowed")
			return
		}
		if key.kind == collectionView {
			if err := m.catalog.authz.require(r.Context(), verbGet, toolCollectionsResource, key.namespace, key.name); err != nil {
				writeAuthError(w, err)
				return
			}
			vw, err := m.catalog.menus.view(r.Context(), key)
			if err == nil && vw.missing != "" {
				writeError(w, http.StatusNotFound, vw.missing)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, m.catalog.opts.MaxRequestBytes)
		ep := m.endpoint(key)
		if err := m.sync(r.Context(), ep); err != nil {
			writeError(w, http.StatusServiceUnavailable, "the catalog cannot read its cache yet; retry")
			return
		}
		ep.http.ServeHTTP(w, r)
	})
}

// visibleTools keeps the global endpoint's tools whose server the caller
// may get.
func (c *Catalog) visibleTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if c.authz.mode != AuthKubernetes {
		return tools
	}
	vw, err := c.menus.view(ctx, viewKey{kind: globalView})
	if err != nil {
		return nil
	}
	visible, err := c.visibleTo(ctx, vw)
	if err != nil {
		return nil
	}
	kept := tools[:0:0]
	for _, t := range tools {
		if _, ok := visible.byName[t.Name]; ok {
			kept = append(kept, t)
		}
	}
	return kept
}

// mcpCall runs a tools/call through the same path as REST execute. A
// failure of the tool or its server is a result with isError, which the
// model reads; a caller without execute gets a JSON-RPC error.
func (c *Catalog) mcpCall(key viewKey) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started := time.Now()
		vw, err := c.menus.view(ctx, key)
		if err != nil {
			return nil, errors.New("the catalog cannot read its cache yet; retry")
		}
		entry, ok := vw.byName[req.Params.Name]
		if !ok {
			return nil, fmt.Errorf("tool %s is no longer offered", req.Params.Name)
		}
		if err := c.authorizeCall(ctx, key, entry); err != nil {
			c.record(key, req.Params.Name, entry, started, "forbidden")
			return nil, err
		}
		arguments, err := json.Marshal(req.Params.Arguments)
		if err != nil || string(arguments) == "null" {
			arguments = []byte("{}")
		}
		envelope, err := c.invoke(ctx, entry, arguments)
		var reqErr *requestError
		var upErr *upstreamError
		switch {
		case errors.As(err, &reqErr):
			c.record(key, req.Params.Name, entry, started, "invalid_arguments")
			// SEP-1303 (MCP 2025-11-25): argument errors are tool errors, so
			// that the model can correct itself.
			return mcp.NewToolResultError(reqErr.message), nil
		case errors.As(err, &upErr):
			outcome := "upstream_unreachable"
			if upErr.code == http.StatusGatewayTimeout {
				outcome = "upstream_timeout"
			}
			upstreamErrors.WithLabelValues(entry.Namespace+"/"+entry.Server, upErr.kind).Inc()
			c.record(key, req.Params.Name, entry, started, outcome)
			return mcp.NewToolResultError(upErr.Error()), nil
		case err != nil:
			return nil, err
		}
		outcome := "success"
		if envelope.IsError {
			outcome = "tool_error"
		}
		c.record(key, req.Params.Name, entry, started, outcome)
		return callResultOf(envelope), nil
	}
}

// callResultOf turns the envelope back into an MCP result, content items
// as the server returned them.
func callResultOf(env Envelope) *mcp.CallToolResult {
	raw, _ := json.Marshal(struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
		IsError           bool              `json:"isError,omitempty"`
	}{env.Content, env.StructuredContent, env.IsError})
	var result mcp.CallToolResult
	if err := json.Unmarshal(raw, &result); err != nil {
		return mcp.NewToolResultError("the server's result could not be read")
	}
	if env.IsError && len(result.Content) == 0 {
		result.Content = []mcp.Content{mcp.NewTextContent(env.Error)}
	}
	if env.System != "" {
		result.Content = append(result.Content, mcp.NewTextContent(env.System))
	}
	return &result
}
