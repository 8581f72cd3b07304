package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// A listing is every page of a menu, fetched as a client does: MCP
// tools/list following nextCursor, or one GET of the REST menu. Each is
// measured against http.ServeContent serving the very bytes the catalog
// answered, from a process of its own as the manager is: the floor of
// serving pre-encoded pages. The same from the benchmark's process is
// reported beside it, to show what the hop between processes costs.

// listedPage is one request of a listing and the catalog's answer to it.
type listedPage struct {
	method      string
	request     []byte
	answer      []byte
	contentType string
}

// listRequest is a 2026-07-28 tools/list request for the page at cursor.
func listRequest(cursor string) []byte {
	params := map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcpclient.RevisionStateless,
		mcp.MetaKeyClientInfo:         map[string]string{"name": "bench", "version": "1"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
	if cursor != "" {
		params["cursor"] = cursor
	}
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
	return raw
}

// fetchPage sends one request of a listing and returns the answer.
func fetchPage(url string, p *listedPage) (*http.Response, error) {
	req, err := http.NewRequest(p.method, url, bytes.NewReader(p.request))
	if err != nil {
		return nil, err
	}
	if p.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcpclient.RevisionStateless)
		req.Header.Set(mcp.HeaderMethod, "tools/list")
	}
	req.Header.Set("Accept-Encoding", "identity")
	return restClient.Do(req)
}

// captureToolsList lists url's tools page by page and keeps each page.
func captureToolsList(b *testing.B, url string) ([]*listedPage, int) {
	b.Helper()
	var pages []*listedPage
	tools, cursor := 0, ""
	for {
		p := &listedPage{method: http.MethodPost, request: listRequest(cursor)}
		resp, err := fetchPage(url, p)
		if err != nil {
			b.Fatal(err)
		}
		p.answer, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		p.contentType = resp.Header.Get("Content-Type")
		var msg struct {
			Result struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(jsonOf(p.answer, p.contentType), &msg); err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("tools/list: status %d, %v: %.200s", resp.StatusCode, err, p.answer)
		}
		pages = append(pages, p)
		tools += len(msg.Result.Tools)
		if cursor = msg.Result.NextCursor; cursor == "" {
			return pages, tools
		}
	}
}

// jsonOf is the JSON-RPC message of an answer, JSON or a one-event stream.
func jsonOf(body []byte, contentType string) []byte {
	if !strings.HasPrefix(contentType, "text/event-stream") {
		return body
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return []byte(data)
		}
	}
	return nil
}

// servePages serves the captured answers with http.ServeContent, page i
// at ?page=i whatever the request body, from a process of its own
// (./test/bench/pageserver) as the manager is, so that both pay the same
// hop between processes.
func servePages(b *testing.B, pages []*listedPage) string {
	b.Helper()
	dir := b.TempDir()
	for i, p := range pages {
		name := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(name, p.answer, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(name+".type", []byte(p.contentType), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	url, _ := startFloor(b, "./test/bench/pageserver", "-dir="+dir)
	return url
}

// servePagesInProcess serves the same answers from this process, where
// the hop costs a goroutine switch rather than a process's wakeup: how much
// of a listing's cost is the hop between processes.
func servePagesInProcess(b *testing.B, pages []*listedPage) string {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i, _ := strconv.Atoi(r.URL.Query().Get("page"))
		w.Header().Set("Content-Type", pages[i].contentType)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(pages[i].answer))
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// listing fetches every page from urlOf(i) and checks each answer is as
// long as the captured one (the same page; ids and revision are fixed).
func listing(pages []*listedPage, urlOf func(int) string) error {
	for i, p := range pages {
		resp, err := fetchPage(urlOf(i), p)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || n != int64(len(p.answer)) {
			return fmt.Errorf("page %d: status %d, %d bytes, want %d", i, resp.StatusCode, n, len(p.answer))
		}
	}
	return nil
}

// listCallers is how many clients list at once, in listRounds rounds.
const (
	listCallers = 8
	// listRounds is eight: with four, the same bytes served by the same
	// process moved by a third from one run to the next.
	listRounds = 8
)

// compareListings runs listings of the catalog and of the ServeContent
// baseline in interleaved rounds and reports listings/s of each.
func compareListings(b *testing.B, pages []*listedPage, catalogURL string, calls int) map[string]float64 {
	b.Helper()
	baseURL, inProcessURL := servePages(b, pages), servePagesInProcess(b, pages)
	paths := []struct {
		name  string
		urlOf func(int) string
	}{
		{"catalog", func(int) string { return catalogURL }},
		{"servecontent", func(i int) string { return baseURL + "/?page=" + strconv.Itoa(i) }},
		{"servecontent-inproc", func(i int) string { return inProcessURL + "/?page=" + strconv.Itoa(i) }},
	}
	// A block is about calls/8 requests, or four listings per caller (on
	// average: callers take listings from one count) if that is more: with
	// one each (a 51-page listing, 8 callers), a block
	// lasted as long as its slowest listing while the other callers sat
	// idle, and the same bytes served twice in a row moved by a quarter.
	perBlock := max(4*listCallers, calls/len(pages)/8)
	out := map[string]float64{}
	elapsed := map[string]time.Duration{}
	for r := range listRounds {
		for j := range paths {
			p := paths[(j+r)%len(paths)]
			callers := make([]func() error, listCallers)
			for c := range callers {
				callers[c] = func() error { return listing(pages, p.urlOf) }
			}
			took, errs := busy(callers, perBlock)
			if len(errs) > 0 {
				b.Fatalf("%s listing: %v", p.name, errs[0])
			}
			elapsed[p.name] += took
		}
	}
	for _, p := range paths {
		out[p.name+"-listings/s"] = float64(listRounds*perBlock) / elapsed[p.name].Seconds()
	}
	size := 0
	for _, p := range pages {
		size += len(p.answer)
	}
	out["pages"] = float64(len(pages))
	out["listing-bytes"] = float64(size)
	return out
}

// measureLists compares tools/list over the collection's /mcp and the
// collection's REST menu with ServeContent of the same bytes.
func measureLists(b *testing.B, s *callScenario, calls int) (toolsList, menu map[string]float64) {
	pages, tools := captureToolsList(b, s.mcpURL)
	if tools != s.servers*s.toolsEach {
		b.Fatalf("tools/list of %s: %d tools, want %d", s.name, tools, s.servers*s.toolsEach)
	}
	toolsList = compareListings(b, pages, s.mcpURL, calls)

	menuURL := strings.TrimSuffix(s.restURL, "/execute") + "/tools"
	get := &listedPage{method: http.MethodGet}
	resp, err := fetchPage(menuURL, get)
	if err != nil {
		b.Fatal(err)
	}
	get.answer, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	get.contentType = resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK || !bytes.Contains(get.answer, []byte(s.tool)) {
		b.Fatalf("menu of %s: status %d", s.name, resp.StatusCode)
	}
	menu = compareListings(b, []*listedPage{get}, menuURL, calls)
	return toolsList, menu
}
