package toolcatalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/toolname"
	"github.com/toolmesh/mcp-operator/internal/toolsearch"
)

// Searching a view. Each view carries a searchIndex, built from its tools
// on the first search and never per query. The view is immutable and a
// search reads the index and the tools through the one view it holds, so a
// search never mixes two revisions: a new revision is a new view with its
// own index, swapped in whole by the menu cache. Views of one menu whose
// searchable text is the same share one index, so a change elsewhere in the
// cluster (which starts new views of every menu) costs no rebuild; the
// cache keeps one index per menu that exists, as it keeps views.

// searchIndex is the index of one menu revision's tools, built once, on
// first use; positions in it are positions in the view's menu.Tools.
type searchIndex struct {
	fingerprint string
	once        sync.Once
	// built is set once, by the first search; atomic so that the cache's
	// tests may look without searching.
	built atomic.Pointer[toolsearch.Index]
}

func (s *searchIndex) of(tools []menu.Entry) *toolsearch.Index {
	s.once.Do(func() { s.built.Store(toolsearch.Build(searchDocuments(tools))) })
	return s.built.Load()
}

// searchDocuments are the tools as the ranking reads them: exposed and
// original name, the names of the server serving it, title, description as
// the agent sees it (overrides applied), input schema.
func searchDocuments(tools []menu.Entry) []toolsearch.Document {
	// A server's tool prefix, read back from the first of its tools whose
	// exposed name Expose left whole: a name cut to fit, or given a hash,
	// holds it only in part.
	prefixes := map[[2]string]string{}
	for i := range tools {
		e := &tools[i]
		key := [2]string{e.Namespace, e.Server}
		if _, ok := prefixes[key]; !ok {
			if prefix := otherPrefix(e); prefix != "" {
				prefixes[key] = prefix
			}
		}
	}
	docs := make([]toolsearch.Document, len(tools))
	for i := range tools {
		e := &tools[i]
		server := e.Server
		if prefix := prefixes[[2]string{e.Namespace, e.Server}]; prefix != "" {
			server += " " + prefix
		}
		docs[i] = toolsearch.Document{Name: e.Name, OriginalName: e.Tool.OriginalName, Server: server, Title: titleOf(e),
			Description: e.Description, InputSchema: json.RawMessage(e.Tool.InputSchema.Raw)}
	}
	return docs
}

// otherPrefix is the tool prefix e's exposed name carries when it is not
// the MCPServer's name, else "" (also when the name does not hold it
// whole).
func otherPrefix(e *menu.Entry) string {
	if prefix, ok := toolname.Prefix(e.Tool.Name, e.Tool.OriginalName); ok && prefix != e.Server {
		return prefix
	}
	return ""
}

// titleOf is a tool's title, or its annotations' title, which older
// servers use for the same thing.
func titleOf(e *menu.Entry) string {
	if e.Tool.Title == "" && e.Tool.Annotations != nil {
		return e.Tool.Annotations.Title
	}
	return e.Tool.Title
}

// searchFingerprint identifies what an index of the view's tools holds.
// The revision covers the names in order, descriptions, titles and
// schemas; original names, servers, tool prefixes and annotation titles
// are not in it. Every
// build of a view computes it, over up to 100,000 tools, so each part is
// appended length-prefixed (no two views share the bytes hashed) rather
// than JSON-encoded, which was a fifth of a global view's build.
func searchFingerprint(vw *view) string {
	h := sha256.New()
	buf := menu.AppendPart(nil, vw.revision)
	for i := range vw.menu.Tools {
		e := &vw.menu.Tools[i]
		buf = menu.AppendPart(buf, e.Tool.OriginalName)
		buf = menu.AppendPart(buf, e.Server)
		buf = menu.AppendPart(buf, otherPrefix(e))
		buf = menu.AppendPart(buf, titleOf(e))
		if len(buf) >= 32<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// rankedTool is one search result.
type rankedTool struct {
	entry *menu.Entry
	score float64
}

// rank returns up to limit of the view's tools that keep lets through (nil
// keeps all), best first. The index holds every tool of the menu; a caller
// who may see only some (a caller's view: the global menu narrowed to the
// servers they may see, a collection's to what its policy lets them call)
// or an endpoint that serves only some (MCP leaves refused tools out) gets
// the best of those, asking the index for more hits until limit are kept
// or none are left.
func (vw *view) rank(query string, limit int, keep func(*menu.Entry) bool) []rankedTool {
	if vw.base != nil {
		// A caller's view of a menu: the menu's index, the caller's tools.
		return vw.base.rank(query, limit, func(e *menu.Entry) bool {
			return vw.byName[e.Name] != nil && (keep == nil || keep(e))
		})
	}
	ix := vw.index.of(vw.menu.Tools)
	want := limit
	for {
		hits := ix.Search(query, want)
		out := make([]rankedTool, 0, min(limit, len(hits)))
		for _, h := range hits {
			e := &vw.menu.Tools[h.Doc]
			if keep != nil && !keep(e) {
				continue
			}
			out = append(out, rankedTool{entry: e, score: h.Score})
			if len(out) == limit {
				return out
			}
		}
		if len(hits) < want || want >= ix.Len() {
			return out
		}
		want = min(want*4, ix.Len())
	}
}

// searchIndexFor gives a view built from st its index: the one kept for
// the menu when the fingerprint is the same, else a new one, kept if the
// view is and st still holds. Callers hold no lock.
func (m *menuCache) searchIndexFor(key viewKey, vw *view, st stamp, keep bool) *searchIndex {
	fingerprint := searchFingerprint(vw)
	fresh := &searchIndex{fingerprint: fingerprint}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !keep {
		// A menu that does not exist (or a namespace without tools) keeps
		// nothing, and loses what it had.
		delete(m.indexes, key)
		return fresh
	}
	if held, ok := m.indexes[key]; ok && held.fingerprint == fingerprint {
		return held
	}
	if m.holds(st) {
		// A view built for an older version must not replace a newer one's.
		m.indexes[key] = fresh
	}
	return fresh
}

// forget drops the index of a menu that went away (a deleted collection or
// server), so that indexes do not outlive their menus.
func (m *menuCache) forget(key viewKey) {
	m.mu.Lock()
	delete(m.indexes, key)
	m.mu.Unlock()
}
