package toolcatalog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/toolmesh/mcp-operator/internal/glob"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/resourceuri"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// The MCP requests about prompts and resources, which the catalog answers
// itself from its servers (surface_lists.go): the listings, each paged
// from the servers' listings together, and prompts/get, resources/read
// and completion/complete, each sent to the server that owns what it
// names. Listing needs what tools/list needs; the others what a tool call
// does (execute on the collection, or through the global menu on the
// server), and they are rate limited, counted and audited as calls are.

// surfaceMethods are the methods answered here.
var surfaceMethods = map[string]surfaceKind{
	string(mcp.MethodPromptsList):            promptsKind,
	string(mcp.MethodResourcesList):          resourcesKind,
	string(mcp.MethodResourcesTemplatesList): templatesKind,
	string(mcp.MethodPromptsGet):             promptsKind,
	string(mcp.MethodResourcesRead):          resourcesKind,
	string(mcp.MethodCompletionComplete):     promptsKind, // by its ref, in serveComplete
}

func isSurfaceMethod(method string) bool {
	_, ok := surfaceMethods[method]
	return ok
}

// listMember is the member of a listing's answer that holds its items.
func listMember(kind surfaceKind) string {
	return [...]string{"prompts", "resources", "resourceTemplates"}[kind]
}

// serveSurface answers one of surfaceMethods.
func (m *mcpHandlers) serveSurface(w http.ResponseWriter, r *http.Request, key viewKey, msg *rpcMessage) {
	c := m.catalog
	if msg.stateless(r) {
		if problem := statelessHeaderProblem(r, msg); problem != "" {
			writeRPCError(w, http.StatusBadRequest, msg.ID, mcp.HEADER_MISMATCH, problem)
			return
		}
	}
	ctx, end := c.beginCall(w, r, "mcp", msg.Method, msg.Params.Meta)
	defer end()
	vw, err := c.menus.view(ctx, key)
	if err != nil {
		writeRPCError(w, http.StatusServiceUnavailable, msg.ID, mcp.INTERNAL_ERROR, "the catalog cannot read its cache yet; retry")
		return
	}
	switch msg.Method {
	case string(mcp.MethodPromptsList), string(mcp.MethodResourcesList), string(mcp.MethodResourcesTemplatesList):
		set, err := c.visibleSurfaces(ctx, key, vw.surfaces)
		if err != nil {
			writeRPCError(w, http.StatusServiceUnavailable, msg.ID, mcp.INTERNAL_ERROR, "permissions could not be checked with the API server; retry")
			return
		}
		c.serveSurfaceList(ctx, w, msg, set, surfaceMethods[msg.Method])
	default:
		// Found in the whole set, then authorized: as a tool call through
		// /mcp needs execute on its server, not get.
		answer, err := c.surfaceRequest(ctx, key, vw.surfaces, msg)
		if err != nil {
			writeSurfaceError(w, msg.ID, err)
			return
		}
		writeListAnswer(w, msg.ID, answer)
	}
}

// visibleSurfaces is the set a caller may read: through the global menu,
// the servers they may get (as its tools are narrowed); a collection's or
// a server's whole, its menu having been authorized.
func (c *Catalog) visibleSurfaces(ctx context.Context, key viewKey, set *surfaceSet) (*surfaceSet, error) {
	if key.kind != globalView || !c.authz.enabled() {
		return set, nil
	}
	who := callerFrom(ctx)
	narrowed := *set
	narrowed.servers = nil
	for _, s := range set.servers {
		ok, err := c.authz.allowed(ctx, who, verbGet, mcpServersResource, s.namespace, s.name)
		if err != nil {
			return nil, err
		}
		if ok {
			narrowed.servers = append(narrowed.servers, s)
		}
	}
	return &narrowed, nil
}

// serveSurfaceList answers one page of a listing.
func (c *Catalog) serveSurfaceList(ctx context.Context, w http.ResponseWriter, msg *rpcMessage, set *surfaceSet, kind surfaceKind) {
	offset, ok := surfaceCursor(msg.Params.Cursor)
	if !ok {
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, "the cursor is not one this endpoint gives")
		return
	}
	items, _ := c.offerings(ctx, set, kind)
	offset = min(offset, len(items))
	end := min(offset+mcpPageSize, len(items))
	page := make([]json.RawMessage, 0, end-offset)
	for _, o := range items[offset:end] {
		page = append(page, o.item)
	}
	answer := map[string]any{listMember(kind): page}
	if end < len(items) {
		answer["nextCursor"] = base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	body, err := json.Marshal(answer)
	if err != nil {
		writeRPCError(w, http.StatusInternalServerError, msg.ID, mcp.INTERNAL_ERROR, "the page could not be encoded")
		return
	}
	writeListAnswer(w, msg.ID, body)
}

