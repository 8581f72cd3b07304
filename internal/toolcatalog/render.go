package toolcatalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// Menu formats: the shapes the major model APIs take tools in.
const (
	// formatOpenAI is Chat Completions' {"type": "function", "function":
	// {name, description, parameters}}.
	formatOpenAI = "openai"
	// formatOpenAIResponses is the Responses API's flat function tool,
	// {"type": "function", name, description, parameters}.
	formatOpenAIResponses = "openai-responses"
	// formatAnthropic is the Messages API's {name, description,
	// input_schema}.
	formatAnthropic = "anthropic"
	// formatGemini is a Gemini function declaration, {name, description,
	// parametersJsonSchema}: the schema as it is, which Gemini takes in
	// parametersJsonSchema, rather than rewritten into the OpenAPI subset
	// its parameters field takes, which would lose what that subset lacks.
	formatGemini = "gemini"
	formatMCP    = "mcp"
)

// formats are the formats a menu or search is served in.
var formats = []string{formatOpenAI, formatOpenAIResponses, formatAnthropic, formatGemini, formatMCP}

type renderKey struct {
	view   viewKey
	format string
}

// rendered is one menu in one format, ready to serve.
type rendered struct {
	etag string
	// body is the menu; nil when it is large enough to be kept only
	// gzipped (see renderWithin), and size is its length.
	body     []byte
	size     int
	gzipOnce sync.Once
	gzipped  []byte
	// served and servedGzip say a caller was answered with the body, and
	// with it gzipped, so that the next version's is rendered before
	// anyone asks again (see menu_warm.go).
	served, servedGzip atomic.Bool
}

// markServed notes a caller was answered with the body.
func (r *rendered) markServed(gzipped bool) {
	if !r.served.Load() {
		r.served.Store(true)
	}
	if gzipped && !r.servedGzip.Load() {
		r.servedGzip.Store(true)
	}
}

func (r *rendered) gzipBody() []byte {
	r.gzipOnce.Do(func() { r.gzipped = compress(r.body) })
	return r.gzipped
}

func compress(body []byte) []byte {
	var buf bytes.Buffer
	zw := newGzip(&buf)
	_, _ = zw.Write(body)
	_ = zw.Close()
	return bytes.Clone(buf.Bytes())
}

// newGzip compresses as menus are: fast rather than small.
func newGzip(w io.Writer) *gzip.Writer {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	return zw
}

// maxPlainRendering is the largest menu body kept as it is: with tools of
// 170 bytes, a menu of about 50,000. A larger one is kept only gzipped, a
// tenth of its size or less: most HTTP clients take gzip, and the others
// are sent it inflated as it goes out, which costs each such request
// about as much CPU as gzipping it once. Below it, a client not taking
// gzip costs a write of the kept bytes.
const maxPlainRendering = 8 << 20

// writeBody sends the body as it is, inflating it when it is kept only
// gzipped.
func (r *rendered) writeBody(w http.ResponseWriter) {
	if r.body != nil {
		_, _ = w.Write(r.body)
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.gzipped))
	if err != nil {
		return // the catalog wrote these bytes itself
	}
	_, _ = io.Copy(w, zr)
}

type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

// openAIResponsesTool says strict: false unless the menu was asked for
// strict, since the Responses API takes a function tool without it as
// strict, which a schema with optional properties is not.
type openAIResponsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type geminiDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

// mcpTool is a tool in MCP's shape, the one format with a place for icons,
// execution and _meta (the model APIs take a name, a description and a
// schema); they go out as status holds them.
type mcpTool struct {
	Name         string            `json:"name"`
	Title        string            `json:"title,omitempty"`
	Description  string            `json:"description"`
	InputSchema  json.RawMessage   `json:"inputSchema"`
	OutputSchema json.RawMessage   `json:"outputSchema,omitempty"`
	Annotations  any               `json:"annotations,omitempty"`
	Icons        []json.RawMessage `json:"icons,omitempty"`
	Execution    json.RawMessage   `json:"execution,omitempty"`
	Meta         json.RawMessage   `json:"_meta,omitempty"`
}

