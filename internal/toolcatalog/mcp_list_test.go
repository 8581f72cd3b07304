package toolcatalog

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// sdkListing lists every tool a go-sdk client (2026-07-28) sees, page by
// page.
func sdkListing(url string) []string {
	caller := callerOf(url, "2026-07-28")
	var names []string
	cursor := ""
	for {
		page, err := caller.session.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		Expect(err).NotTo(HaveOccurred())
		for _, t := range page.Tools {
			names = append(names, t.Name)
		}
		if page.NextCursor == "" {
			return names
		}
		cursor = page.NextCursor
	}
}

// mcpListing lists every tool a legacy (2025-11-25) session sees.
func mcpListing(url string) []string {
	s, err := mcpclient.Connect(ctx, mcpclient.Target{URL: url, Transport: mcpclient.TransportStreamableHTTP,
		Revision: "2025-11-25", Timeout: 10 * time.Second}, nil)
	Expect(err).NotTo(HaveOccurred())
	defer s.Close()
	Expect(s.Info().ProtocolVersion).To(Equal("2025-11-25"))
	listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
	Expect(err).NotTo(HaveOccurred())
	names := make([]string, len(listed.Tools))
	for i, t := range listed.Tools {
		names[i] = t.Name
	}
	return names
}

// keptPages is how many tools/list pages the endpoint of collection "big" keeps.
func keptPages(ns string) int {
	h := catalogUnderTest.mcp.handlerFor(viewKey{kind: collectionView, namespace: ns, name: "big"})
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.listed.pages)
}

