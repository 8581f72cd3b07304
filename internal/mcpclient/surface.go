package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// A server's surface besides its tools: prompts, resources, resource
// templates and argument completion. Everything comes back as the JSON
// the server sent, for a relay to pass on: the revisions keep adding
// fields to these, and a typed copy would drop the ones it does not know.
// Tools are decoded (tools.go) because the operator reads, hashes and
// pins their definitions; these it only lists and relays.

// Capabilities are what a server offers besides tools, as it announced
// them while connecting.
type Capabilities struct {
	// Prompts: the server offers prompts/list and prompts/get.
	Prompts bool
	// PromptsListChanged is as ListChanged is for tools: the server
	// announced prompts.listChanged and its changes have a stream to
	// arrive on (see Session.Listening).
	PromptsListChanged bool
	// Resources: the server offers resources/list, resources/read and
	// resources/templates/list.
	Resources bool
	// ResourcesSubscribe: it announced resources.subscribe (the catalog
	// subscribes for its callers: WatchResource).
	ResourcesSubscribe bool
	// ResourcesListChanged is as PromptsListChanged, for resources and
	// resource templates.
	ResourcesListChanged bool
	// Completions: the server offers completion/complete.
	Completions bool
}

// surfaceCapabilities is the part of a server's capabilities that
// Capabilities says, as a server/discover answer holds it. That answer is
// not decoded into mcp-go's typed capabilities, which fail on any member
// of a shape they do not expect: discovery would fail with them.
type surfaceCapabilities struct {
	Prompts     *promptsCapability   `json:"prompts"`
	Resources   *resourcesCapability `json:"resources"`
	Completions json.RawMessage      `json:"completions"`
}

// promptsCapability and resourcesCapability are laid out as mcp-go's, so
// that those of an initialize result convert to them.
type (
	promptsCapability struct {
		ListChanged bool `json:"listChanged"`
	}
	resourcesCapability struct {
		Subscribe   bool `json:"subscribe"`
		ListChanged bool `json:"listChanged"`
	}
)

// announced reads Capabilities from an initialize result.
func announced(c mcp.ServerCapabilities) Capabilities {
	surface := surfaceCapabilities{Prompts: (*promptsCapability)(c.Prompts), Resources: (*resourcesCapability)(c.Resources)}
	if c.Completions != nil {
		surface.Completions = json.RawMessage(`{}`)
	}
	return surface.read()
}

func (c surfaceCapabilities) read() Capabilities {
	return Capabilities{
		Prompts:              c.Prompts != nil,
		PromptsListChanged:   c.Prompts != nil && c.Prompts.ListChanged,
		Resources:            c.Resources != nil,
		ResourcesSubscribe:   c.Resources != nil && c.Resources.Subscribe,
		ResourcesListChanged: c.Resources != nil && c.Resources.ListChanged,
		Completions:          !isNullOrEmpty(c.Completions),
	}
}

// listChanges are the list changes the server announced it sends.
func (i ServerInfo) listChanges() mcp.SubscriptionFilter {
	return mcp.SubscriptionFilter{ToolsListChanged: i.ListChanged,
		PromptsListChanged: i.Capabilities.PromptsListChanged, ResourcesListChanged: i.Capabilities.ResourcesListChanged}
}

// HearsListChanges reports whether the server's notifications will tell
// of a change to any of its lists (tools, prompts or resources): a session
// worth holding between discoveries.
func (i ServerInfo) HearsListChanges() bool {
	return i.ListChanged || i.Capabilities.PromptsListChanged || i.Capabilities.ResourcesListChanged
}

// keepListChanges keeps, of the list changes announced, those delivered:
// the ones a stream will bring.
func (i *ServerInfo) keepListChanges(delivered mcp.SubscriptionFilter) {
	kept := sharedListChanges(i.listChanges(), delivered)
	i.ListChanged = kept.ToolsListChanged
	i.Capabilities.PromptsListChanged = kept.PromptsListChanged
	i.Capabilities.ResourcesListChanged = kept.ResourcesListChanged
}

// sharedListChanges are the list changes both a and b name.
func sharedListChanges(a, b mcp.SubscriptionFilter) mcp.SubscriptionFilter {
	return mcp.SubscriptionFilter{ToolsListChanged: a.ToolsListChanged && b.ToolsListChanged,
		PromptsListChanged:   a.PromptsListChanged && b.PromptsListChanged,
		ResourcesListChanged: a.ResourcesListChanged && b.ResourcesListChanged}
}

