package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/santhosh-tekuri/jsonschema/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// searchedCollection creates a collection with exposure Search and waits
// for its menu.
func searchedCollection(ns, name string, alwaysInclude []string, servers ...string) string {
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: servers},
			Exposure: mcpv1alpha1.ExposureSearch, AlwaysInclude: alwaysInclude}}
	Expect(env.Client.Create(ctx, tc)).To(Succeed())
	Eventually(func() int {
		return get("/v1/namespaces/" + ns + "/toolcollections/" + name + "/tools").code
	}).Should(Equal(http.StatusOK))
	return "/v1/namespaces/" + ns + "/toolcollections/" + name
}

func listedNames(s *mcpclient.Session) []string {
	listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
	Expect(err).NotTo(HaveOccurred())
	names := []string{}
	for _, t := range listed.Tools {
		names = append(names, t.Name)
	}
	return names
}

func listedTool(s *mcpclient.Session, name string) mcpclient.Tool {
	listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
	Expect(err).NotTo(HaveOccurred())
	for _, t := range listed.Tools {
		if t.Name == name {
			return t
		}
	}
	Fail("no tool " + name + " listed")
	return mcpclient.Tool{}
}

// textPart is the text of a result's one content item.
func textPart(r mcpclient.CallResult) string {
	Expect(r.Content).To(HaveLen(1))
	var part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	Expect(json.Unmarshal(r.Content[0], &part)).To(Succeed())
	Expect(part.Type).To(Equal("text"))
	return part.Text
}

// sameRPCError reports whether two calls were answered with the same
// JSON-RPC error: code and the server's message (our client prefixes it
// with the tool it called, which differs between call_tool and a direct
// call).
func sameRPCError(a, b error) bool {
	codeA, messageA, okA := mcpclient.RPCErrorOf(a)
	codeB, messageB, okB := mcpclient.RPCErrorOf(b)
	server := func(m string) string {
		_, rest, found := strings.Cut(m, "answered with JSON-RPC error ")
		if !found {
			return ""
		}
		_, text, _ := strings.Cut(rest, ": ")
		return text
	}
	return okA && okB && codeA == codeB && server(messageA) != "" && server(messageA) == server(messageB)
}

