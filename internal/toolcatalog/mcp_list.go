package toolcatalog

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/menu"
)

// tools/list is answered by the catalog from the menu, and mcp-go holds no
// tools at all: handed every tool of a menu (SetTools), it kept a struct
// of its own per tool for every endpoint (about 450 bytes a tool, a second
// copy of a 100,000-tool menu), copied and validated them all on every
// change, and copied and sorted them all again on each request to cut out
// one page. The catalog pages a menu as mcp-go pages a server's tools
// (sorted by name, mcpPageSize to a page, the next cursor the base64 of
// the page's last name, given whenever a page is full) and encodes each
// page with mcp-go's own types and 2026-07-28 decorations, so the answers
// are those mcp-go gave (TestListPagesAsMCPGo holds them to it). Calls are
// the catalog's already (serveCall), so mcp-go keeps only the sessions,
// initialize, discovery, log levels and the listening streams.
//
// A page that is the same for every caller who may read the menu (a
// collection's without a policy that narrows it per caller; the whole
// menu's when callers are not told apart) is kept once per revision and
// era, so a page costs a map lookup.

// maxKeptListBytes bounds the pages one endpoint keeps of a revision: a
// whole 100,000-tool menu listed in both eras would be twice its encoded
// size. Pages past it are built for each request (a page is 200 tools).
const maxKeptListBytes = 8 << 20

// listKey names one tools/list page: the revision's era and its cursor.
type listKey struct {
	stateless bool
	cursor    string
}

// listPages is what a handler keeps of its current revision's pages. It
// only holds pages reached from the first one, so a caller's made-up
// cursors never grow it.
type listPages struct {
	pages map[listKey]json.RawMessage
	// cursors are the nextCursor values of the pages kept: the cursors a
	// client can come back with.
	cursors map[string]bool
	// size is the bytes of the pages kept.
	size int
}

// fits reports whether page may be kept within maxKeptListBytes. Callers
// hold the handler's lock.
func (l *listPages) fits(page []byte) bool { return l.size+len(page) <= maxKeptListBytes }

func newListPages() listPages {
	return listPages{pages: map[listKey]json.RawMessage{}, cursors: map[string]bool{}}
}

// listCursor is a tools/list request's cursor and the name it points
// after. ok is false for a cursor mcp-go would refuse (not a string, or
// not base64), which mcp-go then answers its way.
func listCursor(msg *rpcMessage) (cursor, after string, ok bool) {
	if len(msg.Params.Cursor) == 0 || string(msg.Params.Cursor) == "null" {
		return "", "", true
	}
	if json.Unmarshal(msg.Params.Cursor, &cursor) != nil {
		return "", "", false
	}
	decoded, err := base64.StdEncoding.DecodeString(cursor)
	if err != nil {
		return "", "", false
	}
	return cursor, string(decoded), true
}

// serveList answers a tools/list: from the kept page, or built from the
// menu (and kept when it is shared and one of the revision's).
func (m *mcpHandlers) serveList(w http.ResponseWriter, r *http.Request, h *mcpHandler, msg *rpcMessage) {
	// mcp-go holds no tools, so it never answers a tools/list: a problem
	// it would refuse is refused here, the rest is answered here.
	stateless := msg.stateless(r)
	if stateless {
		if problem := statelessHeaderProblem(r, msg); problem != "" {
			writeRPCError(w, http.StatusBadRequest, msg.ID, mcp.HEADER_MISMATCH, problem)
			return
		}
		if !slices.Contains(mcp.ValidProtocolVersions, r.Header.Get("MCP-Protocol-Version")) {
			h.http.ServeHTTP(w, r) // mcp-go refuses it, naming the revisions it speaks
			return
		}
	}
	cursor, after, ok := listCursor(msg)
	if !ok {
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INVALID_PARAMS, "the cursor is not one this endpoint gives (a base64 string)")
		return
	}
	key := listKey{stateless: stateless, cursor: cursor}
	h.mu.Lock()
	revision := h.revision
	shared := !h.perCaller && (h.key.kind == collectionView || !m.catalog.authz.enabled())
	page, kept := h.listed.pages[key]
	reachable := key.cursor == "" || h.listed.cursors[key.cursor]
	h.mu.Unlock()
	if kept && shared {
		writeListAnswer(w, msg.ID, page)
		return
	}
	vw, err := m.catalog.menus.view(r.Context(), h.key)
	if err == nil && vw.perCaller() {
		shared = false // the menu moved to a policy since the handler's sync
	}
	if err == nil && !shared {
		vw, err = m.catalog.callerView(r.Context(), h.key, vw)
	}
	if err != nil {
		// The menu cannot be read yet, or the caller's permissions cannot
		// be checked: either way a retry may succeed.
		message := "the catalog cannot read its cache yet; retry"
		if denied, ok := err.(*authError); ok { //nolint:errorlint // authError is never wrapped
			message = denied.message
		}
		writeRPCError(w, http.StatusServiceUnavailable, msg.ID, mcp.INTERNAL_ERROR, message)
		return
	}
	page, next, err := m.listPage(vw, vw.menu.Tools, h.name, stateless, cursor != "", after)
	if err != nil {
		writeRPCError(w, http.StatusInternalServerError, msg.ID, mcp.INTERNAL_ERROR, "the page could not be encoded")
		return
	}
	if shared && reachable && vw.mcpRevision == revision {
		// Kept before it is passed on: the client's next request may
		// follow the answer's nextCursor at once.
		h.keep(key, revision, page, next)
	}
	writeListAnswer(w, msg.ID, page)
}

