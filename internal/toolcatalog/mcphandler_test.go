package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// connectMCP opens an MCP session to a catalog endpoint.
func connectMCP(url string, headers map[string]string, onChange func()) *mcpclient.Session {
	s, err := mcpclient.Connect(context.Background(), mcpclient.Target{URL: url, Transport: mcpclient.TransportStreamableHTTP,
		Headers: headers, Timeout: 10 * time.Second}, onChange)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.Close)
	return s
}

// heardGreeting waits for the list changes a 2026-07-28 stream begins with
// (tools, prompts and resources: docs/protocol.md), and forgets them, so
// that what the channel hears next is a change.
func heardGreeting(changed chan struct{}) {
	Eventually(func() int { return len(changed) }).Should(BeNumerically(">=", 3), "the stream began with its list changes")
	for len(changed) > 0 {
		<-changed
	}
}

func collection(ns, name string, names ...string) {
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: names}}}
	Expect(env.Client.Create(ctx, tc)).To(Succeed())
	Eventually(func() int {
		return get("/v1/namespaces/" + ns + "/toolcollections/" + name + "/tools").code
	}).Should(Equal(http.StatusOK))
}

var _ = Describe("The catalog as an MCP server", func() {
	var ns string
	BeforeEach(func() {
		ns = env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		collection(ns, "kit", "calc")
	})

	It("lists the same tools as the REST menu and calls them through the same path", func() {
		s := connectMCP(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/kit/mcp", nil, nil)
		Expect(s.Info().Name).To(Equal("mcp-operator/" + ns + "/kit"))
		listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
		Expect(err).NotTo(HaveOccurred())

		var rest struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		Expect(json.Unmarshal(get("/v1/namespaces/"+ns+"/toolcollections/kit/tools?format=mcp").body, &rest)).To(Succeed())
		Expect(listed.Tools).To(HaveLen(len(rest.Tools)))
		for i, t := range listed.Tools {
			Expect(t.Name).To(Equal(rest.Tools[i].Name))
			Expect(t.Description).To(Equal(rest.Tools[i].Description))
			Expect(string(t.InputSchema)).To(MatchJSON(rest.Tools[i].InputSchema))
		}

		result, err := s.CallTool(ctx, "mcp_calc_add", json.RawMessage(`{"a":20,"b":22}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse())
		Expect(string(result.Content[0])).To(MatchJSON(`{"type":"text","text":"42"}`))

		failed, err := s.CallTool(ctx, "mcp_calc_fail", json.RawMessage(`{}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(failed.IsError).To(BeTrue(), "a tool failure is a result with isError")

		invalid, err := s.CallTool(ctx, "mcp_calc_add", json.RawMessage(`{"a":"x"}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(invalid.IsError).To(BeTrue())
		Expect(string(invalid.Content[0])).To(ContainSubstring("do not match the input schema"))

		_, err = s.CallTool(ctx, "mcp_calc_nope", json.RawMessage(`{}`), mcpclient.CallOptions{})
		code, _, isRPC := mcpclient.RPCErrorOf(err)
		Expect(isRPC).To(BeTrue(), "an unknown tool is a JSON-RPC error: %v", err)
		Expect(code).To(Equal(-32602))
	})

	It("cuts a long result as REST does, and says so", func() {
		s := connectMCP(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/kit/mcp", nil, nil)
		result, err := s.CallTool(ctx, "mcp_calc_big", json.RawMessage(`{}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		var text []string
		for _, item := range result.Content {
			var part struct{ Text string }
			Expect(json.Unmarshal(item, &part)).To(Succeed())
			text = append(text, part.Text)
		}
		Expect(text).To(HaveLen(2))
		Expect(len(text[0])).To(BeNumerically("<=", suiteMaxResultText))
		Expect(text[0]).To(HavePrefix("éé"))
		Expect(text[1]).To(Equal(fmt.Sprintf("Output truncated: %d of 4000 bytes shown.", suiteMaxResultText)))
	})

	It("pages tools/list with cursors", func() {
		wide := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		names := make([]string, 230)
		for i := range names {
			names[i] = fmt.Sprintf("t%03d", i)
		}
		wide.AddTools(names...)
		readyServer(ns, "wide", wide.URL())
		collection(ns, "big", "wide")
		s := connectMCP(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/big/mcp", nil, nil)
		onePage, err := s.ListTools(ctx, mcpclient.Limits{MaxPages: 1, MaxTools: 1000})
		Expect(err).NotTo(HaveOccurred())
		Expect(onePage.Tools).To(HaveLen(mcpPageSize))
		Expect(onePage.Truncated).To(BeTrue())
		all, err := s.ListTools(ctx, mcpclient.DefaultLimits)
		Expect(err).NotTo(HaveOccurred())
		Expect(all.Tools).To(HaveLen(230))
	})

	It("tells listening clients when a menu changes", func() {
		upstream := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		upstream.AddTools("first")
		readyServer(ns, "live", upstream.URL(), testenv.Every(time.Hour))
		collection(ns, "watched", "live")
		changed := make(chan struct{}, 10)
		s := connectMCP(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/watched/mcp", nil, func() { changed <- struct{}{} })
		Expect(s.Info().ListChanged).To(BeTrue())
		Eventually(s.Listening).Should(BeTrue(), "the client's listening stream is open")
		heardGreeting(changed)
		Eventually(upstream.Listeners).Should(BeNumerically(">=", 1), "the controller listens to the upstream")

		upstream.AddTools("second")
		Eventually(changed).Should(Receive())
		listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
		Expect(err).NotTo(HaveOccurred())
		Expect(listed.Tools).To(HaveLen(2))
	})

	It("accepts same-origin and non-browser requests, and cross-origin ones only from allowed origins", func() {
		_, guarded := newCatalog(Options{AllowedOrigins: []string{"https://console.example"}})
		host := strings.TrimPrefix(guarded.URL, "http://")
		initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		send := func(headers ...string) response {
			return callTo(guarded.URL, "/mcp", initialize, append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)...)
		}
		Expect(send().code).To(Equal(http.StatusOK), "an agent, no browser headers")
		Expect(send("Origin", "http://"+host).code).To(Equal(http.StatusOK), "same origin")
		Expect(send("Origin", "https://console.example").code).To(Equal(http.StatusOK), "an allowed origin")
		r := send("Origin", "https://evil.example")
		Expect(r.code).To(Equal(http.StatusForbidden))
		Expect(r.json()["error"]).To(Equal("cross-origin request from https://evil.example is not allowed (--catalog-allowed-origins)"))
		Expect(send("Sec-Fetch-Site", "cross-site").code).To(Equal(http.StatusForbidden), "a browser saying it is cross-site")
		Expect(get("/v1/namespaces/" + ns + "/toolcollections/none/mcp").code).To(Equal(http.StatusNotFound))
	})

	It("answers only the hosts it is told to, against DNS rebinding", func() {
		_, guarded := newCatalog(Options{AllowedHosts: []string{"localhost", "127.0.0.1"}})
		rebound, err := http.NewRequest(http.MethodPost, guarded.URL+"/mcp", strings.NewReader(`{}`))
		Expect(err).NotTo(HaveOccurred())
		rebound.Host = "evil.example.com"
		rebound.Header.Set("Origin", "http://evil.example.com")
		resp, err := http.DefaultClient.Do(rebound)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "a page that rebound its name to the catalog")
		Expect(callTo(guarded.URL, "/v1/execute", `{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code).To(Equal(http.StatusOK), "127.0.0.1 with its port")
	})

	It("works with the MCP Inspector CLI, a client nobody here wrote", func() {
		listCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := testmcp.Inspector(listCtx, catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/kit/mcp", "--transport", "http", "--method", "tools/list")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"name": "mcp_calc_add"`))

		out, err = testmcp.Inspector(listCtx, catalog.URL+"/mcp", "--transport", "http", "--method", "tools/call",
			"--tool-name", "mcp_calc_add", "--tool-arg", "a=2", "--tool-arg", "b=3")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"text": "5"`))
	})
})
