package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// sdkCaller connects the official Go SDK's client (a client nobody here
// wrote) to a catalog endpoint, at a revision ("" lets it negotiate:
// 2026-07-28).
type sdkCaller struct {
	session  *sdk.ClientSession
	mu       sync.Mutex
	progress []*sdk.ProgressNotificationParams
	logs     []*sdk.LoggingMessageParams //nolint:staticcheck // logging, deprecated in 2026-07-28, is what is tested
}

func callerOf(url, revision string) *sdkCaller {
	c := &sdkCaller{}
	client := sdk.NewClient(&sdk.Implementation{Name: "sdk-caller", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params)
			c.mu.Unlock()
		},
		//nolint:staticcheck // logging, deprecated in 2026-07-28, is what is tested
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			c.mu.Lock()
			c.logs = append(c.logs, r.Params)
			c.mu.Unlock()
		},
	})
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: revision})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(session.Close)
	c.session = session
	return c
}

func (c *sdkCaller) call(ctx context.Context, name string, token any, meta sdk.Meta) (*sdk.CallToolResult, error) {
	p := &sdk.CallToolParams{Name: name, Arguments: map[string]any{}, Meta: meta}
	if token != nil {
		p.SetProgressToken(token)
	}
	return c.session.CallTool(ctx, p)
}

func textOf(r *sdk.CallToolResult) string {
	var out []string
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			out = append(out, t.Text)
		}
	}
	return strings.Join(out, "\n")
}