// listPage encodes the page of a view's MCP tools that follows the tool
// named after (the first page when hasCursor is false), and its next
// cursor. entries are the view's tools the caller may see, sorted.
func (m *mcpHandlers) listPage(vw *view, entries []menu.Entry, serverName string, stateless, hasCursor bool, after string) (json.RawMessage, string, error) {
	var tools []mcp.Tool
	if vw.exposure.Search {
		all := m.catalog.searchTools(vw)
		for _, i := range pageOf(len(all), func(i int) string { return all[i].Name }, nil, hasCursor, after) {
			tools = append(tools, all[i])
		}
	} else {
		var skip func(int) bool
		if len(vw.menu.Refused) > 0 {
			refused := make(map[string]bool, len(vw.menu.Refused))
			for _, e := range vw.menu.Refused {
				refused[e.Name] = true
			}
			skip = func(i int) bool { return refused[entries[i].Name] }
		}
		for _, i := range pageOf(len(entries), func(i int) string { return entries[i].Name }, skip, hasCursor, after) {
			tools = append(tools, mcpToolOf(&entries[i], vw.exposesURIs()))
		}
	}
	next := nextCursor(tools)
	if tools == nil {
		tools = []mcp.Tool{} // a list result's array is required
	}
	result := mcp.ListToolsResult{Tools: tools, PaginatedResult: mcp.PaginatedResult{NextCursor: mcp.Cursor(next)}}
	if stateless {
		// What mcp-go adds to every 2026-07-28 list result: the result's
		// type, the server's identity and its cache hints (mcp-go's
		// defaults: revalidate always, private to the caller).
		result.SetResultType(mcp.ResultTypeComplete)
		result.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: serverName, Version: serverVersion})
		result.SetCacheHints(0, mcp.CacheScopePrivate)
	}
	page, err := json.Marshal(result)
	return page, next, err
}

// pageOf is the indexes of a sorted list's items that follow the name
// after (from the first without a cursor), leaving out those skip names
// (nil: none), mcpPageSize at most.
func pageOf(n int, name func(int) string, skip func(int) bool, hasCursor bool, after string) []int {
	start := 0
	if hasCursor {
		start = sort.Search(n, func(i int) bool { return name(i) > after })
	}
	var out []int
	for i := start; i < n && len(out) < mcpPageSize; i++ {
		if skip == nil || !skip(i) {
			out = append(out, i)
		}
	}
	return out
}

// nextCursor is the cursor after a page: mcp-go gives one whenever a page
// is full, naming its last tool.
func nextCursor(tools []mcp.Tool) string {
	if len(tools) < mcpPageSize {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(tools[len(tools)-1].Name))
}

// keep keeps a page of the revision it was built at.
func (h *mcpHandler) keep(key listKey, revision string, page json.RawMessage, next string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.revision != revision || !h.listed.fits(page) {
		return // the menu moved on while the page was built, or it is full
	}
	if _, kept := h.listed.pages[key]; kept {
		return
	}
	h.listed.size += len(page)
	h.listed.pages[key] = page
	if next != "" {
		h.listed.cursors[next] = true
	}
}

// listAnswers are writeListAnswer's buffers, reused: a page of small
// tools is 15–20 KB, and a fresh buffer for each request was allocated,
// zeroed and collected again. Buffers past maxPooledAnswer (a page built
// for one request from large definitions) are left to the collector
// rather than kept.
var listAnswers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledAnswer = 256 << 10

// jsonContentType is a list answer's Content-Type, shared: a header map
// holds it, and nothing appends to it.
var jsonContentType = []string{"application/json"}

// writeListAnswer writes a page as mcp-go writes a JSON answer. Its length
// goes ahead, so that the page is one write rather than chunks.
func writeListAnswer(w http.ResponseWriter, id json.RawMessage, page json.RawMessage) {
	pooled := listAnswers.Get().(*[]byte)
	buf := (*pooled)[:0]
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	buf = append(buf, page...)
	buf = append(buf, "}\n"...)
	header := w.Header()
	header["Content-Type"] = jsonContentType
	header["Content-Length"] = []string{strconv.Itoa(len(buf))}
	w.WriteHeader(http.StatusOK)
	// Write does not keep buf: it is in the connection's buffer or sent
	// when Write returns.
	_, _ = w.Write(buf)
	if cap(buf) <= maxPooledAnswer {
		*pooled = buf
		listAnswers.Put(pooled)
	}
}

// listable reports a tools/list request (with an id), which the catalog
// answers itself.
func listable(msg *rpcMessage) bool {
	return msg != nil && msg.Method == string(mcp.MethodToolsList) && len(msg.ID) > 0
}
