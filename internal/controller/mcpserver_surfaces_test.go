package controller

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

func greeting(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return mcp.NewGetPromptResult("hello", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello"))}), nil
}

func contents(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "text"}}, nil
}

var _ = Describe("MCPServer prompts and resources", func() {
	It("counts the prompts, resources and templates a server offers, and follows a change it announces", func() {
		up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true, Surfaces: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(up.Stop)
		up.AddTools("echo")
		up.MCP.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("name")), greeting)
		up.MCP.AddResource(mcp.NewResource("test://static/a", "a"), contents)
		up.MCP.AddResource(mcp.NewResource("test://static/b", "b"), contents)
		up.MCP.AddResourceTemplate(mcp.NewResourceTemplate("test://items/{id}", "item"), contents)

		srv := createServer(newNamespace(), "surfaces", up.URL())
		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		got := fetch(srv)
		Expect(got.Status.Prompts).To(HaveValue(HaveField("Count", BeEquivalentTo(1))))
		Expect(got.Status.Resources).To(HaveValue(HaveField("Count", BeEquivalentTo(2))))
		Expect(got.Status.ResourceTemplates).To(HaveValue(HaveField("Count", BeEquivalentTo(1))))
		for _, summary := range []*mcpv1alpha1.SurfaceSummary{got.Status.Prompts, got.Status.Resources, got.Status.ResourceTemplates} {
			Expect(summary.Hash).To(MatchRegexp("^[0-9a-f]{64}$"))
			Expect(summary.Truncated).To(BeFalse())
		}
		Expect(got.Status.ToolCount).To(BeEquivalentTo(1), "the tools as before")
		promptsHash := got.Status.Prompts.Hash

		By("a prompt added: the server says the list changed, and status follows without waiting for a refresh")
		up.MCP.AddPrompt(mcp.NewPrompt("farewell"), greeting)
		Eventually(func(g Gomega) {
			now := fetch(srv).Status.Prompts
			g.Expect(now).NotTo(BeNil())
			g.Expect(now.Count).To(BeEquivalentTo(2))
			g.Expect(now.Hash).NotTo(Equal(promptsHash))
		}).Should(Succeed())
		Expect(fetch(srv).Status.Resources.Hash).To(Equal(got.Status.Resources.Hash), "the resources unchanged")
	})

	It("has no summary for what a server does not offer, nor for a listing it answers \"method not found\"", func() {
		up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP,
			Refuse: []string{string(mcp.MethodResourcesTemplatesList)}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(up.Stop)
		up.AddTools("echo")
		up.MCP.AddResource(mcp.NewResource("test://static/a", "a"), contents)

		srv := createServer(newNamespace(), "resources-only", up.URL())
		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		got := fetch(srv)
		Expect(got.Status.Prompts).To(BeNil(), "no prompts capability")
		Expect(got.Status.Resources).To(HaveValue(HaveField("Count", BeEquivalentTo(1))))
		Expect(got.Status.ResourceTemplates).To(BeNil(), "resources/templates/list refused")
		Expect(got.Status.ServerInfo.Completions).To(BeFalse())
	})

	It("stays Ready on its tools when a listing besides them fails, keeping what status said of it", func() {
		up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true, Surfaces: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(up.Stop)
		up.AddTools("echo")
		up.MCP.AddPrompt(mcp.NewPrompt("greet"), greeting)
		up.MCP.AddResource(mcp.NewResource("test://static/a", "a"), contents)

		// Each change below is announced (list_changed), which re-lists.
		srv := createServer(newNamespace(), "flaky", up.URL())
		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		before := fetch(srv).Status
		Expect(before.Resources).To(HaveValue(HaveField("Count", BeEquivalentTo(1))))

		By("resources/list answering 500, and a prompt added: the prompts follow, the resources keep their summary")
		up.SetFailing(string(mcp.MethodResourcesList))
		up.MCP.AddPrompt(mcp.NewPrompt("farewell"), greeting)
		Eventually(func() int32 { return fetch(srv).Status.Prompts.Count }).Should(BeEquivalentTo(2))
		Consistently(func(g Gomega) {
			now := fetch(srv)
			g.Expect(readyOf(now)()).To(Equal("True/ToolsDiscovered"))
			g.Expect(now.Status.ToolCount).To(BeEquivalentTo(1))
			g.Expect(now.Status.Resources).To(Equal(before.Resources))
		}, 3*time.Second, 500*time.Millisecond).Should(Succeed())

		By("working again: a resource added is counted")
		up.SetFailing()
		up.MCP.AddResource(mcp.NewResource("test://static/b", "b"), contents)
		Eventually(func() int32 { return fetch(srv).Status.Resources.Count }).Should(BeEquivalentTo(2))
	})
})