// isListChanged reports a notification that a list the operator reads
// changed. Resource templates have none of their own: a server says
// resources/list_changed for them.
func isListChanged(method string) bool {
	switch method {
	case mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationPromptsListChanged, mcp.MethodNotificationResourcesListChanged:
		return true
	}
	return false
}

// MaxListingBytes bounds the items one listing keeps, by their size as
// sent: past it the listing is cut (Truncated), so that a server listing
// files by the thousand, or a hostile one, cannot fill the memory of its
// readers (the controller, and every catalog replica).
const MaxListingBytes = 16 << 20

// SurfaceList is one paginated listing (prompts, resources or resource
// templates): each item as the JSON the server sent.
type SurfaceList struct {
	// Items in the server's order, one per key (a key listed twice is
	// kept once: the first).
	Items []json.RawMessage
	// Keys are Items[i]'s key: a prompt's name, a resource's uri, a
	// template's uriTemplate.
	Keys []string
	// Truncated says a limit was hit: the server offers more than Items.
	Truncated bool
	// Digest is as ToolList.Digest: the SHA-256 of (8-byte big-endian
	// length, item as sent) of each item kept.
	Digest [sha256.Size]byte
}

// listing is one of the paginated lists a SurfaceList holds.
type listing struct {
	method mcp.MCPMethod
	// key is the member of each item that names it.
	key string
	// doing is what errors say was being done.
	doing string
	items func(*surfacePage) []json.RawMessage
}

// surfacePage is one page of any listing: each has its own member.
type surfacePage struct {
	Prompts           []json.RawMessage `json:"prompts"`
	Resources         []json.RawMessage `json:"resources"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
	NextCursor        string            `json:"nextCursor"`
}

var (
	promptsListing = listing{method: mcp.MethodPromptsList, key: "name", doing: "listing prompts",
		items: func(p *surfacePage) []json.RawMessage { return p.Prompts }}
	resourcesListing = listing{method: mcp.MethodResourcesList, key: "uri", doing: "listing resources",
		items: func(p *surfacePage) []json.RawMessage { return p.Resources }}
	templatesListing = listing{method: mcp.MethodResourcesTemplatesList, key: "uriTemplate", doing: "listing resource templates",
		items: func(p *surfacePage) []json.RawMessage { return p.ResourceTemplates }}
)

// ListPrompts reads every page of prompts/list, as ListTools does tools.
func (s *Session) ListPrompts(ctx context.Context, limits Limits) (SurfaceList, error) {
	return s.listSurface(ctx, limits, promptsListing)
}

// ListResources reads every page of resources/list, as ListTools does tools.
func (s *Session) ListResources(ctx context.Context, limits Limits) (SurfaceList, error) {
	return s.listSurface(ctx, limits, resourcesListing)
}

// ListResourceTemplates reads every page of resources/templates/list, as
// ListTools does tools.
func (s *Session) ListResourceTemplates(ctx context.Context, limits Limits) (SurfaceList, error) {
	return s.listSurface(ctx, limits, templatesListing)
}

// listSurface reads every page of one listing, following nextCursor until
// the server has no more or a limit is hit (limits.MaxTools bounds the
// items kept). Each page is bounded by the target's timeout.
func (s *Session) listSurface(ctx context.Context, limits Limits, l listing) (SurfaceList, error) {
	var (
		list   SurfaceList
		keys   = map[string]bool{}
		digest = newItemDigest()
		size   int // of the items kept
	)
	truncated, err := s.paginate(ctx, string(l.method), l.doing, limits.MaxPages, func(result json.RawMessage) (string, bool, error) {
		var decoded surfacePage
		if err := json.Unmarshal(result, &decoded); err != nil {
			return "", false, classify(err, s.target, l.doing, nil)
		}
		for _, raw := range l.items(&decoded) {
			if len(list.Items) == limits.MaxTools || size+len(raw) > MaxListingBytes {
				return "", true, nil
			}
			key, ok := itemKey(raw, l.key)
			if !ok {
				return "", false, s.protocolError(l.doing, "%s sent an item with no %s", s.target.redactedURL(), l.key)
			}
			// A key listed twice (a list that shifted between pages) is
			// one item: requests address items by their key.
			if keys[key] {
				continue
			}
			keys[key] = true
			size += len(raw)
			list.Items = append(list.Items, raw)
			list.Keys = append(list.Keys, key)
			digest.add(raw)
		}
		return decoded.NextCursor, false, nil
	})
	if err != nil {
		return SurfaceList{}, err
	}
	list.Truncated = truncated
	digest.sum(&list.Digest)
	return list, nil
}

// itemKey is the string member key of an item; false when the item is
// not an object or the member is missing, empty or not a string.
func itemKey(item json.RawMessage, key string) (string, bool) {
	var name string
	if json.Unmarshal(wire.Member(item, key), &name) != nil || name == "" {
		return "", false
	}
	return name, true
}

// protocolError is a server's answer that breaks the protocol.
func (s *Session) protocolError(doing, format string, args ...any) *Error {
	return &Error{Kind: ErrProtocol, Message: doing + ": " + fmt.Sprintf(format, args...), url: s.target.redactedURL()}
}

// GetPrompt gets a prompt by its name with its arguments (prompts/get) and
// returns the server's result as it sent it. meta goes upstream in the
// request's _meta as CallOptions.Meta does. A JSON-RPC error answer is an
// *Error with RPCCode set.
func (s *Session) GetPrompt(ctx context.Context, name string, arguments map[string]string, meta map[string]any) (json.RawMessage, error) {
	params := struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments,omitempty"`
	}{name, arguments}
	return s.requestRaw(ctx, call{method: string(mcp.MethodPromptsGet), params: params, meta: wire.RelayedMeta(meta)}, "getting prompt "+name)
}

