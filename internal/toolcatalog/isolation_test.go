package toolcatalog

import (
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// badHeaderSchema puts x-mcp-header on an object-typed property, which
// the MCP libraries refuse by panicking; the upstream serves it under a
// stand-in key that rewritten carries past its own library's check, as a
// server built with another library (or none) would send it.
const badHeaderSchema = `{"type":"object","properties":{"filter":{"type":"object","x-stand-in":"X-Filter"}}}`

var _ = Describe("A tool definition the MCP library refuses", func() {
	It("is left out of the MCP endpoints only, and reported on its server and on each collection", func() {
		ns := env.Namespace()
		upstream := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(upstream.Stop)
		upstream.AddRawTool("search", "Searches with a header filter.", badHeaderSchema, func(json.RawMessage) string { return "found" })
		upstream.AddRawTool("plain", "A plain tool.", `{"type":"object"}`, func(json.RawMessage) string { return "plain answer" })
		srv := readyServer(ns, "odd", testenv.Rewriting(upstream.URL(), "x-stand-in", "x-mcp-header"))
		collection(ns, "mixed", "odd")

		By("the MCPServer warns on the tool")
		var warned mcpv1alpha1.Tool
		for _, t := range env.Fetch(srv).Status.Tools {
			if t.Name == "mcp_odd_search" {
				warned = t
			}
		}
		Expect(warned.Warnings).To(ContainElement(ContainSubstring("MCP clients are not offered this tool: property \"filter\": x-mcp-header can only be applied to primitive types")))
		Expect(meta.IsStatusConditionTrue(env.Fetch(srv).Status.Conditions, mcpv1alpha1.ConditionToolWarnings)).To(BeTrue())

		By("the collection says so")
		Eventually(func() string {
			var tc mcpv1alpha1.ToolCollection
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mixed"}, &tc)).To(Succeed())
			if c := meta.FindStatusCondition(tc.Status.Conditions, mcpv1alpha1.ConditionToolsRefused); c != nil {
				return c.Reason + ": " + c.Message
			}
			return ""
		}).Should(HavePrefix("InvalidForMCP: Served over REST but left out of the MCP endpoint, because MCP clients cannot be offered their definition: mcp_odd_search;"))

		By("REST still serves and calls it")
		Expect(get("/v1/namespaces/" + ns + "/toolcollections/mixed/tools").body).To(ContainSubstring("mcp_odd_search"))
		r := post("/v1/namespaces/"+ns+"/toolcollections/mixed/execute", `{"name":"mcp_odd_search","arguments":{"filter":{}}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["output"]).To(Equal("found"))

		By("the MCP endpoints serve every other tool, the global one included")
		for _, path := range []string{"/v1/namespaces/" + ns + "/toolcollections/mixed/mcp", "/mcp"} {
			s := connectMCP(catalog.URL+path, nil, nil)
			listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
			Expect(err).NotTo(HaveOccurred(), path)
			var names []string
			for _, t := range listed.Tools {
				names = append(names, t.Name)
			}
			Expect(names).To(ContainElement("mcp_odd_plain"), path)
			Expect(names).NotTo(ContainElement("mcp_odd_search"), path)
			called, err := s.CallTool(ctx, "mcp_odd_plain", json.RawMessage(`{}`), mcpclient.CallOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(string(called.Content[0])).To(ContainSubstring("plain answer"))
		}
		Expect(testutil.ToFloat64(refusedTools.WithLabelValues("collection " + ns + "/mixed"))).To(BeEquivalentTo(1))
	})
})
