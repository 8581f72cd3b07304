package toolcatalog

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

var _ = Describe("The revision a call goes to its server in", func() {
	var ns, endpoint string
	BeforeEach(func() {
		ns = env.Namespace()
		// mcp-go's server speaks 2026-07-28 and keeps sessions of the
		// revisions before; "how" tells how the call reached it.
		both := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		both.AddToolFunc("how", "Tells how it was called.", `{"type":"object"}`, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			session := "no session"
			if req.Header.Get("Mcp-Session-Id") != "" {
				session = "a session"
			}
			return mcp.NewToolResultText(fmt.Sprintf("%s, %s", req.Header.Get("MCP-Protocol-Version"), session)), nil
		})
		srv := readyServer(ns, "both", both.URL())
		Expect(env.Fetch(srv).Status.ServerInfo.ProtocolVersion).To(Equal("2026-07-28"), "the server's newest revision is what discovery records")
		collection(ns, "kit", "both")
		endpoint = catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"
	})

	how := func(revision string) string {
		result, err := askedCallerOf(endpoint, revision, "").session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_both_how", Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse(), textOf(result))
		return textOf(result)
	}

	It("is 2026-07-28 for a 2026-07-28 caller, whose requests and questions pass as they are", func() {
		Expect(how("")).To(Equal("2026-07-28, no session"))
	})

	It("is a 2025-11-25 session for a caller of an older revision, as the caller would call the server itself", func() {
		Expect(how("2025-11-25")).To(Equal("2025-11-25, a session"))
		Expect(how("2025-06-18")).To(Equal("2025-11-25, a session"))
	})

	It("is a 2025-11-25 session for a REST caller", func() {
		r := post("/v1/namespaces/"+ns+"/toolcollections/kit/execute", `{"name":"mcp_both_how","arguments":{}}`)
		Expect(r.code).To(Equal(200), string(r.body))
		Expect(r.json()["output"]).To(Equal("2025-11-25, a session"))
	})

	It("is 2026-07-28 for every caller of a server that keeps no session, so that what it asks still reaches a legacy caller", func() {
		// go-sdk's stateless server answers initialize without a session
		// id: on such a session it could ask nothing, so the catalog calls
		// it in 2026-07-28, and its input_required becomes a question on
		// the legacy caller's stream.
		stateless := testmcp.StartGoSDK(testmcp.GoSDKStateless)
		DeferCleanup(stateless.Stop)
		stateless.AddAskingTool()
		readyServer(ns, "nosession", stateless.URL())
		collection(ns, "asking", "nosession")
		asking := catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/asking/mcp"
		for _, revision := range []string{"2025-11-25", ""} {
			caller := askedCallerOf(asking, revision, "Ada")
			result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_nosession_ask", Arguments: map[string]any{}})
			Expect(err).NotTo(HaveOccurred(), revision)
			Expect(textOf(result)).To(Equal("hello Ada"), revision)
		}
		var calls []string
		for _, r := range stateless.Requests() {
			if r.Method == "tools/call" {
				calls = append(calls, r.Header.Get("MCP-Protocol-Version"))
			}
		}
		Expect(calls).NotTo(BeEmpty())
		Expect(calls).To(HaveEach("2026-07-28"), "every call went in 2026-07-28")
	})
})
