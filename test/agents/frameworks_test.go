package agents

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// sdkRequest is one HTTP request a framework made to the catalog, as its
// script recorded it.
type sdkRequest struct {
	Method          string `json:"method"`
	RPC             string `json:"rpc"`
	Bearer          bool   `json:"bearer"`
	ProtocolVersion string `json:"protocolVersion"`
	SessionID       string `json:"sessionId"`
	Status          int    `json:"status"`
}

// rpcs are the JSON-RPC methods of POSTs, in order, and "GET" for a
// listening stream.
func rpcs(reqs []sdkRequest) []string {
	var out []string
	for _, r := range reqs {
		if r.Method == http.MethodGet {
			out = append(out, "GET")
			continue
		}
		out = append(out, r.RPC)
	}
	return out
}

// expectAuthenticated: every request carried the agent's token and was
// accepted.
func expectAuthenticated(reqs []sdkRequest) {
	Expect(reqs).NotTo(BeEmpty())
	for _, r := range reqs {
		Expect(r.Bearer).To(BeTrue(), "a request without the token: %+v", r)
		Expect(r.Status).To(BeNumerically("<", 300), "a refused request: %+v", r)
	}
}

// textPart is an MCP text content item.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// noProperties tells whether a served input schema declares no property.
func noProperties(schema json.RawMessage) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	Expect(json.Unmarshal(schema, &s)).To(Succeed())
	return len(s.Properties) == 0
}

