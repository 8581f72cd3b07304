package toolcatalog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"k8s.io/apimachinery/pkg/runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// oracleServer is mcp-go's own Streamable HTTP server, named as an
// endpoint is, holding tools as the catalog gave them to it before it
// answered tools/list itself: what listPage is held to.
type oracleServer struct {
	url     string
	session string
}

func newOracle(t *testing.T, name string, tools []mcp.Tool) *oracleServer {
	t.Helper()
	s := server.NewMCPServer(name, serverVersion, server.WithToolCapabilities(true), server.WithLogging(),
		server.WithPaginationLimit(mcpPageSize), server.WithRecovery())
	served := make([]server.ServerTool, len(tools))
	for i, tool := range tools {
		served[i] = server.ServerTool{Tool: tool, Handler: func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, nil
		}}
	}
	s.SetTools(served...)
	front := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(front.Close)
	o := &oracleServer{url: front.URL + "/mcp"}
	resp := o.post(t, false, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"oracle","version":"0"}}}`)
	o.session = resp.Header.Get("Mcp-Session-Id")
	if o.session == "" {
		t.Fatal("mcp-go gave no session")
	}
	return o
}

func (o *oracleServer) post(t *testing.T, stateless bool, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, o.url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if stateless {
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20260728)
		req.Header.Set(mcp.HeaderMethod, string(mcp.MethodToolsList))
	} else if o.session != "" {
		req.Header.Set("Mcp-Session-Id", o.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// page is mcp-go's result for one tools/list page.
func (o *oracleServer) page(t *testing.T, stateless bool, cursor string) json.RawMessage {
	t.Helper()
	params := map[string]any{}
	if cursor != "" {
		params["cursor"] = cursor
	}
	if stateless {
		params["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientInfo: map[string]string{"name": "oracle", "version": "0"}, mcp.MetaKeyClientCapabilities: map[string]any{}}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
	resp := o.post(t, stateless, string(body))
	raw, _ := io.ReadAll(resp.Body)
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || len(answer.Result) == 0 {
		t.Fatalf("mcp-go answered %d %s", resp.StatusCode, raw)
	}
	return answer.Result
}

// listingView is a menu of n tools with every optional field, some awkward
// strings, and the tool at refusedAt (if any) one MCP clients cannot be
// offered.
func listingView(n, refusedAt int) *view {
	var m menu.Menu
	for i := range n {
		s := awkward[i%len(awkward)]
		tool := &mcpv1alpha1.Tool{Name: fmt.Sprintf("t_%03d", i), Title: s,
			InputSchema: runtime.RawExtension{Raw: []byte(`{"properties":{"p":{"description":"a <b>","type":"string"}},"type":"object"}`)}}
		switch i % 4 {
		case 1:
			tool.OutputSchema = &runtime.RawExtension{Raw: []byte(`{"type":"object"}`)}
		case 2:
			tool.Annotations = &mcpv1alpha1.ToolAnnotations{Title: s, ReadOnlyHint: ptrTo(true), OpenWorldHint: ptrTo(false)}
		case 3:
			tool.Icons = []runtime.RawExtension{{Raw: []byte(`{"mimeType":"image/png","sizes":["48x48"],"src":"https://example.com/a.png?x=1&y=2","theme":"light"}`)}}
			tool.Execution = &runtime.RawExtension{Raw: []byte(`{"taskSupport":"optional"}`)}
			tool.Meta = &runtime.RawExtension{Raw: []byte(`{"n":1.50,"progressToken":"p","ui":{"resourceUri":"ui://a/<view>"}}`)}
		}
		m.Tools = append(m.Tools, menu.Entry{Name: fmt.Sprintf("mcp_s_t_%03d", i), Namespace: "ns", Server: "s", Tool: tool, Description: "about " + s})
	}
	if refusedAt >= 0 && refusedAt < n {
		refused := &m.Tools[refusedAt]
		refused.Tool.InputSchema.Raw = []byte(`{"properties":{"o":{"type":"object","x-mcp-header":"O"}},"type":"object"}`)
		m.Refused = []menu.Entry{*refused}
	}
	return &view{menu: m}
}

// TestListPagesAsMCPGo: every page the catalog lists, in both eras and
// for full and Search endpoints, is the result mcp-go gave when it held
// the tools, from the first page on and from a cursor made up between two
// names.
func TestListPagesAsMCPGo(t *testing.T) {
	search := listingView(30, 3)
	search.exposure = menu.Exposure{Search: true, AlwaysInclude: []*menu.Entry{&search.menu.Tools[29], &search.menu.Tools[3], &search.menu.Tools[15]}}
	m := &mcpHandlers{catalog: &Catalog{}}
	for _, tc := range []struct {
		name string
		vw   *view
	}{
		{"450 tools, one refused", listingView(450, 225)},
		{"exactly a page", listingView(mcpPageSize, -1)},
		{"a page and one, the last of the first page refused", listingView(mcpPageSize+1, mcpPageSize-1)},
		{"no tools", listingView(0, -1)},
		{"search", search},
	} {
		// What the endpoint offered mcp-go, built apart from listPage.
		refused := map[string]bool{}
		for _, e := range tc.vw.menu.Refused {
			refused[e.Name] = true
		}
		var offered []mcp.Tool
		if tc.vw.exposure.Search {
			find, call := searchToolDefinitions()
			offered = []mcp.Tool{find, call}
			for _, e := range tc.vw.exposure.AlwaysInclude {
				if !refused[e.Name] {
					offered = append(offered, mcpToolOf(e, tc.vw.exposesURIs()))
				}
			}
		} else {
			for i := range tc.vw.menu.Tools {
				if e := &tc.vw.menu.Tools[i]; !refused[e.Name] {
					offered = append(offered, mcpToolOf(e, tc.vw.exposesURIs()))
				}
			}
		}
		oracle := newOracle(t, "mcp-operator/ns/"+tc.name, offered)
		for _, stateless := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stateless=%v", tc.name, stateless), func(t *testing.T) {
				// walk follows the pages from cursor on, comparing each with
				// mcp-go's, and counts the tools listed.
				walk := func(cursor string) (listed int) {
					for {
						after, _ := base64.StdEncoding.DecodeString(cursor)
						got, next, err := m.listPage(tc.vw, tc.vw.menu.Tools, "mcp-operator/ns/"+tc.name, stateless, cursor != "", string(after))
						if err != nil {
							t.Fatal(err)
						}
						want := oracle.page(t, stateless, cursor)
						if !jsonEqual(got, want) {
							t.Fatalf("cursor %q:\n got %s\nwant %s", cursor, got, want)
						}
						var page struct {
							Tools      []json.RawMessage `json:"tools"`
							NextCursor string            `json:"nextCursor"`
						}
						_ = json.Unmarshal(want, &page)
						if next != page.NextCursor {
							t.Fatalf("cursor %q: next cursor %q, mcp-go's %q", cursor, next, page.NextCursor)
						}
						listed += len(page.Tools)
						if next == "" {
							return listed
						}
						cursor = next
					}
				}
				if listed := walk(""); listed != len(offered) {
					t.Fatalf("the pages held %d tools, %d offered", listed, len(offered))
				}
				// Between two names, as a cursor from an older revision may be.
				walk(base64.StdEncoding.EncodeToString([]byte("mcp_s_t_100x")))
			})
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return bytes.Equal(ra, rb)
}

// TestKeptPagesAreBounded: an endpoint keeps pages of its revision up to
// maxKeptListBytes, each once, and none of a revision it moved on from.
func TestKeptPagesAreBounded(t *testing.T) {
	h := &mcpHandler{revision: "r1", listed: newListPages()}
	page := bytes.Repeat([]byte("x"), maxKeptListBytes/4)
	for i := range 6 {
		h.keep(listKey{cursor: fmt.Sprint(i)}, "r1", page, fmt.Sprint(i+1))
	}
	h.keep(listKey{cursor: "0"}, "r1", page, "1") // kept already
	if len(h.listed.pages) != 4 || h.listed.size != maxKeptListBytes {
		t.Errorf("kept %d pages, %d bytes; want 4 pages, %d bytes", len(h.listed.pages), h.listed.size, maxKeptListBytes)
	}
	if h.listed.cursors["5"] || !h.listed.cursors["4"] {
		t.Errorf("cursors %v: want those of the pages kept only", h.listed.cursors)
	}
	h.listed = newListPages()
	h.keep(listKey{}, "r0", page, "")
	if len(h.listed.pages) != 0 {
		t.Error("a page of a revision the endpoint moved on from was kept")
	}
}