var _ = Describe("A collection with exposure Search over MCP", func() {
	var ns, base string
	BeforeEach(func() {
		ns = env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		readyServer(ns, "files", corpusServer("filesystem").URL())
		base = searchedCollection(ns, "finder", []string{"mcp_calc_add"}, "calc", "files")
		menuHolds(base+"/tools", 6+14)
	})

	It("lists find_tools, call_tool and alwaysInclude to a stateless client, which finds and calls the right tool", func() {
		s := connectMCP(catalog.URL+base+"/mcp", nil, nil)
		Expect(s.Info().ProtocolVersion).To(Equal("2026-07-28"), "our client speaks the stateless revision")
		Expect(listedNames(s)).To(ConsistOf("find_tools", "call_tool", "mcp_calc_add"))
		Expect(len(get(base + "/tools").json()["tools"].([]any))).To(Equal(6+14), "REST still lists every tool")

		found, err := s.CallTool(ctx, "find_tools", json.RawMessage(`{"query":"read the last lines of a log file","limit":3}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(found.IsError).To(BeFalse(), string(found.StructuredContent))
		Expect(textPart(found)).To(MatchJSON(found.StructuredContent), "the same answer as text")
		rest := get(base + "/tools/search?format=mcp&limit=3&q=" + q("read the last lines of a log file"))
		Expect(string(found.StructuredContent)).To(MatchJSON(rest.body), "the REST search's answer, in the MCP format")
		var answer searchAnswer
		Expect(json.Unmarshal(found.StructuredContent, &answer)).To(Succeed())
		Expect(answer.names()).To(Equal([]string{"mcp_files_read_text_file", "mcp_files_read_file", "mcp_files_edit_file"}))
		Expect(answer.Revision).To(Equal(get(base + "/tools").json()["revision"]))

		By("the answer is valid against the outputSchema find_tools lists")
		c := jsonschema.NewCompiler()
		schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(listedTool(s, "find_tools").OutputSchema))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.AddResource("mem:///find_tools.json", schema)).To(Succeed())
		compiled, err := c.Compile("mem:///find_tools.json")
		Expect(err).NotTo(HaveOccurred())
		instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(found.StructuredContent))
		Expect(err).NotTo(HaveOccurred())
		Expect(compiled.Validate(instance)).To(Succeed())

		By("call_tool runs the tool found, not listed")
		called, err := s.CallTool(ctx, "call_tool", json.RawMessage(`{"name":"mcp_files_read_text_file","arguments":{"path":"/var/log/app.log","tail":5}}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(called.IsError).To(BeFalse())
		Expect(textPart(called)).To(Equal(`read_text_file {"path":"/var/log/app.log","tail":5}`))
	})

	It("answers call_tool exactly as the direct call: results, tool errors, bad arguments, unknown tools", func() {
		s := connectMCP(catalog.URL+base+"/mcp", nil, nil)
		for _, tc := range []struct{ tool, arguments string }{
			{"mcp_calc_add", `{"a":20,"b":22}`},
			{"mcp_calc_add", `{"a":"x"}`},
			{"mcp_calc_fail", `{}`},
			{"mcp_calc_broken", `{}`},
			{"mcp_calc_picture", `{}`},
			{"mcp_calc_nope", `{}`},
		} {
			direct, directErr := s.CallTool(ctx, tc.tool, json.RawMessage(tc.arguments), mcpclient.CallOptions{})
			viaCallTool, err := s.CallTool(ctx, "call_tool", json.RawMessage(`{"name":"`+tc.tool+`","arguments":`+tc.arguments+`}`), mcpclient.CallOptions{})
			Expect(viaCallTool).To(Equal(direct), tc.tool+" "+tc.arguments)
			if directErr != nil {
				Expect(sameRPCError(err, directErr)).To(BeTrue(), "%v\n%v", err, directErr)
				continue
			}
			Expect(err).NotTo(HaveOccurred())
		}
		unknown, err := s.CallTool(ctx, "call_tool", json.RawMessage(`{"name":"mcp_calc_nope"}`), mcpclient.CallOptions{})
		code, message, ok := mcpclient.RPCErrorOf(err)
		Expect(ok).To(BeTrue(), "an unknown tool is a JSON-RPC error, as called directly: %+v %v", unknown, err)
		Expect(code).To(Equal(-32602))
		Expect(message).To(ContainSubstring("tool mcp_calc_nope not found"))
		invalid, err := s.CallTool(ctx, "call_tool", json.RawMessage(`{"name":"mcp_calc_add","arguments":{"a":"x"}}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(invalid.IsError).To(BeTrue())
		Expect(textPart(invalid)).To(ContainSubstring("arguments do not match the input schema of mcp_calc_add"))

		By("the call counts as the tool's own")
		before := testutil.ToFloat64(toolCalls.WithLabelValues(ns+"/calc", "add", "success"))
		_, err = s.CallTool(ctx, "call_tool", json.RawMessage(`{"name":"mcp_calc_add","arguments":{"a":1,"b":2}}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(testutil.ToFloat64(toolCalls.WithLabelValues(ns+"/calc", "add", "success"))).To(Equal(before + 1))
	})

	It("tells a model what is wrong with find_tools' and call_tool's own arguments", func() {
		s := connectMCP(catalog.URL+base+"/mcp", nil, nil)
		for _, tc := range []struct{ tool, arguments, says string }{
			{"find_tools", `{}`, "arguments do not match the input schema of find_tools: at /: missing property 'query'"},
			{"find_tools", `{"query":"   "}`, "arguments do not match the input schema of find_tools: the query is blank; say what the tool should do"},
			{"find_tools", `{"query":"add","limit":51}`, "arguments do not match the input schema of find_tools: at /limit: maximum: got 51, want 50"},
			{"find_tools", `{"query":"add","limit":0}`, "arguments do not match the input schema of find_tools: at /limit: minimum: got 0, want 1"},
			{"find_tools", `{"query":"add","limit":2.5}`, "arguments do not match the input schema of find_tools: at /limit: got number, want integer"},
			{"find_tools", `{"query":"add","max":3}`, "arguments do not match the input schema of find_tools: at /: additional properties 'max' not allowed"},
			{"call_tool", `{"arguments":{}}`, "arguments do not match the input schema of call_tool: at /: missing property 'name'"},
			{"call_tool", `{"name":"mcp_calc_add","arguments":[1,2]}`, "arguments do not match the input schema of call_tool: at /arguments: got array, want object"},
		} {
			result, err := s.CallTool(ctx, tc.tool, json.RawMessage(tc.arguments), mcpclient.CallOptions{})
			Expect(err).NotTo(HaveOccurred(), tc.arguments)
			Expect(result.IsError).To(BeTrue(), tc.arguments)
			Expect(textPart(result)).To(Equal(tc.says), tc.arguments)
		}
		found, err := s.CallTool(ctx, "find_tools", json.RawMessage(`{"query":"add","limit":1.0}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		var answer searchAnswer
		Expect(json.Unmarshal(found.StructuredContent, &answer)).To(Succeed())
		Expect(answer.names()).To(Equal([]string{"mcp_calc_add"}), "1.0 is a whole number")
	})

	It("relays the progress of a tool called through call_tool, with the caller's token, at every revision", func() {
		upstream := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(upstream.Stop)
		upstream.AddProgressTool(3)
		readyServer(ns, "up", upstream.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second} })
		relay := searchedCollection(ns, "relay", nil, "up")
		menuHolds(relay+"/tools", 1)
		for _, revision := range []string{"", "2025-11-25", "2025-06-18"} {
			caller := callerOf(catalog.URL+relay+"/mcp", revision)
			p := &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp_up_steps"}}
			p.SetProgressToken("tok-" + revision)
			result, err := caller.session.CallTool(ctx, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(textOf(result)).To(Equal("done"))
			Eventually(func() int { caller.mu.Lock(); defer caller.mu.Unlock(); return len(caller.progress) }).Should(Equal(3), revision)
			caller.mu.Lock()
			for i, n := range caller.progress {
				Expect(n.ProgressToken).To(Equal("tok-" + revision))
				Expect(n.Progress).To(BeEquivalentTo(i + 1))
			}
			caller.mu.Unlock()
		}
	})

	It("works with the MCP Inspector CLI", func() {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		endpoint := catalog.URL + base + "/mcp"
		out, err := testmcp.Inspector(callCtx, endpoint, "--transport", "http", "--method", "tools/list")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"name": "find_tools"`))
		Expect(out).To(ContainSubstring(`"name": "call_tool"`))
		Expect(out).To(ContainSubstring(`"name": "mcp_calc_add"`))
		Expect(out).NotTo(ContainSubstring(`"name": "mcp_files_read_text_file"`))

		out, err = testmcp.Inspector(callCtx, endpoint, "--transport", "http", "--method", "tools/call",
			"--tool-name", "find_tools", "--tool-arg", "query=create a directory", "--tool-arg", "limit=1")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`\"name\":\"mcp_files_create_directory\"`))

		out, err = testmcp.Inspector(callCtx, endpoint, "--transport", "http", "--method", "tools/call",
			"--tool-name", "call_tool", "--tool-args-json", `{"name":"mcp_calc_add","arguments":{"a":2,"b":3}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"text": "5"`))
	})

	It("leaves tools MCP clients cannot be offered out of find_tools and alwaysInclude", func() {
		upstream := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(upstream.Stop)
		upstream.AddRawTool("search", "Searches records with a header filter.", badHeaderSchema, func(json.RawMessage) string { return "found" })
		upstream.AddRawTool("plain", "Searches records without a filter.", `{"type":"object"}`, func(json.RawMessage) string { return "plain answer" })
		readyServer(ns, "odd", testenv.Rewriting(upstream.URL(), "x-stand-in", "x-mcp-header"))
		mixed := searchedCollection(ns, "mixed", []string{"mcp_odd_search", "mcp_odd_plain"}, "odd")
		menuHolds(mixed+"/tools", 2)

		s := connectMCP(catalog.URL+mixed+"/mcp", nil, nil)
		Expect(listedNames(s)).To(ConsistOf("find_tools", "call_tool", "mcp_odd_plain"))
		found, err := s.CallTool(ctx, "find_tools", json.RawMessage(`{"query":"search records with a header filter"}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		var answer searchAnswer
		Expect(json.Unmarshal(found.StructuredContent, &answer)).To(Succeed())
		Expect(answer.names()).To(Equal([]string{"mcp_odd_plain"}))
		rest := searchOf(get(mixed + "/tools/search?q=" + q("search records with a header filter")))
		Expect(rest.names()).To(Equal([]string{"mcp_odd_search", "mcp_odd_plain"}), "REST serves it, and it ranks first")
	})

	It("switches exposure at runtime, and listening clients hear of it", func() {
		changed := make(chan struct{}, 10)
		s := connectMCP(catalog.URL+base+"/mcp", nil, func() { changed <- struct{}{} })
		Eventually(s.Listening).Should(BeTrue(), "the client's listening stream is open")
		heardGreeting(changed)
		Expect(listedNames(s)).To(ConsistOf("find_tools", "call_tool", "mcp_calc_add"))

		setExposure := func(e mcpv1alpha1.Exposure) {
			var tc mcpv1alpha1.ToolCollection
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "finder"}, &tc)).To(Succeed())
			before := tc.DeepCopy()
			tc.Spec.Exposure = e
			// A merge patch: the controller writes status meanwhile.
			Expect(env.Client.Patch(ctx, &tc, client.MergeFrom(before))).To(Succeed())
		}
		setExposure(mcpv1alpha1.ExposureAll)
		Eventually(changed).Should(Receive())
		Eventually(func() int { return len(listedNames(s)) }).Should(Equal(6 + 14))
		Expect(listedNames(s)).NotTo(ContainElement("find_tools"))
		_, err := s.CallTool(ctx, "find_tools", json.RawMessage(`{"query":"add"}`), mcpclient.CallOptions{})
		code, _, ok := mcpclient.RPCErrorOf(err)
		Expect(ok && code == -32602).To(BeTrue(), "find_tools is gone with exposure All: %v", err)

		for len(changed) > 0 {
			<-changed
		}
		setExposure(mcpv1alpha1.ExposureSearch)
		Eventually(changed).Should(Receive())
		Eventually(func() []string { return listedNames(s) }).Should(ConsistOf("find_tools", "call_tool", "mcp_calc_add"))
	})
})

var _ = Describe("A collection with exposure Search and authorization", func() {
	It("lets a reader find tools, and answers their call_tool as their direct call: forbidden", func() {
		env.InstallCatalogRoles()
		ns := env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		base := searchedCollection(ns, "kit", nil, "calc")
		menuHolds(base+"/tools", 6)
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		s := connectMCP(authCatalog.URL+base+"/mcp", map[string]string{"Authorization": "Bearer " + reader}, nil)

		found, err := s.CallTool(ctx, "find_tools", json.RawMessage(`{"query":"add two numbers","limit":1}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(found.StructuredContent)).To(ContainSubstring(`"name":"mcp_calc_add"`))

		_, directErr := s.CallTool(ctx, "mcp_calc_add", json.RawMessage(`{"a":1,"b":2}`), mcpclient.CallOptions{})
		_, err = s.CallTool(ctx, "call_tool", json.RawMessage(`{"name":"mcp_calc_add","arguments":{"a":1,"b":2}}`), mcpclient.CallOptions{})
		Expect(sameRPCError(err, directErr)).To(BeTrue(), "%v\n%v", err, directErr)
		_, message, _ := mcpclient.RPCErrorOf(err)
		Expect(message).To(ContainSubstring("lacks execute on toolcollections/kit"))
		Expect(strings.Contains(message, reader)).To(BeFalse(), "the token is never repeated")
	})
})
