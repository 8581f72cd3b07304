package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// mcpExchange is one HTTP exchange with a catalog's MCP endpoint: the
// status, the session id it set, and the JSON-RPC messages it carried
// (one for a JSON answer, each event of a stream).
type mcpExchange struct {
	status   int
	session  string
	messages []string
}

// rawMCP posts one JSON-RPC message, with the headers of a revision.
func rawMCP(url, session, revision, body string) mcpExchange {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if revision != "" {
		req.Header.Set("MCP-Protocol-Version", revision)
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal([]byte(body), &msg)
	if mcp.IsModernProtocol(revision) {
		req.Header.Set("Mcp-Method", msg.Method)
		if msg.Params.Name != "" {
			req.Header.Set("Mcp-Name", msg.Params.Name)
		}
	}
	resp, err := callers.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	out := mcpExchange{status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id")}
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, event := range strings.Split(raw.String(), "\n\n") {
			for _, line := range strings.Split(event, "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					out.messages = append(out.messages, data)
				}
			}
		}
	} else if raw.Len() > 0 {
		out.messages = []string{raw.String()}
	}
	return out
}

// statelessMeta is the _meta a 2026-07-28 request carries.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// listenFor opens a stream for list changes on a catalog (the GET of a
// session, or subscriptions/listen in 2026-07-28) and sends each message
// it carries to the returned channel until ctx ends.
func listenFor(ctx context.Context, url, session, revision string) <-chan string {
	var req *http.Request
	var err error
	if mcp.IsModernProtocol(revision) {
		body := `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{` + statelessMeta + `,"notifications":{"toolsListChanged":true}}}`
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Mcp-Session-Id", session)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", revision)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	messages := make(chan string, 16)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				messages <- data
			}
		}
	}()
	return messages
}