type conflictJSON struct {
	Name    string   `json:"name"`
	Servers []string `json:"servers"`
}

type menuBody struct {
	Revision  string         `json:"revision"`
	Tools     []any          `json:"tools"`
	Conflicts []conflictJSON `json:"conflicts,omitempty"`
	// NonStrict is set, empty or not, in a strict format only.
	NonStrict *[]nonStrictJSON `json:"nonStrict,omitempty"`
}

// render writes a view's menu in a format; schemas go out as the bytes
// status holds.
func render(vw *view, format string) *rendered {
	return renderWithin(vw, format, maxPlainRendering)
}

// renderChunk is how much of a large menu is rendered before it is
// handed to gzip.
const renderChunk = 64 << 10

// renderWithin renders a menu whose body is kept as it is up to limit
// bytes, and only gzipped past it (limit 0: only gzipped). One estimated
// past the limit is rendered straight into gzip, a piece at a time: its
// body is never whole in memory, where allocating it (tens of MiB for
// 100,000 tools, zeroed and faulted in page by page) cost about as much
// as writing it. When the size was overestimated and the body fits after
// all, it is rendered once more as it is; when it was underestimated
// (strings escaped), the body is gzipped and let go.
func renderWithin(vw *view, format string, limit int) *rendered {
	r := &rendered{etag: etagOf(vw.revision, format)}
	if size := menuSize(vw); size <= limit {
		r.body = appendMenuIn(make([]byte, 0, size), vw, format, nil)
		r.size = len(r.body)
		if r.size > limit {
			r.gzipBody()
			r.body = nil
		}
		return r
	}
	var out bytes.Buffer
	zw := newGzip(&out)
	write := func(b []byte) []byte {
		r.size += len(b)
		_, _ = zw.Write(b)
		return b[:0]
	}
	write(appendMenuIn(make([]byte, 0, renderChunk+renderChunk/2), vw, format, write))
	_ = zw.Close()
	gzipped := bytes.Clone(out.Bytes())
	r.gzipOnce.Do(func() { r.gzipped = gzipped })
	if r.size <= limit {
		r.body = appendMenuIn(make([]byte, 0, r.size), vw, format, nil)
	}
	return r
}

// renderTool is a tool in a format, with its schema as the format serves
// it (schemaIn).
func renderTool(e *menu.Entry, format string, served servedSchema) any {
	schema := json.RawMessage(served.raw)
	base, _ := baseFormat(format)
	switch base {
	case formatAnthropic:
		return anthropicTool{Name: e.Name, Description: e.Description, InputSchema: schema, Strict: served.strict}
	case formatOpenAIResponses:
		return openAIResponsesTool{Type: "function", Name: e.Name, Description: e.Description, Parameters: schema,
			Strict: served.strict != nil && *served.strict}
	case formatGemini:
		return geminiDeclaration{Name: e.Name, Description: e.Description, ParametersJSONSchema: schema}
	case formatMCP:
		t := mcpTool{Name: e.Name, Title: e.Tool.Title, Description: e.Description, InputSchema: schema}
		if e.Tool.OutputSchema != nil {
			t.OutputSchema = e.Tool.OutputSchema.Raw
		}
		if e.Tool.Annotations != nil {
			t.Annotations = e.Tool.Annotations
		}
		for _, icon := range e.Tool.Icons {
			t.Icons = append(t.Icons, icon.Raw)
		}
		if e.Tool.Execution != nil {
			t.Execution = e.Tool.Execution.Raw
		}
		if e.Tool.Meta != nil {
			t.Meta = e.Tool.Meta.Raw
		}
		return t
	default:
		return openAITool{Type: "function", Function: openAIFunction{Name: e.Name, Description: e.Description, Parameters: schema,
			Strict: served.strict}}
	}
}

