package toolcatalog

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// A collection's tools/list pages are the same for every caller until its
// menu changes, while mcp-go copies and sorts every tool on each request
// (thousands of them on a large menu) to cut out one page. So the first
// answer to each page is kept, per revision, as mcp-go wrote it, and later
// requests get those bytes with their own id: mcp-go stays the one that
// decides what a page holds (pagination, 2026-07-28's resultType, cache
// hints and serverInfo), and a page costs a map lookup.

// listKey names one tools/list page: the revision's era and its cursor.
type listKey struct {
	modern bool
	cursor string
}

// listPages is what a handler keeps of its current revision's pages. It
// only holds pages reached from the first one, so a caller's made-up
// cursors are answered by mcp-go and never grow it.
type listPages struct {
	pages map[listKey]json.RawMessage
	// cursors are the nextCursor values of the pages kept: the cursors a
	// client can come back with.
	cursors map[string]bool
}

func newListPages() listPages {
	return listPages{pages: map[listKey]json.RawMessage{}, cursors: map[string]bool{}}
}

// listCursor is a tools/list request's cursor.
func listCursor(msg *rpcMessage) string {
	var cursor string
	_ = json.Unmarshal(msg.Params.Cursor, &cursor)
	return cursor
}

// serveList answers a collection's tools/list: from the kept page, or by
// mcp-go, keeping its answer when the page is one of the revision's.
func (m *mcpHandlers) serveList(w http.ResponseWriter, r *http.Request, h *mcpHandler, msg *rpcMessage) {
	modern := msg.modern(r)
	if modern && modernHeaderProblem(r, msg) != "" {
		h.http.ServeHTTP(w, r) // mcp-go answers the problem its way
		return
	}
	key := listKey{modern: modern, cursor: listCursor(msg)}
	h.mu.Lock()
	revision := h.revision
	page, kept := h.listed.pages[key]
	reachable := key.cursor == "" || h.listed.cursors[key.cursor]
	h.mu.Unlock()
	if kept {
		writeListAnswer(w, msg.ID, page)
		return
	}
	if !reachable {
		h.http.ServeHTTP(w, r)
		return
	}
	answer := &bufferedAnswer{header: w.Header(), status: http.StatusOK}
	h.http.ServeHTTP(answer, r)
	// Kept before it is passed on: the client's next request may follow
	// the answer's nextCursor at once.
	h.keep(key, revision, answer)
	w.WriteHeader(answer.status)
	_, _ = w.Write(answer.body.Bytes())
}

// keep keeps mcp-go's answer to a page of the revision it was asked at.
func (h *mcpHandler) keep(key listKey, revision string, answer *bufferedAnswer) {
	if answer.status != http.StatusOK || answer.header.Get("Content-Type") != "application/json" {
		return
	}
	var response struct {
		Result json.RawMessage `json:"result"`
	}
	var result struct {
		NextCursor string `json:"nextCursor"`
	}
	if json.Unmarshal(answer.body.Bytes(), &response) != nil || len(response.Result) == 0 || json.Unmarshal(response.Result, &result) != nil {
		return // an error answer, never kept
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.revision != revision {
		return // the menu moved on while mcp-go answered
	}
	h.listed.pages[key] = response.Result
	if result.NextCursor != "" {
		h.listed.cursors[result.NextCursor] = true
	}
}

// writeListAnswer writes a kept page as mcp-go writes a JSON answer.
// Its length goes ahead, so that the page is one write rather than chunks.
func writeListAnswer(w http.ResponseWriter, id json.RawMessage, page json.RawMessage) {
	buf := make([]byte, 0, len(page)+len(id)+40)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	buf = append(buf, page...)
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}

// listable reports a request whose answer serveList may keep: a tools/list
// request (with an id) on a collection's endpoint, whose pages are the same
// for every caller who may read the collection. The whole menu's pages
// depend on the caller (each sees the servers it may get), so mcp-go
// answers those.
func listable(key viewKey, msg *rpcMessage) bool {
	return key.kind == collectionView && msg != nil && msg.Method == string(mcp.MethodToolsList) && len(msg.ID) > 0
}

// bufferedAnswer holds an answer mcp-go writes, to pass on and keep.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *bufferedAnswer) Header() http.Header         { return a.header }
func (a *bufferedAnswer) WriteHeader(status int)      { a.status = status }
func (a *bufferedAnswer) Write(b []byte) (int, error) { return a.body.Write(b) }

// Flush lets mcp-go stream into the buffer should it turn the answer into
// events; the events are passed on whole.
func (a *bufferedAnswer) Flush() {}