// Two replicas serve the catalog behind one Service, which spreads new
// connections across them: a caller's requests land on either. Nothing a
// replica keeps per session is needed to answer them.
var _ = Describe("Sessions on any replica", Ordered, func() {
	var (
		plane      *testenv.Env
		kubeconfig string
		bin        string
	)
	BeforeAll(func() {
		rig := newProcessRig()
		plane, kubeconfig, bin = rig.plane, rig.kubeconfig, rig.bin
	})

	It("serves a session begun on one replica from the other, listening stream and menu changes included, in every revision", func() {
		ns := plane.Namespace()
		up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		up.AddTool("echo", "Echoes.", `{"type":"object","properties":{"message":{"type":"string"}}}`)
		lease := []string{"--leader-elect", "--leader-election-namespace=" + ns,
			"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}
		a, b := startManager(bin, kubeconfig, lease...), startManager(bin, kubeconfig, lease...)
		srv := plane.CreateServer(ns, "shared", up.URL())
		Eventually(plane.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		for _, m := range []*managerProcess{a, b} {
			Eventually(func() string { return get(m.catalog, "/v1/tools").body }).Should(ContainSubstring("mcp_shared_echo"), m.String())
		}
		onA, onB := a.catalog+"/mcp", b.catalog+"/mcp"

		By("2025-11-25: initialize on A, everything else on B")
		init := rawMCP(onA, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		Expect(init.status).To(Equal(http.StatusOK))
		Expect(init.session).NotTo(BeEmpty())
		Expect(rawMCP(onB, init.session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`).status).To(Equal(http.StatusAccepted))
		listed := rawMCP(onB, init.session, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		Expect(listed.status).To(Equal(http.StatusOK))
		Expect(listed.messages).To(ContainElement(ContainSubstring(`"name":"mcp_shared_echo"`)))
		called := rawMCP(onB, init.session, "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_shared_echo","arguments":{"message":"via B"}}}`)
		Expect(called.status).To(Equal(http.StatusOK))
		Expect(called.messages).To(ContainElement(ContainSubstring(`via B`)))

		By("2026-07-28: no session at all, any replica")
		statelessCall := rawMCP(onA, "", "2026-07-28", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp_shared_echo","arguments":{"message":"stateless"},`+statelessMeta+`}}`)
		Expect(statelessCall.status).To(Equal(http.StatusOK))
		Expect(statelessCall.messages).To(ContainElement(ContainSubstring(`stateless`)))

		By("listening on B, for both revisions, while the menu changes")
		listenCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		withSession := listenFor(listenCtx, onB, init.session, "2025-11-25")
		stateless := listenFor(listenCtx, onB, "", "2026-07-28")
		// Every stream begins by saying the tools changed, so that its
		// client lists them again: a replica cannot know what it missed.
		Eventually(withSession).Should(Receive(ContainSubstring("notifications/tools/list_changed")))
		Eventually(stateless).Should(Receive(ContainSubstring("notifications/subscriptions/acknowledged")))
		Eventually(stateless).Should(Receive(ContainSubstring("notifications/tools/list_changed")))
		up.AddTools("second")
		Eventually(withSession, 30*time.Second).Should(Receive(ContainSubstring("notifications/tools/list_changed")))
		Eventually(stateless, 30*time.Second).Should(Receive(ContainSubstring("notifications/tools/list_changed")))
		listed = rawMCP(onB, init.session, "2025-11-25", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
		Expect(listed.messages).To(ContainElement(ContainSubstring(`"name":"mcp_shared_second"`)))

		By("a cancel for a call the replica does not run is accepted and changes nothing")
		Expect(rawMCP(onA, init.session, "2025-11-25", fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, 99)).status).To(Equal(http.StatusAccepted))
	})

	It("keeps a session's resource subscription on every replica: subscribed on one, heard on the other", func() {
		ns := plane.Namespace()
		up := testmcp.StartGoSDK(testmcp.GoSDKSessions, testmcp.GoSDKOptions{Subscriptions: func(string) {}})
		DeferCleanup(up.Stop)
		up.AddRawTool("noop", "Does nothing.", `{"type":"object"}`, func(json.RawMessage) string { return "ok" })
		up.Server.AddResource(&sdk.Resource{URI: "file:///watched.txt", Name: "watched"}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, Text: "now"}}}, nil
		})
		a, b := twoReplicas(plane, ns, kubeconfig, bin)
		Eventually(plane.ReadyOf(plane.CreateServer(ns, "files", up.URL()))).Should(Equal("True/ToolsDiscovered"))
		exposed := "file://files." + ns + "//watched.txt"
		init := rawMCP(a.catalog+"/mcp", "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		Expect(init.status).To(Equal(http.StatusOK))
		for _, m := range []*managerProcess{a, b} {
			Eventually(func() []string {
				return rawMCP(m.catalog+"/mcp", init.session, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`).messages
			}).Should(ContainElement(ContainSubstring(exposed)), m.String())
		}

		By("the session's stream on B, its subscription through A")
		listenCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		messages := listenFor(listenCtx, b.catalog+"/mcp", init.session, "2025-11-25")
		subscribed := rawMCP(a.catalog+"/mcp", init.session, "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"`+exposed+`"}}`)
		Expect(subscribed.messages).To(ConsistOf(MatchJSON(`{"jsonrpc":"2.0","id":3,"result":{}}`)))

		By("an update of the resource reaches the stream on B")
		update := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"` + exposed + `"}}`
		Eventually(func() []string {
			Expect(up.Server.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///watched.txt"})).To(Succeed())
			var heard []string
			for {
				select {
				case m := <-messages:
					heard = append(heard, m)
				default:
					return heard
				}
			}
		}).Should(ContainElement(MatchJSON(update)))
	})

	It("forwards the caller's answer to the replica that asked, and only to a replica", func() {
		ns := plane.Namespace()
		up := testmcp.StartGoSDK(testmcp.GoSDKSessions)
		DeferCleanup(up.Stop)
		up.AddElicitingTool()
		a, b := twoReplicas(plane, ns, kubeconfig, bin)
		up2026 := testmcp.StartGoSDK(testmcp.GoSDKOnly2026)
		DeferCleanup(up2026.Stop)
		up2026.AddAskingTool()
		srv := plane.CreateServer(ns, "asker", up.URL())
		Eventually(plane.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		Eventually(plane.ReadyOf(plane.CreateServer(ns, "mrtr", up2026.URL()))).Should(Equal("True/ToolsDiscovered"))
		for _, m := range []*managerProcess{a, b} {
			Eventually(func() string { return get(m.catalog, "/v1/tools").body }).Should(And(ContainSubstring("mcp_asker_elicit"), ContainSubstring("mcp_mrtr_ask")), m.String())
		}

		By("2026-07-28: the call on A, sent again with its answers through B")
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		asked := rawMCP(a.catalog+"/mcp", "", "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_mrtr_ask","arguments":{},`+meta+`}}`)
		Expect(asked.status).To(Equal(http.StatusOK))
		var first struct {
			Result struct {
				ResultType   string `json:"resultType"`
				RequestState string `json:"requestState"`
			} `json:"result"`
		}
		Expect(asked.messages).To(HaveLen(1))
		Expect(json.Unmarshal([]byte(asked.messages[0]), &first)).To(Succeed())
		Expect(first.Result.ResultType).To(Equal("input_required"))
		Expect(first.Result.RequestState).To(HavePrefix("mcpop1.catalog-a."))
		again := rawMCP(b.catalog+"/mcp", "", "2026-07-28", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_mrtr_ask","arguments":{},`+
			`"inputResponses":{"who":{"action":"accept","content":{"name":"via B"}}},"requestState":"`+first.Result.RequestState+`",`+meta+`}}`)
		Expect(again.status).To(Equal(http.StatusOK))
		Expect(again.messages).To(ContainElement(ContainSubstring(`hello via B`)), "B forwarded the call to A, which holds the key")

		By("2026-07-28 and a server of 2025-11-25: the call parked on A, its answers through B")
		var parked struct {
			Result struct {
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				RequestState  string                     `json:"requestState"`
			} `json:"result"`
		}
		asked = rawMCP(a.catalog+"/mcp", "", "2026-07-28", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_asker_elicit","arguments":{},`+meta+`}}`)
		Expect(asked.messages).To(HaveLen(1))
		Expect(json.Unmarshal([]byte(asked.messages[0]), &parked)).To(Succeed())
		Expect(parked.Result.RequestState).To(HavePrefix("mcpop1.catalog-a."))
		Expect(parked.Result.InputRequests).To(HaveLen(1))
		responses := map[string]any{}
		for key := range parked.Result.InputRequests {
			responses[key] = map[string]any{"action": "accept", "content": map[string]any{"name": "parked on A"}}
		}
		encoded, err := json.Marshal(responses)
		Expect(err).NotTo(HaveOccurred())
		again = rawMCP(b.catalog+"/mcp", "", "2026-07-28", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp_asker_elicit","arguments":{},`+
			`"inputResponses":`+string(encoded)+`,"requestState":"`+parked.Result.RequestState+`",`+meta+`}}`)
		Expect(again.messages).To(ContainElement(ContainSubstring(`hello parked on A`)), "B forwarded the answers to A, which holds the call")

		By("the call on A, the answer to its question through B")
		onA, err := url.Parse(a.catalog)
		Expect(err).NotTo(HaveOccurred())
		onB, err := url.Parse(b.catalog)
		Expect(err).NotTo(HaveOccurred())
		route := &splitRoute{calls: onA, answers: onB}
		client := sdk.NewClient(&sdk.Implementation{Name: "split", Version: "1"}, &sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Zoë"}}, nil
			},
		})
		session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: a.catalog + "/mcp", HTTPClient: &http.Client{Transport: route}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(session.Close)
		result, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "mcp_asker_elicit", Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Content).To(HaveLen(1))
		Expect(result.Content[0].(*sdk.TextContent).Text).To(Equal("hello Zoë"))
		// The answer to the relayed question went to B, and A accepted it;
		// the client may answer other requests of the server's too. The
		// call's result can reach the client before B's 202 for the answer
		// does (A delivered it first), so this waits for it.
		Eventually(route.sent).Should(ContainElement(MatchRegexp(`^"mcp-operator-relay-[0-9a-f]+\.catalog-a" 202$`)))

		By("an id naming a pod that is not a replica is not forwarded")
		var hits atomic.Int32
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			w.WriteHeader(http.StatusAccepted)
		}))
		DeferCleanup(elsewhere.Close)
		replicaPod(plane, ns, "intruder", elsewhere.URL, map[string]string{"app": "other"})
		init := rawMCP(b.catalog+"/mcp", "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		Expect(init.status).To(Equal(http.StatusOK))
		for _, owner := range []string{"intruder", "no-such-pod", "catalog-b", "Not_A_Pod"} {
			made := rawMCP(b.catalog+"/mcp", init.session, "2025-11-25", `{"jsonrpc":"2.0","id":"mcp-operator-relay-00.`+owner+`","result":{"action":"decline"}}`)
			Expect(made.status).To(Equal(http.StatusBadRequest), owner)
		}
		Expect(hits.Load()).To(BeZero(), "a pod without the manager's labels got an answer")
	})
})