var _ = Describe("A collection's tools/list pages", func() {
	var (
		ns       string
		upstream *testmcp.Server
		url      string
		want     []string
	)
	BeforeEach(func() {
		ns = env.Namespace()
		upstream = testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		var names []string
		want = nil
		for i := range 450 {
			names = append(names, fmt.Sprintf("tool_%03d", i))
			want = append(want, fmt.Sprintf("mcp_big_tool_%03d", i))
		}
		upstream.AddTools(names...)
		readyServer(ns, "big", upstream.URL())
		collection(ns, "big", "big")
		menuHolds("/v1/namespaces/"+ns+"/toolcollections/big/tools", 450)
		url = catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/big/mcp"
	})

	It("are kept once per revision and era, and each listing is whole and in order", func() {
		Expect(mcpListing(url)).To(Equal(want))
		Expect(keptPages(ns)).To(Equal(3), "three pages of 200, 200 and 50, legacy")
		Expect(sdkListing(url)).To(Equal(want))
		Expect(keptPages(ns)).To(Equal(6), "and the same three for 2026-07-28, whose answers differ")

		By("kept pages answer as mcp-go did")
		Expect(mcpListing(url)).To(Equal(want))
		Expect(sdkListing(url)).To(Equal(want))
		Expect(keptPages(ns)).To(Equal(6))

		By("a changed menu is listed anew")
		upstream.AddTools("tool_450")
		want = append(want, "mcp_big_tool_450")
		Eventually(mcpListing).WithArguments(url).Should(Equal(want))
		// A listing that straddled the change may have had its first pages
		// from the old revision; a second one is all the new revision's.
		for range 2 {
			Expect(mcpListing(url)).To(Equal(want))
			Expect(sdkListing(url)).To(Equal(want))
		}
		Expect(keptPages(ns)).To(Equal(6), "the new revision's pages")
	})

	It("answers a cursor it never issued, as mcp-go did, and keeps nothing of it", func() {
		Expect(sdkListing(url)).To(Equal(want))
		before := keptPages(ns)
		caller := callerOf(url, "2026-07-28")
		for _, made := range []string{"tool_100", "mcp_big_tool_399", "zzz"} {
			page, err := caller.session.ListTools(ctx, &sdk.ListToolsParams{Cursor: base64.StdEncoding.EncodeToString([]byte(made))})
			Expect(err).NotTo(HaveOccurred())
			switch made {
			case "tool_100": // sorts after every mcp_ name
				Expect(page.Tools).To(BeEmpty())
			case "mcp_big_tool_399":
				Expect(page.Tools).To(HaveLen(50))
				Expect(page.Tools[0].Name).To(Equal("mcp_big_tool_400"), "mcp-go starts after the cursor's name")
			case "zzz":
				Expect(page.Tools).To(BeEmpty())
			}
		}
		Expect(keptPages(ns)).To(Equal(before))
	})

	It("answers every tools/list itself, however it is asked, since mcp-go holds no tools", func() {
		path := strings.TrimPrefix(url, catalog.URL)
		plain := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
		headers := func(more ...string) []string { return append(append([]string{}, plain...), more...) }
		toolsIn := func(r response) int {
			Expect(r.code).To(Equal(http.StatusOK), string(r.body))
			return strings.Count(string(r.body), `"name":"mcp_big_tool_`)
		}
		init := callTo(catalog.URL, path, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, plain...)
		session := init.header.Get("Mcp-Session-Id")
		Expect(session).NotTo(BeEmpty(), string(init.body))

		By("a legacy request naming its own revision in _meta is a legacy request")
		r := callTo(catalog.URL, path, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
			headers("Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")...)
		Expect(toolsIn(r)).To(Equal(mcpPageSize))
		By("a 2026-07-28 listing with an Mcp-Name header (which names only a call's tool)")
		statelessList := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		r = callTo(catalog.URL, path, statelessList, headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list", "Mcp-Name", "x")...)
		Expect(toolsIn(r)).To(Equal(mcpPageSize))
		By("a 2026-07-28 listing whose headers disagree with its body")
		r = callTo(catalog.URL, path, statelessList, headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call")...)
		Expect(r.code).To(Equal(http.StatusBadRequest), string(r.body))
		Expect(string(r.body)).To(ContainSubstring(`"code":-32020`))
		By("a cursor that is not one the endpoint gave")
		r = callTo(catalog.URL, path, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"not base64!"}}`,
			headers("Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")...)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(string(r.body)).To(ContainSubstring(`"code":-32602`))
		Expect(string(r.body)).NotTo(ContainSubstring(`"tools"`))
		By("params the catalog cannot read")
		r = callTo(catalog.URL, path, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"name":1}}`,
			headers("Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")...)
		Expect(r.code).To(Equal(http.StatusBadRequest), string(r.body))
		Expect(string(r.body)).To(ContainSubstring(`"code":-32600`))
		Expect(string(r.body)).NotTo(ContainSubstring(`"tools"`))
	})

	It("serves many callers at once while the menu changes", func() {
		var wg sync.WaitGroup
		failures := make(chan error, 64)
		for range 8 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				s := connectMCP(url, nil, nil)
				for range 10 {
					listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
					if err != nil {
						failures <- err
						return
					}
					if n := len(listed.Tools); n < 450 || n > 451 {
						failures <- fmt.Errorf("a listing held %d tools", n)
						return
					}
				}
			}()
		}
		upstream.AddTools("tool_450")
		wg.Wait()
		close(failures)
		Expect(failures).To(BeEmpty())
		Eventually(mcpListing).WithArguments(url).Should(HaveLen(451))
	})
})

var _ = Describe("The whole menu's tools/list", func() {
	It("is kept once per revision and era when callers are not told apart", func() {
		ns := env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		s := connectMCP(catalog.URL+"/mcp", nil, nil)
		h := catalogUnderTest.mcp.handlerFor(viewKey{kind: globalView})
		keptFirst := func() json.RawMessage {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.listed.pages[listKey{stateless: true}]
		}
		// Other specs' servers come and go in the whole menu; a listing
		// that no change overtook leaves its page kept, and the next
		// listing of the same revision is answered from it.
		Eventually(func(g Gomega) {
			listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
			g.Expect(err).NotTo(HaveOccurred())
			page := keptFirst()
			g.Expect(page).NotTo(BeEmpty())
			var kept struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			g.Expect(json.Unmarshal(page, &kept)).To(Succeed())
			g.Expect(kept.Tools).To(HaveLen(min(len(listed.Tools), mcpPageSize)))
			for i, t := range kept.Tools {
				g.Expect(t.Name).To(Equal(listed.Tools[i].Name))
			}
		}).Should(Succeed())
	})
})