// mcpClientFields are a status tool's icons, execution and _meta in
// mcp-go's types, for the MCP endpoints' listings: its icons that decode
// as 2025-11-25 icons (src, mimeType, sizes, theme: keys a later revision
// adds are lost, which the REST menus in format mcp keep), its execution
// (taskSupport), and its _meta whole, numbers as written.
func mcpClientFields(t *mcpv1alpha1.Tool) (icons []mcp.Icon, execution *mcp.ToolExecution, meta *mcp.Meta) {
	for _, raw := range t.Icons {
		var icon mcp.Icon
		if json.Unmarshal(raw.Raw, &icon) == nil {
			icons = append(icons, icon)
		}
	}
	if t.Execution != nil {
		var e mcp.ToolExecution
		if json.Unmarshal(t.Execution.Raw, &e) == nil {
			execution = &e
		}
	}
	if t.Meta != nil {
		var fields map[string]any
		dec := json.NewDecoder(bytes.NewReader(t.Meta.Raw))
		dec.UseNumber()
		if dec.Decode(&fields) == nil && fields != nil {
			meta = mcp.NewMetaFromMap(fields)
		}
	}
	return icons, execution, meta
}

// rendering returns the cached rendering of a view, rendering it on first
// use after a change.
func (m *menuCache) rendering(key viewKey, vw *view, format string) *rendered {
	rk := renderKey{view: key, format: format}
	m.mu.Lock()
	st := m.stampFor(key.kind)
	r, ok := m.renders[rk]
	m.mu.Unlock()
	if ok && r.etag == etagOf(vw.revision, format) {
		return r
	}
	// Concurrent first requests after a change share one rendering.
	flight := fmt.Sprintf("render\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", st, key.kind, key.namespace, key.name, format, vw.revision)
	shared, _, _ := m.building.Do(flight, func() (any, error) {
		if key.kind != globalView || key.namespace == "" {
			// A namespace's slice of the global menu is not a menu of its own.
			label := menuLabel(key)
			menuRevisions.WithLabelValues(label).Inc()
			toolsServed.WithLabelValues(label).Set(float64(len(vw.menu.Tools)))
		}
		return render(vw, format), nil
	})
	r = shared.(*rendered)
	if !worthKeeping(key, vw) {
		return r
	}
	m.mu.Lock()
	if m.holds(st) {
		m.renders[rk] = r
	}
	m.mu.Unlock()
	return r
}