var _ = Describe("MCP revisions through the catalog", func() {
	var (
		ns       string
		upstream *testmcp.GoSDK
		endpoint string
	)
	expose := func(mode testmcp.GoSDKMode) {
		ns = env.Namespace()
		upstream = testmcp.StartGoSDK(mode)
		DeferCleanup(upstream.Stop)
		upstream.AddProgressTool(3)
		upstream.AddMetaTool()
		readyServer(ns, "up", upstream.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second} })
		collection(ns, "relay", "up")
		// The catalog reads the manager's cache, which may hold the collection
		// before the status readyServer saw.
		Eventually(func() string { return string(get("/v1/namespaces/" + ns + "/toolcollections/relay/tools").body) }).Should(ContainSubstring("mcp_up_steps"))
		endpoint = catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/relay/mcp"
	}

	for _, revision := range []string{"", "2025-11-25", "2025-06-18"} {
		name := revision
		if name == "" {
			name = "2026-07-28"
		}
		It("relays a call's progress, with the caller's token, before its result, to a "+name+" caller", func() {
			expose(testmcp.GoSDKSessions)
			caller := callerOf(endpoint, revision)
			Expect(caller.session.InitializeResult().ProtocolVersion).To(Equal(name))
			result, err := caller.call(ctx, "mcp_up_steps", "tok-1", nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(textOf(result)).To(Equal("done"))
			// The SDK hands notifications to their handler on goroutines of its
			// own; the raw stream test below shows they come before the result.
			Eventually(func() int { caller.mu.Lock(); defer caller.mu.Unlock(); return len(caller.progress) }).Should(Equal(3))
			caller.mu.Lock()
			defer caller.mu.Unlock()
			for i, p := range caller.progress {
				Expect(p.ProgressToken).To(Equal("tok-1"))
				Expect(p.Progress).To(BeEquivalentTo(i + 1))
				Expect(p.Total).To(BeEquivalentTo(3))
			}
		})
	}

	It("relays log messages to a caller that set a level", func() {
		expose(testmcp.GoSDKSessions)
		caller := callerOf(endpoint, "2025-11-25")
		//nolint:staticcheck // logging, deprecated in 2026-07-28, is what is tested
		Expect(caller.session.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"})).To(Succeed())
		_, err := caller.call(ctx, "mcp_up_steps", nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { caller.mu.Lock(); defer caller.mu.Unlock(); return len(caller.logs) }).Should(Equal(3))
		caller.mu.Lock()
		defer caller.mu.Unlock()
		Expect(caller.logs[0].Data).To(Equal("step 1"))
	})

	It("keeps a log level only for a session mcp-go knows", func() {
		expose(testmcp.GoSDKSessions)
		levels := func() int { return catalogUnderTest.mcp.sessions.levels.Len() }
		before := levels()
		for i := range 20 {
			resp := post("/v1/namespaces/"+ns+"/toolcollections/relay/mcp",
				`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`,
				"Content-Type", "application/json", "Accept", "application/json, text/event-stream",
				"MCP-Protocol-Version", "2025-11-25", "Mcp-Session-Id", fmt.Sprintf("made-up-%d", i))
			Expect(resp.code).NotTo(Equal(http.StatusOK), string(resp.body))
		}
		Expect(levels()).To(Equal(before), "a made-up session id kept a level")

		caller := callerOf(endpoint, "2025-11-25")
		//nolint:staticcheck // logging, deprecated in 2026-07-28, is what is tested
		Expect(caller.session.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"})).To(Succeed())
		Expect(levels()).To(Equal(before+1), "the real session's level")
	})

	DescribeTable("cancels the upstream call when its caller cancels",
		func(mode testmcp.GoSDKMode, revision string) {
			expose(mode)
			release, started := make(chan struct{}), make(chan struct{}, 1)
			DeferCleanup(func() { close(release) })
			upstream.AddWaitTool(release, started)
			Eventually(func() string { return string(get("/v1/namespaces/" + ns + "/toolcollections/relay/tools").body) }).Should(ContainSubstring("mcp_up_wait"))
			caller := callerOf(endpoint, revision)
			callCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := caller.call(callCtx, "mcp_up_wait", nil, nil)
				done <- err
			}()
			Eventually(started).Should(Receive())
			cancel()
			Eventually(done).Should(Receive(HaveOccurred()))
			Eventually(upstream.Cancelled.Load).Should(BeEquivalentTo(1), "the upstream call ended")
		},
		Entry("a 2026-07-28 caller (closing its request), a 2025-11-25 upstream (notifications/cancelled)", testmcp.GoSDKSessions, ""),
		Entry("a 2025-11-25 caller (notifications/cancelled), a 2025-11-25 upstream", testmcp.GoSDKSessions, "2025-11-25"),
		Entry("a 2025-11-25 caller, a 2026-07-28 upstream (closing the request)", testmcp.GoSDKOnly2026, "2025-11-25"),
	)

	It("passes the caller's trace context upstream, and none of its protocol keys", func() {
		expose(testmcp.GoSDKSessions)
		caller := callerOf(endpoint, "")
		result, err := caller.call(ctx, "mcp_up_meta", nil, sdk.Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "vendor=1"})
		Expect(err).NotTo(HaveOccurred())
		var seen map[string]any
		Expect(json.Unmarshal([]byte(textOf(result)), &seen)).To(Succeed(), textOf(result))
		Expect(seen).To(HaveKeyWithValue("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
		Expect(seen).To(HaveKeyWithValue("tracestate", "vendor=1"))
		Expect(seen).NotTo(HaveKey("io.modelcontextprotocol/clientInfo"), "the caller's protocol keys went upstream")
	})

	It("streams a REST call's progress, then its envelope, when asked for events", func() {
		expose(testmcp.GoSDKOnly2026)
		req, err := http.NewRequest(http.MethodPost, catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/relay/execute", strings.NewReader(`{"name":"mcp_up_steps"}`))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		events := strings.Split(strings.TrimSpace(string(body)), "\n\n")
		Expect(events).To(HaveLen(4), string(body))
		for i := range 3 {
			Expect(events[i]).To(HavePrefix("event: progress\ndata: {"))
			Expect(events[i]).To(ContainSubstring(`"progress":` + string(rune('1'+i))))
		}
		Expect(events[3]).To(HavePrefix("event: result\ndata: {\"output\":\"done\""))

		By("a call refused before it may go ahead is answered with its status, not as events")
		req, err = http.NewRequest(http.MethodPost, catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/relay/execute", strings.NewReader(`{"name":"mcp_up_nothing"}`))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "text/event-stream")
		refused, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer refused.Body.Close()
		Expect(refused.StatusCode).To(Equal(http.StatusNotFound))
		Expect(refused.Header.Get("Content-Type")).To(Equal("application/json"))
	})

	It("answers the wire details each revision asks for", func() {
		expose(testmcp.GoSDKSessions)
		By("a call of an older revision without its session header is a 400, not a 404")
		r := callTo(catalog.URL, "/v1/namespaces/"+ns+"/toolcollections/relay/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-11-25")
		Expect(r.code).To(Equal(http.StatusBadRequest), string(r.body))
		Expect(string(r.body)).To(ContainSubstring("Mcp-Session-Id header is required"))
		By("a 2026-07-28 notification is accepted with 202")
		r = callTo(catalog.URL, "/v1/namespaces/"+ns+"/toolcollections/relay/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "notifications/cancelled")
		Expect(r.code).To(Equal(http.StatusAccepted), string(r.body))
		By("a call's progress comes on its own answer stream, before its result")
		r = callTo(catalog.URL, "/v1/namespaces/"+ns+"/toolcollections/relay/mcp",
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"mcp_up_steps","arguments":{},"_meta":{"progressToken":"p9",`+
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28",
			"Mcp-Method", "tools/call", "Mcp-Name", "mcp_up_steps")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		events := strings.Split(strings.TrimSpace(string(r.body)), "\n\n")
		Expect(events).To(HaveLen(4), string(r.body))
		for i := range 3 {
			Expect(events[i]).To(ContainSubstring(`"method":"notifications/progress"`))
			Expect(events[i]).To(ContainSubstring(`"progressToken":"p9"`))
		}
		Expect(events[3]).To(ContainSubstring(`"id":9,"result":{`))
		Expect(events[3]).To(ContainSubstring(`"resultType":"complete"`))
		By("a 2026-07-28 call whose headers disagree with its body is refused")
		r = callTo(catalog.URL, "/v1/namespaces/"+ns+"/toolcollections/relay/mcp",
			`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"mcp_up_steps","arguments":{},"_meta":{`+
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28",
			"Mcp-Method", "tools/call", "Mcp-Name", "mcp_up_other")
		Expect(r.code).To(Equal(http.StatusBadRequest), string(r.body))
		Expect(string(r.body)).To(ContainSubstring(`"code":-32020`))
		By("a call of an older revision with a session id the catalog never issued is a 404, as mcp-go answers")
		r = callTo(catalog.URL, "/v1/namespaces/"+ns+"/toolcollections/relay/mcp",
			`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"mcp_up_steps","arguments":{}}}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-11-25",
			"Mcp-Session-Id", "made-up")
		Expect(r.code).To(Equal(http.StatusNotFound), string(r.body))
		Expect(string(r.body)).To(ContainSubstring("Invalid session ID"))
		By("a 2026-07-28 call must mirror the arguments its tool binds to headers")
		upstream.AddRawTool("region", "Answers its region.",
			`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`,
			func(arguments json.RawMessage) string { return string(arguments) })
		Eventually(func() string { return string(get("/v1/namespaces/" + ns + "/toolcollections/relay/tools").body) }).Should(ContainSubstring("mcp_up_region"))
		regionCall := func(extra ...string) response {
			return callTo(catalog.URL, "/v1/namespaces/"+ns+"/toolcollections/relay/mcp",
				`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"mcp_up_region","arguments":{"region":"eu"},"_meta":{`+
					`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
				append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28",
					"Mcp-Method", "tools/call", "Mcp-Name", "mcp_up_region"}, extra...)...)
		}
		r = regionCall()
		Expect(r.code).To(Equal(http.StatusBadRequest), string(r.body))
		Expect(string(r.body)).To(ContainSubstring(`"code":-32020`))
		Expect(string(r.body)).To(ContainSubstring("Mcp-Param-Region"))
		r = regionCall("Mcp-Param-Region", "us")
		Expect(r.code).To(Equal(http.StatusBadRequest), string(r.body))
		Expect(string(r.body)).To(ContainSubstring("does not match"))
		r = regionCall("Mcp-Param-Region", "eu")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(string(r.body)).To(ContainSubstring(`\"region\":\"eu\"`))
		By("our own client, at 2026-07-28, gets log messages asked for per request")
		s, err := mcpclient.Connect(ctx, mcpclient.Target{URL: endpoint, Timeout: 10 * time.Second}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		Expect(s.Info().ProtocolVersion).To(Equal("2026-07-28"))
		var logs []string
		_, err = s.CallTool(ctx, "mcp_up_steps", json.RawMessage(`{}`), mcpclient.CallOptions{LogLevel: "info", OnLog: func(p json.RawMessage) { logs = append(logs, string(p)) }})
		Expect(err).NotTo(HaveOccurred())
		Expect(logs).To(HaveLen(3))
	})
})

var _ = Describe("A 2026-07-28 server that asks for input", func() {
	var ns, path string
	BeforeEach(func() {
		ns = env.Namespace()
		upstream := testmcp.StartGoSDK(testmcp.GoSDKOnly2026)
		DeferCleanup(upstream.Stop)
		upstream.AddAskingTool()
		upstream.AddAskingPrompt()
		upstream.AddMetaTool()
		readyServer(ns, "asker", upstream.URL())
		collection(ns, "asking", "asker")
		Eventually(func() string { return string(get("/v1/namespaces/" + ns + "/toolcollections/asking/tools").body) }).Should(ContainSubstring("mcp_asker_ask"))
		path = "/v1/namespaces/" + ns + "/toolcollections/asking"
	})

	It("has a legacy caller answer it, on the call's stream, and sends the call again with the answer", func() {
		askedCallerOf(catalog.URL+path+"/mcp", "2025-11-25", "Zoë").expectAsked("mcp_asker_ask")
	})

	It("passes it to a 2026-07-28 caller, whose SDK answers and sends the call again", func() {
		caller := askedCallerOf(catalog.URL+path+"/mcp", "", "Zoë")
		Expect(caller.session.InitializeResult().ProtocolVersion).To(Equal("2026-07-28"))
		caller.expectAsked("mcp_asker_ask")
	})

	It("tells the server what the caller can answer, and no more", func() {
		declared := func(result *sdk.CallToolResult, err error) any {
			Expect(err).NotTo(HaveOccurred())
			var meta map[string]any
			Expect(json.Unmarshal([]byte(textOf(result)), &meta)).To(Succeed(), textOf(result))
			return meta["io.modelcontextprotocol/clientCapabilities"]
		}
		legacy := askedCallerOf(catalog.URL+path+"/mcp", "2025-11-25", "")
		Expect(declared(legacy.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_asker_meta", Arguments: map[string]any{}}))).
			To(Equal(map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "sampling": map[string]any{}}), "a legacy caller's, from its session")
		modern := askedCallerOf(catalog.URL+path+"/mcp", "", "")
		Expect(declared(modern.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_asker_meta", Arguments: map[string]any{}}))).
			To(HaveKey("elicitation"), "a 2026-07-28 caller's, from its request")
		silent := callerOf(catalog.URL+path+"/mcp", "")
		Expect(declared(silent.call(ctx, "mcp_asker_meta", nil, nil))).To(Equal(map[string]any{}), "a caller that declares nothing")
	})

	It("seals the server's state to the call, and opens it only for the same call", func() {
		call := func(arguments, extra string) map[string]any {
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
				`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
			resp := post(path+"/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_asker_ask","arguments":`+arguments+extra+`,`+meta+`}}`,
				"Content-Type", "application/json", "Accept", "application/json, text/event-stream",
				"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "mcp_asker_ask")
			Expect(resp.code).To(Equal(http.StatusOK), string(resp.body))
			body := string(resp.body)
			if data, ok := strings.CutPrefix(strings.TrimSpace(body), "event: message\ndata: "); ok {
				body = data
			}
			var msg map[string]any
			Expect(json.Unmarshal([]byte(body), &msg)).To(Succeed(), body)
			return msg
		}
		asked := call(`{}`, "")["result"].(map[string]any)
		Expect(asked).To(HaveKeyWithValue("resultType", "input_required"))
		Expect(testutil.ToFloat64(toolCalls.WithLabelValues(ns+"/asker", "ask", "input_required"))).To(BeEquivalentTo(1), "counted as what it was")
		Expect(asked["inputRequests"]).To(HaveKeyWithValue("who", HaveKeyWithValue("method", "elicitation/create")), "the server's requests as it sent them")
		state, _ := asked["requestState"].(string)
		Expect(state).To(HavePrefix("mcpop1."))
		answers := `,"inputResponses":{"who":{"action":"accept","content":{"name":"Raw"}}},"requestState":`
		for what, retry := range map[string]func() map[string]any{
			"altered":         func() map[string]any { return call(`{}`, answers+`"`+state[:len(state)-2]+`xx"`) },
			"other arguments": func() map[string]any { return call(`{"x":1}`, answers+`"`+state+`"`) },
			"not issued here": func() map[string]any { return call(`{}`, answers+`"s1"`) },
		} {
			refused := retry()
			Expect(refused).To(HaveKey("error"), what)
			Expect(refused["error"]).To(HaveKeyWithValue("code", BeEquivalentTo(-32602)), what)
		}
		done := call(`{ }`, answers+`"`+state+`"`)["result"].(map[string]any)
		Expect(done).To(HaveKeyWithValue("resultType", "complete"))
		Expect(fmt.Sprint(done["content"])).To(ContainSubstring("hello Raw"), "the same call, its arguments spaced otherwise")
	})

	It("fails the call, saying why, for a caller that cannot answer, rather than answer it with nothing", func() {
		needs := "mcp_asker_ask needs input (elicitation/create) that its caller did not give: "
		r := post(path+"/execute", `{"name":"mcp_asker_ask","arguments":{}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["isError"]).To(BeTrue())
		Expect(r.json()["error"]).To(Equal(needs + restCannotAnswer))

		for revision, want := range map[string]string{
			"2025-11-25": needs + "the caller of this tool did not declare the elicitation (form mode) capability, so mcp-operator cannot ask it",
			"":           "mcp_asker_ask needs input (elicitation/create) that its caller did not declare it can give (elicitation (form mode))",
		} {
			caller := callerOf(catalog.URL+path+"/mcp", revision) // declares nothing
			result, err := caller.call(ctx, "mcp_asker_ask", nil, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(result.IsError).To(BeTrue(), "revision %q", revision)
			Expect(textOf(result)).To(Equal(want), "revision %q", revision)
			Eventually(func() int { return len(allPrompts(caller.session)) }).Should(Equal(1))
			_, err = caller.session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "mcp_asker_ask"})
			Expect(err).To(MatchError(ContainSubstring("MCPServer "+ns+"/asker needs input from the user or the client's model")), "revision %q", revision)
		}
	})
})