// ReadResource reads a resource by its URI (resources/read) and returns
// the server's result as it sent it, as GetPrompt does. No error names
// the URI: its query may carry a secret.
func (s *Session) ReadResource(ctx context.Context, uri string, meta map[string]any) (json.RawMessage, error) {
	params := struct {
		URI string `json:"uri"`
	}{uri}
	result, err := s.requestRaw(ctx, call{method: string(mcp.MethodResourcesRead), params: params, meta: wire.RelayedMeta(meta)}, "reading resource")
	var e *Error
	if errors.As(err, &e) {
		// The server's own words may quote it.
		return nil, e.without(uri)
	}
	return result, err
}

// without is e with uri left out of what it says; Err keeps the cause
// for logs.
func (e *Error) without(uri string) *Error {
	hidden := *e
	if uri != "" {
		hidden.Message = strings.ReplaceAll(hidden.Message, uri, "<uri>")
		hidden.public = strings.ReplaceAll(hidden.public, uri, "<uri>")
	}
	return &hidden
}

// Complete asks for the completions of an argument (completion/complete)
// with params (ref, argument, context) as the caller sent them, and returns
// the server's result as it sent it, as GetPrompt does. A _meta in params
// is left out: meta is the request's, so that only what RelayedMeta passes
// goes upstream.
func (s *Session) Complete(ctx context.Context, params json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	const doing = "completing an argument"
	params, err := withoutMeta(params)
	if err != nil {
		return nil, &Error{Kind: ErrProtocol, Message: doing + ": the request could not be encoded", Err: err}
	}
	return s.requestRaw(ctx, call{method: string(mcp.MethodCompletionComplete), params: params, meta: wire.RelayedMeta(meta)}, doing)
}

// errNotAnObject is params, or a result, that is not a JSON object.
var errNotAnObject = errors.New("not a JSON object")

// withoutMeta is params, a JSON object, without its _meta member.
func withoutMeta(params json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(params)
	if !isObject(trimmed) || !json.Valid(trimmed) {
		return nil, errNotAnObject
	}
	if !bytes.Contains(trimmed, []byte(`"_meta"`)) {
		return trimmed, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, err
	}
	delete(fields, "_meta")
	return wire.Marshal(fields)
}

// requestRaw sends c and returns its result as the server sent it, which
// must be a JSON object, as every result of the protocol is: a relay
// passes it on, and its own client would fail on anything else.
func (s *Session) requestRaw(ctx context.Context, c call, doing string) (json.RawMessage, error) {
	result, err := s.request(ctx, c, doing)
	if err != nil {
		return nil, err
	}
	if !isObject(bytes.TrimSpace(result)) {
		return nil, &Error{Kind: ErrMalformedResponse, Err: errNotAnObject, url: s.target.redactedURL(),
			Message: fmt.Sprintf("%s: %s answered with a result that is not a JSON object", doing, s.target.redactedURL())}
	}
	return result, nil
}

// isObject reports JSON (white space trimmed) that begins and ends as an
// object does; the transport already checked the answer is valid JSON.
func isObject(trimmed []byte) bool {
	return len(trimmed) >= 2 && trimmed[0] == '{' && trimmed[len(trimmed)-1] == '}'
}
