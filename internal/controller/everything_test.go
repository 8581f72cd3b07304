package controller

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// A server nobody here wrote: the MCP reference server from npm.
var _ = Describe("MCPServer against @modelcontextprotocol/server-everything", func() {
	DescribeTable("discovers its tools",
		func(mode string, transport mcpv1alpha1.TransportType, tools int, asking types.GomegaMatcher) {
			everything, err := testmcp.StartEverything(mode)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(everything.Stop)

			srv := createServer(newNamespace(), "everything", everything.URL())
			Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
			got := fetch(srv)
			Expect(got.Status.ServerInfo.Transport).To(Equal(transport))
			// Its 13, and over Streamable HTTP the three it offers a
			// client that declares elicitation (both modes) and sampling,
			// as the operator does there so that the catalog relays their
			// requests to callers; never get-roots-list, since the operator
			// declares no roots, and over SSE, where it declares nothing,
			// none of them.
			Expect(toolNames(srv)).To(ContainElements("mcp_everything_echo", "mcp_everything_get-sum",
				"mcp_everything_get-tiny-image", "mcp_everything_get-structured-content"))
			Expect(toolNames(srv)).NotTo(ContainElement("mcp_everything_get-roots-list"))
			Expect(got.Status.ToolCount).To(BeEquivalentTo(tools))
			Expect(toolNames(srv)).To(asking)
			// What it offers besides tools (server-everything's
			// dist/prompts and dist/resources): four prompts, a resource
			// for each of the seven files in dist/docs, and two templates.
			Expect(got.Status.Prompts).To(HaveValue(HaveField("Count", BeEquivalentTo(4))))
			Expect(got.Status.Resources).To(HaveValue(HaveField("Count", BeEquivalentTo(7))))
			Expect(got.Status.ResourceTemplates).To(HaveValue(HaveField("Count", BeEquivalentTo(2))))
			Expect(got.Status.ServerInfo.Completions).To(BeTrue())
			for _, tool := range got.Status.Tools {
				if tool.OriginalName == "get-sum" {
					Expect(string(tool.InputSchema.Raw)).To(ContainSubstring(`"a"`))
					Expect(string(tool.InputSchema.Raw)).To(ContainSubstring(`"b"`))
				}
			}
		},
		Entry("over SSE", "sse", mcpv1alpha1.TransportSSE, 13, Not(ContainElement(HavePrefix("mcp_everything_trigger-elicitation")))),
		Entry("over Streamable HTTP", "streamableHttp", mcpv1alpha1.TransportStreamableHTTP, 16,
			ContainElements("mcp_everything_trigger-elicitation-request", "mcp_everything_trigger-url-elicitation", "mcp_everything_trigger-sampling-request")),
	)
})
