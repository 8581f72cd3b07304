package toolcatalog

import (
	"encoding/json"
	"sort"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// What a menu offers besides tools: the prompts, resources and resource
// templates of its Ready servers, read from the servers themselves
// (surface_lists.go) and served over MCP (mcp_surface.go) and REST
// (rest_surface.go). Status holds only their counts and hashes, which
// tell the catalog when what it read is stale.

// surfaceSet is a view's servers that offer prompts or resources, in the
// menu's order (the first claim on a prompt name wins), and how its
// collection selects what they offer.
type surfaceSet struct {
	servers   []surfaceServer
	prompts   *mcpv1alpha1.PromptSelection
	resources *mcpv1alpha1.ResourceSelection
	// prompts and resources revisions change when what the set lists of
	// each may: a server's listings, or the selections.
	promptsRevision, resourcesRevision string
}

// surfaceSet is the view's surfaces: its own, or those of the menu's view
// it narrows.
func (vw *view) surfaceSet() *surfaceSet {
	for v := vw; v != nil; v = v.base {
		if v.surfaces != nil {
			return v.surfaces
		}
	}
	return nil
}

// exposesURIs says the view names resources with their server in the
// URI (not as served).
func (vw *view) exposesURIs() bool {
	set := vw.surfaceSet()
	return set == nil || !set.asServed()
}

// asServed says resources keep their servers' URIs.
func (set *surfaceSet) asServed() bool {
	return set.resources != nil && set.resources.URIs == mcpv1alpha1.ResourceURIsAsServed
}

// surfaceServer is one Ready MCPServer of a view, as its listings are read.
type surfaceServer struct {
	namespace, name string
	// prefix names its prompts, mcp_{prefix}_{prompt}, as its tools are.
	prefix string
	// prompts, resources and templates are the hashes of its listings in
	// status, "" for one it does not offer.
	prompts, resources, templates string
	completions                   bool
	// subscriptions says the server sends updates of resources a client
	// subscribes to.
	subscriptions bool
	// perCaller says each caller reaches the server as itself (token
	// exchange): what it lists may differ by caller, so it is never
	// shared between callers.
	perCaller bool
}

func (s *surfaceServer) key() string { return s.namespace + "/" + s.name }

// surfacesOf is the surfaceSet of the Ready servers among servers (which
// the caller has put in the menu's order), selected as spec says (nil for
// a global or server menu: everything).
func surfacesOf(servers []*mcpv1alpha1.MCPServer, spec *mcpv1alpha1.ToolCollectionSpec) *surfaceSet {
	set := &surfaceSet{}
	if spec != nil {
		set.prompts, set.resources = spec.Prompts, spec.Resources
	}
	for _, srv := range servers {
		st := &srv.Status
		if !menu.IsReady(srv) || st.Prompts == nil && st.Resources == nil && st.ResourceTemplates == nil {
			continue
		}
		prefix := srv.Spec.ToolPrefix
		if prefix == "" {
			prefix = srv.Name
		}
		s := surfaceServer{namespace: srv.Namespace, name: srv.Name, prefix: prefix,
			prompts: summaryHash(st.Prompts), resources: summaryHash(st.Resources), templates: summaryHash(st.ResourceTemplates),
			perCaller: srv.Spec.Auth != nil && srv.Spec.Auth.TokenExchange != nil}
		if st.ServerInfo != nil {
			s.completions, s.subscriptions = st.ServerInfo.Completions, st.ServerInfo.ResourceSubscriptions
		}
		set.servers = append(set.servers, s)
	}
	prompts := []string{selectionKey(set.prompts)}
	resources := []string{selectionKey(set.resources)}
	for _, s := range set.servers {
		prompts = append(prompts, s.key(), s.prefix, s.prompts, boolKey(s.completions))
		resources = append(resources, s.key(), s.resources, s.templates, boolKey(s.completions), boolKey(s.subscriptions))
	}
	set.promptsRevision, set.resourcesRevision = hashParts(prompts...), hashParts(resources...)
	return set
}

// summaryHash is a listing's hash, marked so that an empty listing differs
// from none.
func summaryHash(s *mcpv1alpha1.SurfaceSummary) string {
	if s == nil {
		return ""
	}
	return "h:" + s.Hash
}

func boolKey(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// selectionKey is a selection as JSON, which encodes it one way.
func selectionKey(selection any) string {
	// Typed structs of strings encode without fail.
	b, _ := json.Marshal(selection)
	return string(b)
}

// byNamespaceAndName orders servers as the global menu does.
func byNamespaceAndName(servers []*mcpv1alpha1.MCPServer) {
	sort.Slice(servers, func(i, j int) bool {
		if servers[i].Namespace != servers[j].Namespace {
			return servers[i].Namespace < servers[j].Namespace
		}
		return servers[i].Name < servers[j].Name
	})
}
