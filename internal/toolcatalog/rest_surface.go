package toolcatalog

import (
	"encoding/json"
	"net/http"
)

// The REST listings of what a collection offers besides tools, read-only:
// what its MCP endpoint lists, whole, with the servers each came from and
// the names (or URIs as served) more than one server offers.

// surfaceEntry is one prompt, resource or template in a REST listing.
type surfaceEntry struct {
	// Server is the MCPServer it comes from (namespace/name); Original its
	// name or URI there.
	Server   string          `json:"server"`
	Original string          `json:"original"`
	Item     json.RawMessage `json:"definition"`
}

func entriesOf(items []offered) []surfaceEntry {
	out := make([]surfaceEntry, len(items))
	for i, o := range items {
		out[i] = surfaceEntry{Server: o.server.key(), Original: o.original, Item: o.item}
	}
	return out
}

// servePrompts answers GET .../toolcollections/{name}/prompts.
func (c *Catalog) servePrompts(w http.ResponseWriter, req *http.Request, key viewKey) {
	vw, ok := c.readableView(w, req, key)
	if !ok {
		return
	}
	prompts, conflicts := c.offerings(req.Context(), vw.surfaces, promptsKind)
	if conflicts == nil {
		conflicts = []surfaceConflict{}
	}
	writeJSON(w, http.StatusOK, struct {
		Prompts   []surfaceEntry    `json:"prompts"`
		Conflicts []surfaceConflict `json:"conflicts"`
	}{entriesOf(prompts), conflicts})
}

// serveResources answers GET .../toolcollections/{name}/resources: its
// resources and resource templates.
func (c *Catalog) serveResources(w http.ResponseWriter, req *http.Request, key viewKey) {
	vw, ok := c.readableView(w, req, key)
	if !ok {
		return
	}
	resources, conflicts := c.offerings(req.Context(), vw.surfaces, resourcesKind)
	templates, templateConflicts := c.offerings(req.Context(), vw.surfaces, templatesKind)
	conflicts = append(conflicts, templateConflicts...)
	if conflicts == nil {
		conflicts = []surfaceConflict{}
	}
	writeJSON(w, http.StatusOK, struct {
		Resources         []surfaceEntry    `json:"resources"`
		ResourceTemplates []surfaceEntry    `json:"resourceTemplates"`
		Conflicts         []surfaceConflict `json:"conflicts"`
	}{entriesOf(resources), entriesOf(templates), conflicts})
}
