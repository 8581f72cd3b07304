package toolcatalog

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// failingCalls fronts a real server at backend: tools/list and the rest
// pass, so the server is discovered and stays Ready, but a call to
// "overloaded" is answered 500 and a call to "hangup" has its connection
// closed unanswered. It stops with the test.
func failingCalls(backend string) *httptest.Server {
	target, err := url.Parse(backend)
	Expect(err).NotTo(HaveOccurred())
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.FlushInterval = -1
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			_ = json.Unmarshal(body, &msg)
		}
		switch {
		case msg.Method == "tools/call" && msg.Params.Name == "overloaded":
			http.Error(w, "overloaded", http.StatusInternalServerError)
		case msg.Method == "tools/call" && msg.Params.Name == "hangup":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		default:
			_ = http.NewResponseController(w).EnableFullDuplex()
			proxy.ServeHTTP(w, r)
		}
	}))
	DeferCleanup(front.Close)
	return front
}

var _ = Describe("A failure upstream as the caller reads it", func() {
	var ns, server, address, base string
	BeforeEach(func() {
		ns = env.Namespace()
		backend := calcServer()
		backend.AddTools("overloaded", "hangup")
		front := failingCalls(backend.URL())
		address = strings.TrimPrefix(front.URL, "http://")
		readyServer(ns, "flaky", front.URL+"/mcp")
		server = ns + "/flaky"
		collection(ns, "kit", "flaky")
		base = "/v1/namespaces/" + ns + "/toolcollections/kit"
	})

	// told checks one answer: it names the MCPServer, never where the
	// server runs.
	told := func(answer string) {
		GinkgoHelper()
		Expect(answer).To(ContainSubstring("MCPServer " + server))
		Expect(answer).NotTo(ContainSubstring(address), "the caller learns the server's address")
		Expect(answer).NotTo(ContainSubstring("127.0.0.1"), "the caller learns the server's address")
	}
	failures := func(kind string) float64 {
		return testutil.ToFloat64(upstreamErrors.WithLabelValues(server, kind))
	}

	It("names the MCPServer, not its address, over REST, its event stream and MCP, failing as before", func() {
		for _, tc := range []struct{ tool, kind, says string }{
			{"mcp_flaky_overloaded", "HTTPError", "answered HTTP 500 Internal Server Error: overloaded"},
			{"mcp_flaky_hangup", "Unreachable", "closed the connection before answering"},
		} {
			By(tc.tool + " over REST")
			before := failures(tc.kind)
			r := post(base+"/execute", `{"name":"`+tc.tool+`"}`)
			Expect(r.code).To(Equal(http.StatusBadGateway), string(r.body))
			told(r.json()["error"].(string))
			Expect(r.json()["error"]).To(ContainSubstring(tc.says))
			Expect(failures(tc.kind)).To(Equal(before+1), "classified as %s", tc.kind)

			By(tc.tool + " over REST as an event stream")
			r = post(base+"/execute", `{"name":"`+tc.tool+`"}`, "Accept", "text/event-stream")
			Expect(string(r.body)).To(ContainSubstring("event: error"))
			Expect(string(r.body)).To(ContainSubstring(`"status":502`))
			told(string(r.body))

			By(tc.tool + " over MCP")
			before = failures(tc.kind)
			s := connectMCP(catalog.URL+base+"/mcp", nil, nil)
			result, err := s.CallTool(ctx, tc.tool, json.RawMessage(`{}`), mcpclient.CallOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.IsError).To(BeTrue())
			Expect(result.Content).To(HaveLen(1))
			told(string(result.Content[0]))
			Expect(string(result.Content[0])).To(ContainSubstring(tc.says))
			Expect(failures(tc.kind)).To(Equal(before+1), "classified as %s", tc.kind)
		}

		By("the debug log keeps the address, with the kind")
		Expect(suiteLogs.String()).To(MatchRegexp(`"server": "%s".*"reason": "HTTPError".*"url": "http://%s/mcp"`, server, address))
	})

	It("names no address in a JSON-RPC error answering a call", func() {
		r := post(base+"/execute", `{"name":"mcp_flaky_broken"}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["isError"]).To(BeTrue())
		Expect(r.json()["error"]).To(HaveSuffix("answered with JSON-RPC error -32603: the backend is down (JSON-RPC error -32603)"))
		Expect(r.json()["error"]).NotTo(ContainSubstring(address))
	})

	It("names the MCPServer, not its address, through call_tool", func() {
		finder := searchedCollection(ns, "finder", nil, "flaky")
		s := connectMCP(catalog.URL+finder+"/mcp", nil, nil)
		result, err := s.CallTool(ctx, "call_tool", json.RawMessage(`{"name":"mcp_flaky_overloaded"}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeTrue())
		Expect(result.Content).To(HaveLen(1))
		told(string(result.Content[0]))
	})

	It("says a withheld tool's server is not Ready without saying where it runs", func() {
		away := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		away.AddTools("gone_tool")
		srv := readyServer(ns, "away", away.URL())
		awayURL, err := url.Parse(away.URL())
		Expect(err).NotTo(HaveOccurred())
		awayAddress := awayURL.Host
		away.Stop() // its held session ends, and the controller notices at once
		Eventually(env.ReadyOf(srv)).Should(HavePrefix("False/"))
		Expect(env.Fetch(srv).Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring(awayAddress))),
			"the condition, for those who run the server, names it")
		var answer string
		Eventually(func() string {
			answer = string(post("/v1/execute", `{"name":"mcp_away_gone_tool"}`).body)
			return answer
		}).
			Should(ContainSubstring("MCPServer " + ns + "/away is not Ready ("))
		Expect(answer).NotTo(ContainSubstring(awayAddress), "the caller learns the server's address")
	})

})
