package toolcatalog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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

// listings are the list methods answered here, and what each lists;
// requests the other methods answered here.
var (
	listings = map[string]surfaceKind{
		string(mcp.MethodPromptsList):            promptsKind,
		string(mcp.MethodResourcesList):          resourcesKind,
		string(mcp.MethodResourcesTemplatesList): templatesKind,
	}
	requests = []string{string(mcp.MethodPromptsGet), string(mcp.MethodResourcesRead), string(mcp.MethodCompletionComplete)}
)

func isSurfaceMethod(method string) bool {
	_, listing := listings[method]
	return listing || slices.Contains(requests, method)
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
	if vw.missing != "" {
		// The collection went since the handler read it.
		writeRPCError(w, http.StatusNotFound, msg.ID, mcp.INVALID_REQUEST, vw.missing)
		return
	}
	// What a caller lists is what it may ask for: through /mcp, the
	// servers it may get.
	set, err := c.visibleSurfaces(ctx, key, vw.surfaces)
	if err != nil {
		writeRPCError(w, http.StatusServiceUnavailable, msg.ID, mcp.INTERNAL_ERROR, "permissions could not be checked with the API server; retry")
		return
	}
	if kind, ok := listings[msg.Method]; ok {
		c.serveSurfaceList(ctx, w, msg, set, kind)
		return
	}
	if subscribeMethods[msg.Method] {
		m.serveSubscribe(ctx, w, r, key, set, msg)
		return
	}
	// A legacy caller hears only the answer; a 2026-07-28 caller's request
	// goes on as it is.
	answer, err := c.surfaceRequest(ctx, key, set, msg, !msg.stateless(r))
	if err != nil {
		writeSurfaceError(w, msg.ID, err)
		return
	}
	writeListAnswer(w, msg.ID, answer)
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
func (c *Catalog) surfaceRequest(ctx context.Context, key viewKey, set *surfaceSet, msg *rpcMessage, answersOnly bool) (answer json.RawMessage, err error) {
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
	// The caller's rate first: finding what it names may read servers.
	if err := c.callers.allow(ctx); err != nil {
		return nil, err
	}
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
	var raw json.RawMessage
	err = c.onUpstream(ctx, target.server.namespace, target.server.name, answersOnly, func(s *mcpclient.Session) error {
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
	if bytes.Contains(raw, []byte(mcpclient.InputRequired)) && string(wire.Member(raw, "resultType")) == `"`+mcpclient.InputRequired+`"` {
		// As for a tool call: the server's questions are not relayed yet.
		return nil, &protocolError{code: mcp.INTERNAL_ERROR, message: fmt.Sprintf(
			"MCPServer %s needs input from the user or the client's model (elicitation, sampling or roots) to answer, which the catalog does not relay", target.server.key())}
	}
	if set.asServed() {
		return raw, nil
	}
	return exposeURIs(raw, resourceuri.Server{Namespace: target.server.namespace, Name: target.server.name}, msg.Method), nil
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

// offeredAs is what the view offers of kind under the exposed name or URI.
func (c *Catalog) offeredAs(ctx context.Context, set *surfaceSet, kind surfaceKind, exposed string) (surfaceTarget, bool) {
	targetKind := resourcesKind // a resource or template is named by URI
	if kind == promptsKind {
		targetKind = promptsKind
	}
	items, _ := c.offerings(ctx, set, kind)
	for _, o := range items {
		if o.exposed == exposed {
			return surfaceTarget{kind: targetKind, server: o.server, exposed: exposed, original: o.original}, true
		}
	}
	return surfaceTarget{}, false
}

// findPrompt is the prompt the view offers by that exposed name.
func (c *Catalog) findPrompt(ctx context.Context, set *surfaceSet, name string) (surfaceTarget, error) {
	if target, ok := c.offeredAs(ctx, set, promptsKind, name); ok {
		return target, nil
	}
	return surfaceTarget{}, &protocolError{code: mcp.INVALID_PARAMS, message: fmt.Sprintf("prompt %s not found", recordedName(name))}
}

// findResource is the server that offers a URI the view offers, and the
// URI as that server knows it: a resource it lists, else an expansion of
// one of its templates (RFC 6570), first server first. Only what the view
// lists, or expands from what it lists, is read: the collection's filter
// holds for reads as for listings, and no other URI reaches a server.
func (c *Catalog) findResource(ctx context.Context, set *surfaceSet, uri string) (surfaceTarget, error) {
	if set.resources == nil || glob.KeepURI(uri, set.resources.Include, set.resources.Exclude) {
		if target, ok := c.offeredAs(ctx, set, resourcesKind, uri); ok {
			return target, nil
		}
		templates, _ := c.offerings(ctx, set, templatesKind)
		for _, o := range templates {
			if t, err := uritemplate.New(o.exposed); err != nil || t.Match(uri) == nil {
				continue
			}
			original := uri
			if o.exposed != o.original { // a template the view rewrote
				named, own, ok := resourceuri.Resolve(uri)
				if !ok || named.Namespace != o.server.namespace || named.Name != o.server.name {
					continue
				}
				original = own
			}
			return surfaceTarget{kind: resourcesKind, server: o.server, exposed: uri, original: original}, nil
		}
	}
	return surfaceTarget{}, &protocolError{code: resourceNotFound, message: fmt.Sprintf("resource %s not found", recordedURI(uri))}
}

// findTemplate is the server a completion's ref/resource names: by its
// template's URI, as the view offers it.
func (c *Catalog) findTemplate(ctx context.Context, set *surfaceSet, uri string) (surfaceTarget, error) {
	if target, ok := c.offeredAs(ctx, set, templatesKind, uri); ok {
		return target, nil
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

// exposeURIs rewrites the resource URIs in a server's answer to method as
// the view offers them, so that the caller can read them back: the
// contents of a resource read, and the resources embedded in or linked
// from a prompt's messages. Nothing else is touched, nor is any other
// byte: numbers stay as sent.
func exposeURIs(raw json.RawMessage, s resourceuri.Server, method string) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"uri"`)) {
		return raw
	}
	var answer map[string]any
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	if decoder.Decode(&answer) != nil {
		return raw
	}
	switch method {
	case string(mcp.MethodResourcesRead):
		for _, c := range listOf(answer["contents"]) {
			exposeAt(c, "uri", s)
		}
	case string(mcp.MethodPromptsGet):
		for _, m := range listOf(answer["messages"]) {
			if m, ok := m.(map[string]any); ok {
				exposeInContent(m["content"], s)
			}
		}
	default:
		return raw
	}
	out, err := json.Marshal(answer)
	if err != nil {
		return raw
	}
	return out
}

// exposeContent rewrites the resource URIs of a tool result's content
// items, each kept as sent unless it links or embeds a resource.
func exposeContent(items []json.RawMessage, s resourceuri.Server) {
	for i, raw := range items {
		if !bytes.Contains(raw, []byte(`"uri"`)) {
			continue
		}
		var item map[string]any
		decoder := json.NewDecoder(bytes.NewReader(raw))
		decoder.UseNumber()
		if decoder.Decode(&item) != nil || !exposeInContent(item, s) {
			continue
		}
		if out, err := json.Marshal(item); err == nil {
			items[i] = out
		}
	}
}

// exposeInContent rewrites one content item's resource URI: a
// resource_link's, or an embedded resource's. It reports whether it did.
func exposeInContent(content any, s resourceuri.Server) bool {
	item, ok := content.(map[string]any)
	if !ok {
		return false
	}
	switch item["type"] {
	case "resource_link":
		return exposeAt(item, "uri", s)
	case "resource":
		return exposeAt(item["resource"], "uri", s)
	}
	return false
}

// exposeAt rewrites obj[key] when it is a URI the catalog exposes.
func exposeAt(obj any, key string, s resourceuri.Server) bool {
	m, ok := obj.(map[string]any)
	if !ok {
		return false
	}
	uri, ok := m[key].(string)
	if !ok || isWebURI(uri) {
		return false
	}
	exposed, err := resourceuri.Expose(s, uri)
	if err != nil {
		return false
	}
	m[key] = exposed
	return true
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

// isWebURI says a URI is http(s): the client fetches such a resource
// itself (the MCP specification), so it keeps its URI everywhere.
func isWebURI(uri string) bool {
	scheme, _, ok := strings.Cut(uri, ":")
	return ok && (strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "http"))
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