// surfaceCursor reads a listing's cursor: the base64 of the offset of the
// page it starts.
func surfaceCursor(raw json.RawMessage) (int, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, true
	}
	var cursor string
	if json.Unmarshal(raw, &cursor) != nil {
		return 0, false
	}
	decoded, err := base64.StdEncoding.DecodeString(cursor)
	if err != nil {
		return 0, false
	}
	offset, err := strconv.Atoi(string(decoded))
	return offset, err == nil && offset >= 0
}

// surfaceTarget is what a request names, resolved: the server that owns
// it and the prompt name or URI it goes there with.
type surfaceTarget struct {
	// kind is promptsKind for a prompt, resourcesKind for a URI.
	kind   surfaceKind
	server *surfaceServer
	// exposed is what the caller named; original what the server knows.
	exposed, original string
}

// surfaceRequest sends prompts/get, resources/read or completion/complete
// to the server that owns what it names, and returns the server's answer
// with every URI in it exposed. It is authorized, limited and recorded as
// a tool call is.
func (c *Catalog) surfaceRequest(ctx context.Context, key viewKey, set *surfaceSet, msg *rpcMessage) (answer json.RawMessage, err error) {
	var target surfaceTarget
	defer func() { c.recordSurface(ctx, key, msg.Method, target, err) }()
	var params struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
		URI       string            `json:"uri"`
		Ref       struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if err := json.Unmarshal(msg.rawParams, &params); err != nil {
		return nil, &protocolError{code: mcp.INVALID_PARAMS, message: "the params could not be read: " + err.Error()}
	}
	meta := relayedMetaOf(msg)
	// What the caller named, recorded (shortened) even when not found.
	var found surfaceTarget
	switch {
	case msg.Method == string(mcp.MethodPromptsGet):
		target = surfaceTarget{kind: promptsKind, exposed: params.Name}
		found, err = c.findPrompt(ctx, set, params.Name)
	case msg.Method == string(mcp.MethodResourcesRead):
		target = surfaceTarget{kind: resourcesKind, exposed: params.URI}
		found, err = c.findResource(ctx, set, params.URI)
	case params.Ref.Type == "ref/prompt":
		target = surfaceTarget{kind: promptsKind, exposed: params.Ref.Name}
		found, err = c.findPrompt(ctx, set, params.Ref.Name)
	case params.Ref.Type == "ref/resource":
		target = surfaceTarget{kind: resourcesKind, exposed: params.Ref.URI}
		found, err = c.findTemplate(ctx, set, params.Ref.URI)
	default:
		err = &protocolError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf("ref.type %q is neither ref/prompt nor ref/resource", params.Ref.Type)}
	}
	if err != nil {
		return nil, err
	}
	target = found
	if err := c.authorizeSurface(ctx, key, target.server); err != nil {
		return nil, err
	}
	if msg.Method == string(mcp.MethodCompletionComplete) && !target.server.completions {
		return nil, &protocolError{code: mcp.METHOD_NOT_FOUND, message: fmt.Sprintf("MCPServer %s does not complete arguments", target.server.key())}
	}
	if err := c.callers.allow(ctx); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	err = c.onUpstream(ctx, target.server.namespace, target.server.name, func(s *mcpclient.Session) error {
		var err error
		switch msg.Method {
		case string(mcp.MethodPromptsGet):
			raw, err = s.GetPrompt(ctx, target.original, params.Arguments, meta)
		case string(mcp.MethodResourcesRead):
			raw, err = s.ReadResource(ctx, target.original, meta)
		default:
			var forwarded json.RawMessage
			if forwarded, err = withRef(msg.rawParams, params.Ref.Type, target.original); err == nil {
				raw, err = s.Complete(ctx, forwarded, meta)
			}
		}
		return err
	})
	if err != nil {
		return nil, c.toldCaller(ctx, target.server.key(), err)
	}
	if set.asServed() {
		return raw, nil
	}
	return exposeURIs(raw, resourceuri.Server{Namespace: target.server.namespace, Name: target.server.name}), nil
}

// relayedMetaOf is the request's _meta that goes on upstream: what a tool
// call relays.
func relayedMetaOf(msg *rpcMessage) map[string]any {
	meta := make(map[string]any, len(msg.Params.Meta))
	for k, v := range msg.Params.Meta {
		meta[k] = v
	}
	return wire.RelayedMeta(meta, notRelayed...)
}

// findPrompt is the prompt the view offers by that exposed name.
func (c *Catalog) findPrompt(ctx context.Context, set *surfaceSet, name string) (surfaceTarget, error) {
	prompts, _ := c.offerings(ctx, set, promptsKind)
	for _, o := range prompts {
		if o.exposed == name {
			return surfaceTarget{kind: promptsKind, server: o.server, exposed: name, original: o.original}, nil
		}
	}
	return surfaceTarget{}, &protocolError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf("prompt %s not found", recordedName(name))}
}