// serveRendered answers with the body, 304 when the client has it, and
// gzip when the client takes it.
func serveRendered(w http.ResponseWriter, req *http.Request, r *rendered) {
	h := w.Header()
	h.Set("ETag", r.etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("Cache-Control", "no-cache")
	gzipped := acceptsGzip(req.Header.Get("Accept-Encoding"))
	r.markServed(gzipped)
	if etagMatches(req.Header.Get("If-None-Match"), r.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	if gzipped {
		body := r.gzipBody()
		h.Set("Content-Encoding", "gzip")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
		return
	}
	h.Set("Content-Length", strconv.Itoa(r.size))
	if req.Method == http.MethodHead {
		return
	}
	r.writeBody(w)
}

func etagMatches(ifNoneMatch, etag string) bool {
	for _, candidate := range strings.Split(ifNoneMatch, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == etag || candidate == "*" {
			return true
		}
	}
	return false
}

func acceptsGzip(acceptEncoding string) bool {
	for _, part := range strings.Split(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// formatOf reads the format a menu or search is asked in, openai when
// none is named, and its strict variant with ?strict=true.
func formatOf(req *http.Request) (string, error) {
	query := req.URL.Query()
	format := query.Get("format")
	if format == "" {
		format = formatOpenAI
	}
	if !slices.Contains(formats, format) {
		return "", fmt.Errorf("unknown format %s: use %s", format, strings.Join(formats, ", "))
	}
	switch strict := query.Get("strict"); strict {
	case "", "false":
		return format, nil
	case "true":
		if !slices.Contains(strictFormats, format) {
			return "", fmt.Errorf("format %s has no strict mode: strict=true applies to %s", format, strings.Join(strictFormats, ", "))
		}
		return format + strictSuffix, nil
	default:
		return "", fmt.Errorf("strict must be true or false, not %s", strict)
	}
}

// readableView is the menu a read route serves, once the caller may read
// it; otherwise it answers why not and reports false.
func (c *Catalog) readableView(w http.ResponseWriter, req *http.Request, key viewKey) (*view, bool) {
	if err := c.authorizeMenu(req.Context(), key); err != nil {
		writeAuthError(w, err)
		return nil, false
	}
	vw, err := c.menus.view(req.Context(), key)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the catalog cannot read its cache yet; retry")
		return nil, false
	}
	if vw.missing != "" {
		writeError(w, http.StatusNotFound, vw.missing)
		return nil, false
	}
	return vw, true
}

// serveMenu is the shared body of the three menu routes.
func (c *Catalog) serveMenu(w http.ResponseWriter, req *http.Request, key viewKey) {
	format, err := formatOf(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	vw, ok := c.readableView(w, req, key)
	if !ok {
		return
	}
	visible, err := c.callerView(req.Context(), key, vw)
	switch {
	case err != nil:
		writeAuthError(w, err)
	case visible == vw:
		serveRendered(w, req, c.menus.rendering(key, vw, format))
	case key.kind == globalView:
		// A caller who may not see every server gets a menu of their own,
		// not shared and so not cached: rendered in the one encoding it
		// goes out in.
		limit := math.MaxInt
		if acceptsGzip(req.Header.Get("Accept-Encoding")) {
			limit = 0
		}
		serveRendered(w, req, renderWithin(visible, format, limit))
	default:
		// A caller's view under a collection's policy is kept, and
		// shared by the callers it leaves the same tools.
		serveRendered(w, req, visible.rendering(format))
	}
}

// callerView is the view of a menu a caller is served: the global menu
// narrowed to the servers they may get, a collection's to the tools its
// policy lets them call; vw itself when nothing is hidden.
func (c *Catalog) callerView(ctx context.Context, key viewKey, vw *view) (*view, error) {
	if key.kind == globalView {
		return c.visibleTo(ctx, vw)
	}
	return vw.forCaller(callerFrom(ctx)), nil
}

// authorizeMenu requires get on the collection or server a menu belongs
// to; the global menu is filtered instead.
func (c *Catalog) authorizeMenu(ctx context.Context, key viewKey) error {
	switch key.kind {
	case collectionView:
		return c.authz.require(ctx, verbGet, toolCollectionsResource, key.namespace, key.name)
	case serverView:
		return c.authz.require(ctx, verbGet, mcpServersResource, key.namespace, key.name)
	}
	return nil
}

// visibleTo narrows a global view to the servers the caller may get. It
// returns vw itself when nothing is hidden.
func (c *Catalog) visibleTo(ctx context.Context, vw *view) (*view, error) {
	if !c.authz.enabled() {
		return vw, nil
	}
	who := callerFrom(ctx)
	seen := map[string]bool{}
	var kept []menu.Entry
	for _, e := range vw.menu.Tools {
		key := e.Namespace + "/" + e.Server
		ok, done := seen[key]
		if !done {
			var err error
			if ok, err = c.authz.allowed(ctx, who, verbGet, mcpServersResource, e.Namespace, e.Server); err != nil {
				return nil, &authError{code: http.StatusServiceUnavailable, message: "permissions could not be checked with the API server; retry"}
			}
			seen[key] = ok
		}
		if ok {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(vw.menu.Tools) {
		return vw, nil
	}
	m := menu.Menu{Tools: kept}
	narrowed := &view{menu: m, revision: m.Hash(), byName: make(map[string]*menu.Entry, len(kept)), base: vw}
	for i := range m.Tools {
		narrowed.byName[m.Tools[i].Name] = &m.Tools[i]
	}
	return narrowed, nil
}
