package toolcatalog

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// askedCaller is the official Go SDK's client answering a server's
// elicitation with the name it is given, and its sampling with a model's
// echo, recording what it was asked.
type askedCaller struct {
	session *sdk.ClientSession
	name    string
	mu      sync.Mutex
	elicits []*sdk.ElicitParams
	//nolint:staticcheck // sampling, deprecated in 2026-07-28, is what is relayed
	samples []*sdk.CreateMessageParams
}

func askedCallerOf(url, revision, name string) *askedCaller {
	c := &askedCaller{name: name}
	client := sdk.NewClient(&sdk.Implementation{Name: "asked-caller", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			c.mu.Lock()
			c.elicits = append(c.elicits, r.Params)
			c.mu.Unlock()
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
		//nolint:staticcheck // sampling, deprecated in 2026-07-28, is what is relayed
		CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			c.mu.Lock()
			c.samples = append(c.samples, r.Params)
			c.mu.Unlock()
			prompt := ""
			if t, ok := r.Params.Messages[0].Content.(*sdk.TextContent); ok {
				prompt = t.Text
			}
			//nolint:staticcheck // sampling, deprecated in 2026-07-28, is what is relayed
			return &sdk.CreateMessageResult{Model: "echo-1", Role: "assistant", Content: &sdk.TextContent{Text: "you said " + prompt}}, nil
		},
	})
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: revision})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(session.Close)
	c.session = session
	return c
}

// expectAsked calls tool, a tool that asks its caller's name, and expects
// the name it was given back, having been asked once; it returns what the
// caller was asked.
func (c *askedCaller) expectAsked(tool string) *sdk.ElicitParams {
	result, err := c.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
	Expect(err).NotTo(HaveOccurred())
	Expect(result.IsError).To(BeFalse(), textOf(result))
	Expect(textOf(result)).To(Equal("hello " + c.name))
	c.mu.Lock()
	defer c.mu.Unlock()
	Expect(c.elicits).To(HaveLen(1))
	Expect(c.elicits[0].Message).To(Equal("Your name?"))
	return c.elicits[0]
}