// findResource is the server a URI the view offers names (a resource's,
// or a template's expansion), and the URI as the server knows it. An
// exposed URI names its server; one as served is the first server's that
// lists it, else the first's with a template it matches. The collection's
// resource filter applies to what a caller reads as to what it lists.
func (c *Catalog) findResource(ctx context.Context, set *surfaceSet, uri string) (surfaceTarget, error) {
	notFound := &protocolError{code: resourceNotFound, message: fmt.Sprintf("resource %s not found", recordedURI(uri))}
	if set.resources != nil && !glob.KeepURI(uri, set.resources.Include, set.resources.Exclude) {
		return surfaceTarget{}, notFound
	}
	if !set.asServed() {
		named, original, ok := resourceuri.Resolve(uri)
		if ok {
			for i := range set.servers {
				s := &set.servers[i]
				if s.namespace == named.Namespace && s.name == named.Name && (s.resources != "" || s.templates != "") {
					return surfaceTarget{kind: resourcesKind, server: s, exposed: uri, original: original}, nil
				}
			}
		}
		return surfaceTarget{}, notFound
	}
	resources, _ := c.offerings(ctx, set, resourcesKind)
	for _, o := range resources {
		if o.exposed == uri {
			return surfaceTarget{kind: resourcesKind, server: o.server, exposed: uri, original: uri}, nil
		}
	}
	templates, _ := c.offerings(ctx, set, templatesKind)
	for _, o := range templates {
		if t, err := uritemplate.New(o.original); err == nil && t.Match(uri) != nil {
			return surfaceTarget{kind: resourcesKind, server: o.server, exposed: uri, original: uri}, nil
		}
	}
	return surfaceTarget{}, notFound
}

// findTemplate is the server a completion's ref/resource names: by its
// template's URI, as the view offers it.
func (c *Catalog) findTemplate(ctx context.Context, set *surfaceSet, uri string) (surfaceTarget, error) {
	templates, _ := c.offerings(ctx, set, templatesKind)
	for _, o := range templates {
		if o.exposed == uri {
			return surfaceTarget{kind: resourcesKind, server: o.server, exposed: uri, original: o.original}, nil
		}
	}
	return surfaceTarget{}, &protocolError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf("resource template %s not found", recordedURI(uri))}
}

// resourceNotFound is MCP's error code for a resource no server has.
const resourceNotFound = -32002

// authorizeSurface is a tool call's authorization, for a request that
// reads a prompt or resource of server.
func (c *Catalog) authorizeSurface(ctx context.Context, key viewKey, s *surfaceServer) error {
	if key.kind == collectionView {
		return c.authz.require(ctx, verbExecute, toolCollectionsResource, key.namespace, key.name)
	}
	return c.authz.require(ctx, verbExecute, mcpServersResource, s.namespace, s.name)
}

// withRef is completion/complete's params with the ref's name or URI as the
// server knows it.
func withRef(params json.RawMessage, refType, original string) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil {
		return nil, err
	}
	member := "name"
	if refType == "ref/resource" {
		member = "uri"
	}
	ref, err := rewriteMember(fields["ref"], member, original, nil)
	if err != nil {
		return nil, err
	}
	fields["ref"] = ref
	delete(fields, "_meta") // the session sets its own
	return json.Marshal(fields)
}

// exposeURIs rewrites the URIs a server's answer names (the contents of a
// resource read, the resources and links in a prompt's messages) as the
// view offers them, so that the caller can read them back. A URI that
// cannot be exposed, and every other byte, is kept as sent.
func exposeURIs(raw json.RawMessage, s resourceuri.Server) json.RawMessage {
	if !strings.Contains(string(raw), `"uri"`) {
		return raw
	}
	var v any
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber() // numbers as sent, not as float64
	if decoder.Decode(&v) != nil {
		return raw
	}
	exposeIn(v, s)
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

func exposeIn(v any, s resourceuri.Server) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if uri, ok := child.(string); ok && k == "uri" {
				if exposed, err := resourceuri.Expose(s, uri); err == nil {
					v[k] = exposed
				}
				continue
			}
			exposeIn(child, s)
		}
	case []any:
		for _, child := range v {
			exposeIn(child, s)
		}
	}
}

// writeSurfaceError answers a failed prompts/get, resources/read or
// completion/complete: a server's JSON-RPC error as it sent it, a bad
// request as what it is, and anything else as an internal error that says
// what failed, as a failed tool call's envelope would.
func writeSurfaceError(w http.ResponseWriter, id json.RawMessage, err error) {
	var protoErr *protocolError
	if errors.As(err, &protoErr) {
		writeRPCError(w, http.StatusOK, id, protoErr.code, protoErr.message)
		return
	}
	if code, message, ok := mcpclient.RPCErrorOf(err); ok {
		writeRPCError(w, http.StatusOK, id, code, message)
		return
	}
	f := failureOf(err)
	writeRPCError(w, http.StatusOK, id, mcp.INTERNAL_ERROR, f.message)
}
