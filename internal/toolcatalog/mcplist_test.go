package toolcatalog

import (
	"encoding/base64"
	"fmt"
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

	It("answers a cursor it never issued through mcp-go, and keeps nothing of it", func() {
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
		first, err := s.ListTools(ctx, mcpclient.DefaultLimits)
		Expect(err).NotTo(HaveOccurred())
		h := catalogUnderTest.mcp.handlerFor(viewKey{kind: globalView})
		kept := func() []listKey {
			h.mu.Lock()
			defer h.mu.Unlock()
			var keys []listKey
			for k := range h.listed.pages {
				keys = append(keys, k)
			}
			return keys
		}
		Expect(kept()).To(ContainElement(listKey{modern: true}), "the page this 2026-07-28 session asked for")
		again, err := s.ListTools(ctx, mcpclient.DefaultLimits)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Tools).To(Equal(first.Tools))
	})
})