var _ = Describe("A server's requests, relayed to the caller of its call", func() {
	var (
		ns, endpoint, path string
		upstream           *testmcp.GoSDK
	)
	BeforeEach(func() {
		ns = env.Namespace()
		upstream = testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(upstream.Stop)
		upstream.AddElicitingTool()
		upstream.AddSamplingTool()
		readyServer(ns, "up", upstream.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Second} })
		collection(ns, "asks", "up")
		Eventually(func() string { return string(get("/v1/namespaces/" + ns + "/toolcollections/asks/tools").body) }).Should(ContainSubstring("mcp_up_sample"))
		path = "/v1/namespaces/" + ns + "/toolcollections/asks/mcp"
		endpoint = catalog.URL + path
	})

	for _, revision := range []string{"2025-11-25", "2025-06-18", ""} {
		name := revision
		if name == "" {
			name = "2026-07-28 (input_required, the call parked)"
		}
		It("asks a "+name+" caller the server's question and gives the server its answer", func() {
			asked := askedCallerOf(endpoint, revision, "Zoë").expectAsked("mcp_up_elicit")
			schema, err := json.Marshal(asked.RequestedSchema)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(schema)).To(MatchJSON(`{"type":"object","properties":{"name":{"type":"string","default":"Ann"}}}`), "the schema as the server sent it")
		})

		It("asks a "+name+" caller's model for the server's sampling", func() {
			caller := askedCallerOf(endpoint, revision, "")
			result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_up_sample", Arguments: map[string]any{"prompt": "a haiku"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(textOf(result)).To(Equal("echo-1: you said a haiku"))
			caller.mu.Lock()
			defer caller.mu.Unlock()
			Expect(caller.samples).To(HaveLen(1))
			Expect(caller.samples[0].MaxTokens).To(BeEquivalentTo(50))
		})
	}

	It("asks mcp-go's client too: pinned to 2025-11-25, for every server; in 2026-07-28, which it negotiates, for a 2026-07-28 server", func() {
		up2026 := testmcp.StartGoSDK(testmcp.GoSDKOnly2026)
		DeferCleanup(up2026.Stop)
		up2026.AddAskingTool()
		readyServer(ns, "mrtr", up2026.URL())
		collection(ns, "both", "up", "mrtr")
		connect := func(opts ...mcpgoclient.ClientOption) (*mcpgoclient.Client, *atomic.Int32) {
			tr, err := transport.NewStreamableHTTP(catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/both/mcp")
			Expect(err).NotTo(HaveOccurred())
			var asked atomic.Int32
			c := mcpgoclient.NewClient(tr, append(opts, mcpgoclient.WithElicitationHandler(elicitFunc(func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				asked.Add(1)
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Go"}}}, nil
			})))...)
			Expect(c.Start(ctx)).To(Succeed())
			DeferCleanup(c.Close)
			_, err = c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "mcp-go", Version: "1"}}})
			Expect(err).NotTo(HaveOccurred())
			return c, &asked
		}
		call := func(c *mcpgoclient.Client, tool string) (bool, string) {
			result, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}})
			Expect(err).NotTo(HaveOccurred(), tool)
			Expect(result.Content).To(HaveLen(1), tool)
			return result.IsError, result.Content[0].(mcp.TextContent).Text
		}

		legacy, asked := connect(mcpgoclient.WithProtocolVersion("2025-11-25"))
		for i, tool := range []string{"mcp_up_elicit", "mcp_mrtr_ask"} {
			failed, text := call(legacy, tool)
			Expect(failed).To(BeFalse(), "%s: %s", tool, text)
			Expect(text).To(Equal("hello Go"), tool)
			Expect(asked.Load()).To(BeEquivalentTo(i+1), tool)
		}

		modern, asked := connect()
		for i, tool := range []string{"mcp_mrtr_ask", "mcp_up_elicit"} {
			failed, text := call(modern, tool)
			Expect(failed).To(BeFalse(), "%s: %s", tool, text)
			Expect(text).To(Equal("hello Go"), tool)
			Expect(asked.Load()).To(BeEquivalentTo(i+1), tool)
		}
	})

	It("keeps concurrent callers' questions apart", func() {
		const n = 6
		var wg sync.WaitGroup
		answers := make([]string, n)
		for i := range n {
			caller := askedCallerOf(endpoint, "2025-11-25", fmt.Sprint("caller-", i))
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_up_elicit", Arguments: map[string]any{}})
				Expect(err).NotTo(HaveOccurred())
				answers[i] = textOf(result)
			}()
		}
		wg.Wait()
		for i, answer := range answers {
			Expect(answer).To(Equal(fmt.Sprint("hello caller-", i)))
		}
	})

	It("refuses the server's question, saying why, when the caller did not declare the capability", func() {
		caller := callerOf(endpoint, "2025-11-25") // declares nothing
		result, err := caller.call(ctx, "mcp_up_elicit", nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeTrue())
		Expect(textOf(result)).To(ContainSubstring("did not declare the elicitation (form mode) capability"))
	})

	It("refuses it for a 2026-07-28 caller that declared nothing and a REST caller, saying why", func() {
		caller := callerOf(endpoint, "") // declares nothing
		Expect(caller.session.InitializeResult().ProtocolVersion).To(Equal("2026-07-28"))
		result, err := caller.session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_up_elicit", Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeTrue())
		Expect(textOf(result)).To(ContainSubstring(statelessCannotAnswer))

		rest := post("/v1/namespaces/"+ns+"/toolcollections/asks/execute", `{"name":"mcp_up_sample","arguments":{"prompt":"x"}}`)
		Expect(rest.code).To(Equal(http.StatusOK), string(rest.body))
		Expect(string(rest.body)).To(ContainSubstring("called through mcp-operator's REST API, which cannot answer"))
	})

	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		It("relays server-everything's questions to a "+revision+" caller as it asks them directly", func() {
			everything, err := testmcp.StartEverything("streamableHttp")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(everything.Stop)
			readyServer(ns, "everything", everything.URL())
			collection(ns, "ev", "everything")
			direct := askedCallerOf(everything.URL(), "2025-11-25", "Ann")
			via := askedCallerOf(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/ev/mcp", revision, "Ann")
			for _, call := range []struct{ tool, name string }{
				{"trigger-elicitation-request", "mcp_everything_trigger-elicitation-request"},
				{"trigger-sampling-request", "mcp_everything_trigger-sampling-request"},
			} {
				arguments := map[string]any{"prompt": "a haiku", "maxTokens": 20}
				if call.tool == "trigger-elicitation-request" {
					arguments = map[string]any{}
				}
				want, err := direct.session.CallTool(ctx, &sdk.CallToolParams{Name: call.tool, Arguments: arguments})
				Expect(err).NotTo(HaveOccurred())
				got, err := via.session.CallTool(ctx, &sdk.CallToolParams{Name: call.name, Arguments: arguments})
				Expect(err).NotTo(HaveOccurred())
				Expect(got.IsError).To(BeFalse(), textOf(got))
				Expect(textOf(got)).To(Equal(textOf(want)), call.tool)
			}
			direct.mu.Lock()
			defer direct.mu.Unlock()
			via.mu.Lock()
			defer via.mu.Unlock()
			Expect(via.elicits).To(HaveLen(1))
			Expect(via.samples).To(HaveLen(1))
			asJSON := func(v any) string {
				raw, err := json.Marshal(v)
				Expect(err).NotTo(HaveOccurred())
				return string(raw)
			}
			Expect(asJSON(via.elicits[0])).To(MatchJSON(asJSON(direct.elicits[0])), "the form as the server sent it: every field, default and enum")
			Expect(asJSON(via.samples[0])).To(MatchJSON(asJSON(direct.samples[0])))
		})
	}

	It("parks a call for a 2026-07-28 caller: input_required with the server's request as sent, then the result, once", func() {
		const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "mcp_up_elicit"}
		var first struct {
			Result struct {
				ResultType    string                     `json:"resultType"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				RequestState  string                     `json:"requestState"`
			} `json:"result"`
		}
		Expect(json.Unmarshal([]byte(postJSON(endpoint, headers,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_up_elicit","arguments":{},`+meta+`}}`)), &first)).To(Succeed())
		Expect(first.Result.ResultType).To(Equal("input_required"))
		Expect(first.Result.InputRequests).To(HaveLen(1))
		var key string
		for k, request := range first.Result.InputRequests {
			key = k
			Expect(string(request)).To(MatchJSON(`{"method":"elicitation/create","params":{"mode":"form","message":"Your name?",` +
				`"requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ann"}}}}}`))
		}
		Expect(first.Result.RequestState).To(HavePrefix(statePrefix))

		again := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_up_elicit","arguments":{},"inputResponses":{"` + key +
			`":{"action":"accept","content":{"name":"Raw"}}},"requestState":"` + first.Result.RequestState + `",` + meta + `}}`
		answer := postJSON(endpoint, headers, again)
		Expect(answer).To(ContainSubstring(`"hello Raw"`))
		Expect(answer).To(ContainSubstring(`"resultType":"complete"`))

		By("the state is spent with its call")
		Expect(postJSON(endpoint, headers, again)).To(ContainSubstring(errParkedGone.Error()))

		By("bound to its call: other arguments are refused")
		other := strings.Replace(again, `"arguments":{}`, `"arguments":{"x":1}`, 1)
		Expect(postJSON(endpoint, headers, other)).To(ContainSubstring(errStateInvalid.Error()))
	})

	It("tells a parked call's progress to the request serving it, with that request's token", func() {
		up := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(up.Stop)
		up.Server.AddTool(&sdk.Tool{Name: "askprog", Description: "Asks, then reports progress.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				answer, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Your name?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
				if err != nil {
					return nil, err
				}
				if token := req.Params.GetProgressToken(); token != nil {
					if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 1, Message: "answered"}); err != nil {
						return nil, err
					}
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint("hello ", answer.Content["name"])}}}, nil
			})
		readyServer(ns, "prog", up.URL())
		collection(ns, "progs", "prog")
		url := catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/progs/mcp"
		meta := func(token string) string {
			return `"_meta":{"progressToken":"` + token + `","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		}
		headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "mcp_prog_askprog"}
		var first struct {
			Result struct {
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				RequestState  string                     `json:"requestState"`
			} `json:"result"`
		}
		Expect(json.Unmarshal([]byte(postJSON(url, headers, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_prog_askprog","arguments":{},`+meta("first")+`}}`)), &first)).To(Succeed())
		Expect(first.Result.InputRequests).To(HaveLen(1))
		var key string
		for k := range first.Result.InputRequests {
			key = k
		}
		resp, err := rawPost(ctx, url, headers, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_prog_askprog","arguments":{},"inputResponses":{"`+key+
			`":{"action":"accept","content":{"name":"Raw"}}},"requestState":"`+first.Result.RequestState+`",`+meta("second")+`}}`)
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		events := bufio.NewReader(resp.Body)
		progress := nextEvent(events)
		Expect(progress).To(HaveKeyWithValue("method", "notifications/progress"))
		Expect(progress["params"]).To(HaveKeyWithValue("progressToken", "second"), "the token of the request serving the call")
		Expect(nextEvent(events)["result"]).To(HaveKeyWithValue("content", ContainElement(HaveKeyWithValue("text", "hello Raw"))))
	})

	It("cancels a 2026-07-28 caller's call that may be parked when the caller closes its request", func() {
		up := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(up.Stop)
		release, started := make(chan struct{}), make(chan struct{}, 1)
		DeferCleanup(func() { close(release) })
		up.AddWaitTool(release, started)
		readyServer(ns, "waits", up.URL())
		collection(ns, "waiting", "waits")
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			if resp, err := rawPost(callCtx, catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/waiting/mcp",
				map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "mcp_waits_wait"},
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_waits_wait","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`); err == nil {
				_ = resp.Body.Close()
			}
		}()
		Eventually(started).Should(Receive())
		cancel()
		<-done
		Eventually(up.Cancelled.Load).Should(BeEquivalentTo(1), "the server's call ended with its caller's request")
	})

	Context("on the wire", func() {
		headers := func(session string) []string {
			return []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream",
				"MCP-Protocol-Version", "2025-11-25", "Mcp-Session-Id", session}
		}
		initialize := func(capabilities string) string {
			resp := post(path, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"raw","version":"1"},"capabilities":`+capabilities+`}}`,
				"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
			Expect(resp.code).To(Equal(http.StatusOK), string(resp.body))
			session := resp.header.Get("Mcp-Session-Id")
			Expect(session).NotTo(BeEmpty())
			Expect(post(path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers(session)...).code).To(Equal(http.StatusAccepted))
			return session
		}
		// startCall calls elicit and returns the relayed request's id and
		// the rest of the call's answer stream.
		startCall := func(session string) (string, *bufio.Reader, io.Closer) {
			req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp_up_elicit","arguments":{}}}`))
			Expect(err).NotTo(HaveOccurred())
			for i := 0; i < len(headers(session)); i += 2 {
				req.Header.Set(headers(session)[i], headers(session)[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
			events := bufio.NewReader(resp.Body)
			asked := nextEvent(events)
			Expect(asked).To(HaveKeyWithValue("method", "elicitation/create"))
			Expect(asked["params"]).To(HaveKeyWithValue("message", "Your name?"))
			id, ok := asked["id"].(string)
			Expect(ok).To(BeTrue(), "the relayed request's id: %v", asked["id"])
			return id, events, resp.Body
		}

		It("issues session ids that carry what the caller declared, and still takes the plain ones", func() {
			Expect(initialize(`{"elicitation":{},"sampling":{"tools":{}},"roots":{}}`)).To(HaveSuffix(".fst"), "roots are never relayed")
			Expect(initialize(`{"elicitation":{"url":{}}}`)).To(HaveSuffix(".u"))
			plain := initialize(`{}`)
			Expect(plain).NotTo(ContainSubstring("."))
			Expect(post(path, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, headers(plain)...).code).To(Equal(http.StatusOK))
			for _, forged := range []string{plain + ".x", plain + ".", plain + ".ff"} {
				Expect(post(path, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, headers(forged)...).code).To(Equal(http.StatusNotFound), forged)
			}
		})

		It("takes the answer only from the session that was asked, once", func() {
			session := initialize(`{"elicitation":{}}`)
			id, events, body := startCall(session)
			defer body.Close()
			answer := `{"jsonrpc":"2.0","id":"` + id + `","result":{"action":"accept","content":{"name":"Raw"}}}`

			other := initialize(`{"elicitation":{}}`)
			wrong := post(path, answer, headers(other)...)
			Expect(wrong.code).To(Equal(http.StatusBadRequest), "another session's answer")
			Expect(string(wrong.body)).To(ContainSubstring("no request of this session waits"))
			Expect(post(path, `{"jsonrpc":"2.0","id":"mcp-operator-relay-00","result":{}}`, headers(session)...).code).To(Equal(http.StatusBadRequest), "an id never issued")

			Expect(post(path, answer, headers(session)...).code).To(Equal(http.StatusAccepted))
			Expect(post(path, answer, headers(session)...).code).To(Equal(http.StatusBadRequest), "a second answer")
			result := nextEvent(events)
			Expect(result).To(HaveKeyWithValue("id", BeEquivalentTo(7)))
			Expect(fmt.Sprint(result["result"])).To(ContainSubstring("hello Raw"))
		})

		It("refuses the server's question for a caller whose Accept allows no event stream", func() {
			session := initialize(`{"elicitation":{}}`)
			resp := post(path, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp_up_elicit","arguments":{}}}`,
				"Content-Type", "application/json", "Accept", "application/json", "MCP-Protocol-Version", "2025-11-25", "Mcp-Session-Id", session)
			Expect(resp.code).To(Equal(http.StatusOK), string(resp.body))
			Expect(resp.header.Get("Content-Type")).To(Equal("application/json"))
			Expect(string(resp.body)).To(ContainSubstring(noEventStream))
		})

		It("passes the caller's refusal to the server as it came", func() {
			session := initialize(`{"elicitation":{}}`)
			id, events, body := startCall(session)
			defer body.Close()
			Expect(post(path, `{"jsonrpc":"2.0","id":"`+id+`","error":{"code":-32601,"message":"no user at the keyboard"}}`, headers(session)...).code).To(Equal(http.StatusAccepted))
			result := nextEvent(events)
			Expect(fmt.Sprint(result["result"])).To(ContainSubstring("no user at the keyboard"))
		})

		It("ends the question with the call when the caller never answers", func() {
			session := initialize(`{"elicitation":{}}`)
			_, events, body := startCall(session)
			defer body.Close()
			// spec.timeout (5s) ends the call: the caller hears the question is
			// off, then the call's failure; nothing waits on.
			cancelled := nextEvent(events)
			Expect(cancelled).To(HaveKeyWithValue("method", "notifications/cancelled"))
			result := nextEvent(events)
			Expect(result).To(HaveKeyWithValue("id", BeEquivalentTo(7)))
			// Whether the server saw its question refused before the catalog
			// gave up on the call is a race of the same instant: either way
			// the call failed.
			Expect(result["result"]).To(HaveKeyWithValue("isError", true))
			Eventually(func() int {
				catalogUnderTest.mcp.relays.mu.Lock()
				defer catalogUnderTest.mcp.relays.mu.Unlock()
				return len(catalogUnderTest.mcp.relays.waiting)
			}).Should(BeZero(), "no request waits once its call ended")
		})
	})
})

// nextEvent reads the next event's JSON from an event stream.
func nextEvent(events *bufio.Reader) map[string]any {
	for {
		line, err := events.ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			var msg map[string]any
			Expect(json.Unmarshal([]byte(data), &msg)).To(Succeed(), data)
			return msg
		}
	}
}

// elicitFunc is mcp-go's client.ElicitationHandler as a func.
type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, r)
}