var _ = Describe("Agent frameworks over the collection's MCP endpoint", func() {
	It("refuses a request without the agent's token, so every framework below proves its header", func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, catalogURL+collectionPath("/mcp"),
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(resp.Header.Get("WWW-Authenticate")).To(HavePrefix("Bearer"))
	})

	It("OpenAI Agents SDK: MCPServerStreamableHttp, strict function tools, calls and failures through invoke", func() {
		var run struct {
			Tools         []string `json:"tools"`
			Strict        []string `json:"strict"`
			NonStrict     []string `json:"nonStrict"`
			SessionID     *string  `json:"sessionId"`
			ListRequests  int      `json:"listRequests"`
			SecondListing []string `json:"secondListing"`
			Calls         struct {
				Convert, Sum, ToolError, BadArguments struct {
					Output textPart `json:"output"`
					Threw  string   `json:"threw"`
				}
				UnknownTool, UnknownToolWithErrorFunction struct {
					Output string `json:"output"`
					Threw  string `json:"threw"`
				}
			} `json:"calls"`
			Requests []sdkRequest `json:"requests"`
		}
		runScript("openai-agents.mjs", &run)

		By("the collection's tools, hyphens made underscores by the SDK's tool()")
		var want, wantStrict, wantNonStrict []string
		for _, name := range menuNames {
			renamed := strings.ReplaceAll(name, "-", "_")
			want = append(want, renamed)
			// convertSchemasToStrict keeps a schema that declares no
			// properties non-strict: strict mode would close the open
			// object (utils/strictToolSchema.mjs).
			if noProperties(menuSchemas[name]) {
				wantNonStrict = append(wantNonStrict, renamed)
			} else {
				wantStrict = append(wantStrict, renamed)
			}
		}
		Expect(run.Tools).To(Equal(want))
		Expect(run.SecondListing).To(Equal(want))
		Expect(run.Strict).To(Equal(wantStrict))
		Expect(run.NonStrict).To(Equal(wantNonStrict))
		Expect(run.NonStrict).To(Equal([]string{"mcp_everything_get_env", "mcp_everything_get_tiny_image",
			"mcp_everything_toggle_simulated_logging", "mcp_everything_toggle_subscriber_updates", "mcp_everything_trigger_elicitation_request"}))
		GinkgoWriter.Printf("Agents SDK: %d tools strict, not strict: %s\n", len(run.Strict), strings.Join(run.NonStrict, ", "))

		By("results and failures come back as the observation, none thrown")
		Expect(run.Calls.Convert.Output).To(Equal(textPart{"text", "6.21371 mi"}))
		Expect(run.Calls.Sum.Output).To(Equal(textPart{"text", "The sum of 2 and 40 is 42."}))
		Expect(run.Calls.ToolError.Output).To(Equal(textPart{"text", "cannot convert kg to m"}))
		Expect(run.Calls.BadArguments.Output).To(Equal(textPart{"text",
			"arguments do not match the input schema of mcp_demo_convert_units: at /value: got string, want number"}))
		for _, threw := range []string{run.Calls.Convert.Threw, run.Calls.Sum.Threw, run.Calls.ToolError.Threw, run.Calls.BadArguments.Threw} {
			Expect(threw).To(BeEmpty())
		}
		// A JSON-RPC error (an unknown tool) reaches the model as the SDK's
		// default errorFunction text, the catalog's message lost.
		Expect(run.Calls.UnknownTool.Threw).To(BeEmpty())
		Expect(run.Calls.UnknownTool.Output).To(Equal("An error occurred while running the tool. Please try again."))
		// A server's errorFunction passes it on.
		Expect(run.Calls.UnknownToolWithErrorFunction.Threw).To(BeEmpty())
		Expect(run.Calls.UnknownToolWithErrorFunction.Output).To(Equal("The tool call failed: tool mcp_demo_no_such_tool not found"))

		By("stateless 2026-07-28 with the token on every request; cacheToolsList caches nothing without a session")
		expectAuthenticated(run.Requests)
		Expect(run.SessionID).To(BeNil())
		for _, r := range run.Requests {
			Expect(r.ProtocolVersion).To(Equal("2026-07-28"))
			Expect(r.SessionID).To(BeEmpty())
		}
		Expect(run.ListRequests).To(Equal(2), "two listings, two tools/list, cacheToolsList: true notwithstanding")
		Expect(rpcs(run.Requests)).To(Equal([]string{"server/discover", "tools/list", "tools/list",
			"tools/call", "tools/call", "tools/call", "tools/call", "tools/call",
			"server/discover", "tools/call"}))
	})

	It("Vercel AI SDK: createMCPClient over http, tools(), execute and what the model reads", func() {
		type called struct {
			IsError bool `json:"isError"`
			Output  struct {
				Type  string     `json:"type"`
				Value []textPart `json:"value"`
			} `json:"output"`
			Threw string `json:"threw"`
		}
		var run struct {
			Tools         []string        `json:"tools"`
			ConvertSchema json.RawMessage `json:"convertSchema"`
			Calls         struct {
				Convert, Sum, ToolError, BadArguments called
				UnknownTool                           struct {
					Threw string `json:"threw"`
				}
			} `json:"calls"`
			Requests       []sdkRequest `json:"requests"`
			UncaughtErrors []string     `json:"uncaughtErrors"`
		}
		runScript("ai-sdk.mjs", &run)

		By("the collection's tools under their own names, each schema closed")
		Expect(run.Tools).To(Equal(menuNames))
		var schema map[string]any
		Expect(json.Unmarshal(menuSchemas[convertTool], &schema)).To(Succeed())
		schema["additionalProperties"] = false
		closed, err := json.Marshal(schema)
		Expect(err).NotTo(HaveOccurred())
		Expect(run.ConvertSchema).To(MatchJSON(closed))

		By("results and isError results reach the model as content; a JSON-RPC error throws")
		expect := func(c called, isError bool, text string) {
			Expect(c.Threw).To(BeEmpty())
			Expect(c.IsError).To(Equal(isError))
			Expect(c.Output.Type).To(Equal("content"))
			Expect(c.Output.Value).To(Equal([]textPart{{"text", text}}))
		}
		expect(run.Calls.Convert, false, "6.21371 mi")
		expect(run.Calls.Sum, false, "The sum of 2 and 40 is 42.")
		expect(run.Calls.ToolError, true, "cannot convert kg to m")
		expect(run.Calls.BadArguments, true, "arguments do not match the input schema of mcp_demo_convert_units: at /value: got string, want number")
		Expect(run.Calls.UnknownTool.Threw).To(Equal("MCPClientError: tool mcp_demo_no_such_tool not found"))
		Expect(run.UncaughtErrors).To(BeEmpty())

		By("stateless 2026-07-28 with the token on every request")
		expectAuthenticated(run.Requests)
		for _, r := range run.Requests {
			Expect(r.ProtocolVersion).To(Equal("2026-07-28"))
			Expect(r.SessionID).To(BeEmpty())
		}
		Expect(rpcs(run.Requests)).To(Equal([]string{"server/discover", "tools/list",
			"tools/call", "tools/call", "tools/call", "tools/call", "tools/call"}))
	})

	It("LangChain: MultiServerMCPClient over streamable http, getTools(), invoke, createAgent's observations", func() {
		type observed struct {
			Content  string          `json:"content"`
			Status   string          `json:"status"`
			Artifact json.RawMessage `json:"artifact"`
		}
		var run struct {
			Tools           []string `json:"tools"`
			Invoke          string   `json:"invoke"`
			InvokeToolError struct {
				Threw string `json:"threw"`
			} `json:"invokeToolError"`
			Calls struct {
				Convert, Sum, ToolError, BadArguments, Structured observed
			} `json:"calls"`
			CallsWithErrorMiddleware struct {
				ToolError, BadArguments observed
			} `json:"callsWithErrorMiddleware"`
			StructuredTextOnly observed     `json:"structuredTextOnly"`
			Prefixed           []string     `json:"prefixed"`
			Requests           []sdkRequest `json:"requests"`
		}
		runScript("langchain.mjs", &run)

		By("the collection's tools under their own names")
		Expect(run.Tools).To(Equal(menuNames))
		Expect(run.Invoke).To(Equal("6.21371 mi"))

		By("an isError result throws from invoke; createAgent's tool node makes it an error observation")
		Expect(run.InvokeToolError.Threw).To(Equal(
			"ToolException: MCP tool 'mcp_demo_convert_units' on server 'catalog' returned an error: cannot convert kg to m"))
		Expect(run.Calls.Convert).To(Equal(observed{"6.21371 mi", "success", json.RawMessage(`[]`)}))
		Expect(run.Calls.Sum).To(Equal(observed{"The sum of 2 and 40 is 42.", "success", json.RawMessage(`[]`)}))
		Expect(run.Calls.ToolError).To(Equal(observed{
			"ToolException: MCP tool 'mcp_demo_convert_units' on server 'catalog' returned an error: cannot convert kg to m\n Please fix your mistakes.",
			"error", json.RawMessage(`null`)}))
		// Arguments the tool's schema refuses never leave LangChain, and the
		// observation carries the JavaScript stack of the refusal, paths and
		// all (langchain's ToolInvocationError puts error.stack in its
		// message).
		Expect(run.Calls.BadArguments.Status).To(Equal("error"))
		Expect(run.Calls.BadArguments.Content).To(HavePrefix(`Error invoking tool 'mcp_demo_convert_units' with kwargs {"value":"ten","from":"km","to":"mi"} ` +
			"with error: Error: Received tool input did not match expected schema\n    at "))
		Expect(run.Calls.BadArguments.Content).To(ContainSubstring("/node_modules/@langchain/core/dist/tools/index.js:"))
		Expect(run.Calls.BadArguments.Content).To(HaveSuffix("\n Please fix the error and try again."))
		// toolErrorMiddleware decides what the model reads instead.
		Expect(run.CallsWithErrorMiddleware.ToolError).To(Equal(observed{
			"MCP tool 'mcp_demo_convert_units' on server 'catalog' returned an error: cannot convert kg to m", "error", json.RawMessage(`null`)}))
		Expect(run.CallsWithErrorMiddleware.BadArguments).To(Equal(observed{
			"Received tool input did not match expected schema", "error", json.RawMessage(`null`)}))

		By("structuredContent with its JSON text block reaches the model twice, unless afterToolCall keeps the text")
		var block struct {
			Type              string          `json:"type"`
			Text              string          `json:"text"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		Expect(run.Calls.Structured.Status).To(Equal("success"))
		Expect(json.Unmarshal([]byte(run.Calls.Structured.Content), &block)).To(Succeed(), run.Calls.Structured.Content)
		Expect(block.Type).To(Equal("text"))
		Expect(block.StructuredContent).To(MatchJSON(block.Text), "the same data as text and as structuredContent, in one string")
		Expect(block.StructuredContent).To(MatchJSON(`{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}`))
		Expect(run.Calls.Structured.Artifact).To(MatchJSON(`[{"type":"mcp_structured_content","data":` + string(block.StructuredContent) + `}]`))
		Expect(run.StructuredTextOnly.Content).To(MatchJSON(block.Text))
		Expect(run.StructuredTextOnly.Status).To(Equal("success"))

		By("prefixToolNameWithServerName puts the server's key before names already up to 64 characters")
		var prefixed, over []string
		for _, name := range menuNames {
			prefixed = append(prefixed, "team-tools-production__"+name)
		}
		for _, name := range run.Prefixed {
			if len(name) > 64 {
				over = append(over, name)
			}
		}
		Expect(run.Prefixed).To(Equal(prefixed))
		Expect(over).To(Equal([]string{"team-tools-production__mcp_everything_trigger-elicitation-request",
			"team-tools-production__mcp_everything_trigger-long-running-operation"}))

		By("a 2025-11-25 session (@modelcontextprotocol/sdk 1.x) with the token on every request")
		expectAuthenticated(run.Requests)
		Expect(run.Requests[0].RPC).To(Equal("initialize"))
		for _, r := range run.Requests[1:] {
			if r.RPC == "initialize" {
				continue // the next client's
			}
			Expect(r.ProtocolVersion).To(Equal("2025-11-25"))
			Expect(r.SessionID).NotTo(BeEmpty())
		}
		calls := 0
		for _, m := range rpcs(run.Requests) {
			if m == "tools/call" {
				calls++
			}
		}
		// invoke twice, the agent four times and once more with the
		// middleware (bad arguments never went), the text-only client once.
		Expect(calls).To(Equal(8))
	})

	It("LangChain: getTools() keeps the tools it loaded after list_changed, until close()", func() {
		By("a collection of its own, over a demo server of its own, whose menu the spec changes")
		ns2 := env.Namespace()
		demoURL := startDemoServer()
		srv := env.CreateServer(ns2, "demo", demoURL)
		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: collection},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"demo"}}}}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())
		DeferCleanup(func() { _ = env.Client.Delete(env.Ctx, tc) })
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "agent"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "catalog-collection-caller"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "agent"}}}
		Expect(env.Client.Create(ctx, rb)).To(Succeed())
		mcpURL := catalogURL + "/v1/namespaces/" + ns2 + "/toolcollections/" + collection + "/mcp"
		var before []string
		for _, name := range menuNames {
			if strings.HasPrefix(name, "mcp_demo_") {
				before = append(before, name)
			}
		}
		Eventually(func(g Gomega) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet,
				catalogURL+"/v1/namespaces/"+ns2+"/toolcollections/"+collection+"/tools", nil)
			g.Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			var menu struct {
				Tools []json.RawMessage `json:"tools"`
			}
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			g.Expect(json.NewDecoder(resp.Body).Decode(&menu)).To(Succeed())
			g.Expect(menu.Tools).To(HaveLen(len(before)))
		}).Should(Succeed())

		var run struct {
			Before  []string `json:"before"`
			Greeted bool     `json:"greeted"`
			Pin     struct {
				Content string `json:"content"`
				Status  string `json:"status"`
			} `json:"pin"`
			NotifiedBy string       `json:"notifiedBy"`
			After      []string     `json:"after"`
			AfterClose []string     `json:"afterClose"`
			Fresh      []string     `json:"fresh"`
			Requests   []sdkRequest `json:"requests"`
		}
		runScript("langchain.mjs", &run, "MODE=listchanged", "MCP_URL="+mcpURL, "PIN_ZONE=Europe/Paris")
		changed := append([]string{"mcp_demo_time_in_europe_paris"}, before...)
		sort.Strings(changed)
		Expect(run.Before).To(Equal(before))
		Expect(run.Greeted).To(BeTrue(), "the listening stream began with list_changed")
		Expect(run.Pin.Content).To(Equal("added time_in_europe_paris"))
		Expect(run.Pin.Status).To(Equal("success"))
		Expect(run.NotifiedBy).To(Equal("catalog"), "onToolsListChanged was called for the server")
		Expect(run.After).To(Equal(before), "getTools() after list_changed: the tools loaded at connection")
		Expect(run.AfterClose).To(Equal(changed), "close() then getTools(): listed anew")
		Expect(run.Fresh).To(Equal(changed))
		expectAuthenticated(run.Requests)
	})
})
