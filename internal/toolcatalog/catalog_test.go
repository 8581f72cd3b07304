package toolcatalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

const addSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`

// calcServer is an MCP server with the tools the execute tests need.
func calcServer() *testmcp.Server {
	mcpSrv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
	mcpSrv.AddToolFunc("add", "Adds two numbers", addSchema, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.GetArguments()
		return mcp.NewToolResultText(fmt.Sprint(args["a"].(float64) + args["b"].(float64))), nil
	})
	mcpSrv.AddToolFunc("fail", "Always fails", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("the disk is full"), nil
	})
	mcpSrv.AddToolFunc("broken", "Fails as a request", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("the backend is down")
	})
	mcpSrv.AddToolFunc("big", "Long output", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("é", 2000)), nil
	})
	mcpSrv.AddToolFunc("picture", "An image", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultImage("a red dot", "aW1hZ2U=", "image/png"), nil
	})
	mcpSrv.AddToolFunc("slow", "Takes 30 seconds", `{"type":"object"}`, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(30 * time.Second):
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("done"), nil
	})
	return mcpSrv
}

// readyServer points an MCPServer at an MCP server and waits for Ready, and
// for the catalog to serve what Ready said: the catalog reads the manager's
// cache, a moment behind the API server, and takes up a change when its
// event handler has run, a moment after the cache.
func readyServer(ns, name, url string, mutate ...func(*mcpv1alpha1.MCPServer)) *mcpv1alpha1.MCPServer {
	srv := env.CreateServer(ns, name, url, mutate...)
	Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
	if len(env.Fetch(srv).Status.Tools) == 0 {
		return srv
	}
	// A fresh server has tools in status only once it was Ready: a menu that
	// serves one of them was built from a cache that holds Ready. Both the
	// namespace's menu and the whole one, which are built apart.
	for _, namespace := range []string{ns, ""} {
		Eventually(func() bool {
			vw, err := catalogUnderTest.menus.view(ctx, viewKey{kind: globalView, namespace: namespace})
			if err != nil {
				return false
			}
			for _, entry := range vw.menu.Tools {
				if entry.Namespace == ns && entry.Server == name {
					return true
				}
			}
			return false
		}).Should(BeTrue(), "the catalog serves %s/%s", ns, name)
	}
	return srv
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) json() map[string]any {
	var out map[string]any
	Expect(json.Unmarshal(r.body, &out)).To(Succeed(), string(r.body))
	return out
}

func do(method, path, body string, headers ...string) response {
	return doAt(catalog.URL, method, path, body, headers...)
}

// doAt sends a request to the catalog at base; headers come as name,
// value pairs.
func doAt(base, method, path, body string, headers ...string) response {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	// Ask for gzip explicitly so that the client does not decode it.
	if req.Header.Get("Accept-Encoding") == "" {
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return response{code: resp.StatusCode, header: resp.Header, body: raw}
}

func get(path string, headers ...string) response { return do(http.MethodGet, path, "", headers...) }
func post(path, body string, headers ...string) response {
	return do(http.MethodPost, path, body, headers...)
}

var _ = Describe("Menus", func() {
	It("serves status in the three formats, schemas byte for byte", func() {
		ns := env.Namespace()
		mcpSrv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		tool := mcp.Tool{Name: "forecast", Title: "Forecast", Description: "Weather forecast",
			RawInputSchema:  json.RawMessage(`{"type":"object","$defs":{"u":{"enum":["c","f"]}},"properties":{"unit":{"$ref":"#/$defs/u"},"days":{"type":"integer","maximum":14}}}`),
			RawOutputSchema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}}}`),
			Annotations:     mcp.ToolAnnotation{ReadOnlyHint: ptr.To(true)}}
		mcpSrv.MCP.AddTool(tool, nil)
		srv := readyServer(ns, "weather", mcpSrv.URL())
		stored := env.Fetch(srv).Status.Tools[0]

		openai := get("/v1/namespaces/" + ns + "/mcpservers/weather/tools")
		Expect(openai.code).To(Equal(http.StatusOK))
		var openaiBody struct {
			Revision string `json:"revision"`
			Tools    []struct {
				Type     string `json:"type"`
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		Expect(json.Unmarshal(openai.body, &openaiBody)).To(Succeed())
		Expect(openaiBody.Tools).To(HaveLen(1))
		Expect(openaiBody.Tools[0].Type).To(Equal("function"))
		Expect(openaiBody.Tools[0].Function.Name).To(Equal("mcp_weather_forecast"))
		Expect(openaiBody.Tools[0].Function.Description).To(Equal("Weather forecast"))
		Expect(string(openaiBody.Tools[0].Function.Parameters)).To(Equal(string(stored.InputSchema.Raw)))
		Expect(openaiBody.Revision).NotTo(BeEmpty())

		var anthropicBody struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
		}
		Expect(json.Unmarshal(get("/v1/namespaces/"+ns+"/mcpservers/weather/tools?format=anthropic").body, &anthropicBody)).To(Succeed())
		Expect(anthropicBody.Tools[0].Name).To(Equal("mcp_weather_forecast"))
		Expect(string(anthropicBody.Tools[0].InputSchema)).To(Equal(string(stored.InputSchema.Raw)))

		var mcpBody struct {
			Tools []struct {
				Name         string                       `json:"name"`
				Title        string                       `json:"title"`
				InputSchema  json.RawMessage              `json:"inputSchema"`
				OutputSchema json.RawMessage              `json:"outputSchema"`
				Annotations  *mcpv1alpha1.ToolAnnotations `json:"annotations"`
			} `json:"tools"`
		}
		Expect(json.Unmarshal(get("/v1/namespaces/"+ns+"/mcpservers/weather/tools?format=mcp").body, &mcpBody)).To(Succeed())
		Expect(mcpBody.Tools[0].Title).To(Equal("Forecast"))
		Expect(string(mcpBody.Tools[0].InputSchema)).To(Equal(string(stored.InputSchema.Raw)))
		Expect(string(mcpBody.Tools[0].OutputSchema)).To(Equal(string(stored.OutputSchema.Raw)))
		Expect(*mcpBody.Tools[0].Annotations.ReadOnlyHint).To(BeTrue())

		Expect(get("/v1/namespaces/" + ns + "/mcpservers/weather/tools?format=xml").code).To(Equal(http.StatusBadRequest))
		Expect(get("/v1/namespaces/" + ns + "/mcpservers/nobody/tools").code).To(Equal(http.StatusNotFound))
	})

	It("answers 304 to a matching ETag and gzips when asked", func() {
		ns := env.Namespace()
		mcpSrv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcpSrv.AddTools("a", "b")
		readyServer(ns, "cached", mcpSrv.URL())
		path := "/v1/namespaces/" + ns + "/mcpservers/cached/tools"

		first := get(path)
		etag := first.header.Get("ETag")
		Expect(etag).To(MatchRegexp(`^"[0-9a-f]{64}"$`))
		Expect(first.json()["revision"]).To(Equal(strings.Trim(etag, `"`)))
		again := get(path, "If-None-Match", etag)
		Expect(again.code).To(Equal(http.StatusNotModified))
		Expect(again.body).To(BeEmpty())
		Expect(get(path, "If-None-Match", `"stale"`).code).To(Equal(http.StatusOK))

		zipped := get(path, "Accept-Encoding", "gzip")
		Expect(zipped.header.Get("Content-Encoding")).To(Equal("gzip"))
		zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
		Expect(err).NotTo(HaveOccurred())
		plain, err := io.ReadAll(zr)
		Expect(err).NotTo(HaveOccurred())
		Expect(plain).To(Equal(first.body))
	})

	It("serves a collection's menu with its overrides, and the global menu with its conflicts", func() {
		ns := env.Namespace()
		for _, name := range []string{"one", "two"} {
			mcpSrv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
			mcpSrv.AddTools("shared", "only_"+name)
			readyServer(ns, name, mcpSrv.URL(), func(s *mcpv1alpha1.MCPServer) {
				s.Spec.ToolPrefix = "same"
				s.Labels = map[string]string{"team": "a"}
			})
		}
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "menu"},
			Spec: mcpv1alpha1.ToolCollectionSpec{
				Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
				Tools: &mcpv1alpha1.ToolSelection{Exclude: []string{"mcp_same_only_two"}, Overrides: []mcpv1alpha1.ToolOverride{
					{Name: "mcp_same_only_one", Rename: "first", Description: ptr.To("The first one.")}}},
			}}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())

		type entry struct {
			Function struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"function"`
		}
		var body struct {
			Tools     []entry `json:"tools"`
			Conflicts []struct {
				Name    string   `json:"name"`
				Servers []string `json:"servers"`
			} `json:"conflicts"`
		}
		Eventually(func() []string {
			body.Tools = nil
			Expect(json.Unmarshal(get("/v1/namespaces/"+ns+"/toolcollections/menu/tools").body, &body)).To(Succeed())
			var names []string
			for _, t := range body.Tools {
				names = append(names, t.Function.Name+": "+t.Function.Description)
			}
			return names
		}).Should(Equal([]string{"first: The first one.", "mcp_same_shared: tool shared"}))

		Expect(json.Unmarshal(get("/v1/tools?namespace="+ns).body, &body)).To(Succeed())
		Expect(body.Tools).To(HaveLen(3))
		Expect(body.Conflicts).To(HaveLen(1))
		Expect(body.Conflicts[0].Name).To(Equal("mcp_same_shared"))
		Expect(body.Conflicts[0].Servers).To(Equal([]string{ns + "/one", ns + "/two"}))
		Expect(get("/v1/namespaces/" + ns + "/toolcollections/absent/tools").code).To(Equal(http.StatusNotFound))
	})

	It("shows a tool added upstream as soon as the server says so, not at the next refresh", func() {
		ns := env.Namespace()
		mcpSrv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		mcpSrv.AddTools("first")
		readyServer(ns, "growing", mcpSrv.URL(), testenv.Every(time.Hour))
		path := "/v1/namespaces/" + ns + "/mcpservers/growing/tools"
		Expect(get(path).body).NotTo(ContainSubstring("mcp_growing_second"))
		// The controller's session hears list_changed on its listening stream.
		Eventually(mcpSrv.Listeners).Should(BeNumerically(">=", 1))

		mcpSrv.AddTools("second")
		// The refresh interval is an hour: only the notification brings it.
		Eventually(func() string { return string(get(path).body) }).Should(ContainSubstring("mcp_growing_second"))
	})
})

var _ = Describe("Execute", func() {
	var (
		ns     string
		mcpSrv *testmcp.Server
	)
	BeforeEach(func() {
		ns = env.Namespace()
		mcpSrv = calcServer()
		readyServer(ns, "calc", mcpSrv.URL(), func(s *mcpv1alpha1.MCPServer) {
			// Short enough for the slow tool's 504 spec, long enough that
			// no other call of these specs meets it on a busy machine.
			s.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Second}
			s.Labels = map[string]string{"team": "math"}
		})
	})
	execute := func(body string, headers ...string) response { return post("/v1/execute", body, headers...) }

	It("runs a call given as name and arguments", func() {
		r := execute(`{"name":"mcp_calc_add","arguments":{"a":2,"b":40}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		out := r.json()
		Expect(out["output"]).To(Equal("42"))
		Expect(out["isError"]).To(BeFalse())
		Expect(out).NotTo(HaveKey("error"))
		Expect(out["content"]).To(Equal([]any{map[string]any{"type": "text", "text": "42"}}))
		Expect(out).NotTo(HaveKey("message"))
	})

	It("runs an OpenAI tool call as a model returns it and answers with the message to append", func() {
		r := execute(`{"id":"call_1","type":"function","function":{"name":"mcp_calc_add","arguments":"{\"a\": 1, \"b\": 2}"}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["message"]).To(Equal(map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "3"}))
	})

	It("returns a tool failure as an observation, not an HTTP error", func() {
		r := execute(`{"name":"mcp_calc_fail"}`)
		Expect(r.code).To(Equal(http.StatusOK))
		Expect(r.json()["isError"]).To(BeTrue())
		Expect(r.json()["error"]).To(Equal("the disk is full"))

		// A JSON-RPC error answering the call is an observation too.
		r = execute(`{"name":"mcp_calc_broken"}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["isError"]).To(BeTrue())
		Expect(r.json()["error"]).To(HaveSuffix("answered with JSON-RPC error -32603: the backend is down (JSON-RPC error -32603)"))
	})

	It("puts the first image in base64_image", func() {
		r := execute(`{"name":"mcp_calc_picture"}`)
		Expect(r.code).To(Equal(http.StatusOK))
		Expect(r.json()["base64_image"]).To(Equal("aW1hZ2U="))
		Expect(r.json()["output"]).To(Equal("a red dot"))
	})

	It("cuts long output and says so", func() {
		r := execute(`{"name":"mcp_calc_big"}`)
		Expect(r.code).To(Equal(http.StatusOK))
		out := r.json()
		Expect(len(out["output"].(string))).To(BeNumerically("<=", suiteMaxResultText))
		Expect(out["output"]).To(HavePrefix("éé"))
		Expect(out["system"]).To(Equal(fmt.Sprintf("Output truncated: %d of 4000 bytes shown.", suiteMaxResultText)))
		content := out["content"].([]any)
		Expect(content).To(HaveLen(1))
		Expect(content[0]).To(HaveKeyWithValue("text", out["output"]), "content is cut like output")
	})

	DescribeTable("answers bad requests with their status code and a JSON error",
		func(path, body string, code int, message string) {
			if path == "" {
				path = "/v1/execute"
			}
			r := post(strings.ReplaceAll(path, "NS", ns), body)
			Expect(r.code).To(Equal(code), string(r.body))
			Expect(r.json()["error"]).To(ContainSubstring(message))
		},
		Entry("an unknown tool", "", `{"name":"mcp_calc_nope"}`, 404, "Tool mcp_calc_nope is invalid"),
		Entry("malformed JSON", "", `{"name":`, 400, "not valid JSON"),
		Entry("no tool name", "", `{"arguments":{}}`, 400, "names no tool"),
		Entry("arguments that are not an object", "", `{"name":"mcp_calc_add","arguments":[1,2]}`, 400, "arguments must be a JSON object"),
		Entry("OpenAI arguments that are not an object", "", `{"id":"c","type":"function","function":{"name":"mcp_calc_add","arguments":"[1]"}}`, 400, "arguments must be a JSON object"),
		Entry("arguments that fail the schema", "", `{"name":"mcp_calc_add","arguments":{"a":"two"}}`, 422, "arguments do not match the input schema of mcp_calc_add"),
		Entry("a body over the cap", "", `{"name":"mcp_calc_add","arguments":{"pad":"`+strings.Repeat("x", suiteMaxRequestBytes)+`"}}`, 413, "request body is over"),
		Entry("a collection that does not exist", "/v1/namespaces/NS/toolcollections/none/execute", `{"name":"mcp_calc_add"}`, 404, "ToolCollection"),
	)

	It("lists every schema violation", func() {
		r := execute(`{"name":"mcp_calc_add","arguments":{"a":"two","c":1}}`)
		Expect(r.code).To(Equal(http.StatusUnprocessableEntity))
		Expect(r.json()["details"]).To(HaveLen(3), string(r.body)) // a's type, b missing, c not allowed
	})

	It("keeps calls inside the addressed collection", func() {
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adders"},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"calc"}},
				Tools: &mcpv1alpha1.ToolSelection{Include: []string{"mcp_calc_add"}}}}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())
		path := "/v1/namespaces/" + ns + "/toolcollections/adders/execute"
		Eventually(func() int { return post(path, `{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code }).Should(Equal(http.StatusOK))
		r := post(path, `{"name":"mcp_calc_fail"}`)
		Expect(r.code).To(Equal(http.StatusNotFound))
		Expect(r.json()["error"]).To(Equal("Tool mcp_calc_fail is invalid"))
	})

	It("answers 504 when the server takes longer than its timeout", func() {
		id := "slow-" + ns
		r := execute(`{"name":"mcp_calc_slow"}`, "X-Request-Id", id)
		Expect(r.code).To(Equal(http.StatusGatewayTimeout), string(r.body))
		Expect(r.json()["error"]).To(ContainSubstring("did not answer within 5s"))
		By("the debug log names why, never the server's words")
		var line string
		for _, l := range strings.Split(suiteLogs.String(), "\n") {
			if strings.Contains(l, "Tool call") && strings.Contains(l, id) {
				line = l
			}
		}
		Expect(line).To(ContainSubstring(`"outcome": "upstream_timeout"`))
		Expect(line).To(ContainSubstring(`"reason": "Timeout"`))
		Expect(line).NotTo(ContainSubstring("did not answer"))
		// The session survives a slow call.
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code).To(Equal(http.StatusOK))
	})

	It("reuses one session for many calls", func() {
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":0,"b":0}}`).code).To(Equal(http.StatusOK))
		before := mcpSrv.Connects()
		for i := range 100 {
			r := execute(fmt.Sprintf(`{"name":"mcp_calc_add","arguments":{"a":%d,"b":1}}`, i))
			Expect(r.code).To(Equal(http.StatusOK))
			Expect(r.json()["output"]).To(Equal(fmt.Sprint(i + 1)))
		}
		Expect(mcpSrv.Connects()).To(Equal(before), "no initialize or discover per call")
	})

	It("counts calls, outcomes and latency in Prometheus metrics", func() {
		server := ns + "/calc"
		before := testutil.ToFloat64(toolCalls.WithLabelValues(server, "add", "success"))
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code).To(Equal(http.StatusOK))
		Expect(execute(`{"name":"mcp_calc_fail"}`).code).To(Equal(http.StatusOK))
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":"x"}}`).code).To(Equal(http.StatusUnprocessableEntity))
		served := get("/v1/namespaces/" + ns + "/mcpservers/calc/tools")
		Expect(served.code).To(Equal(http.StatusOK), string(served.body))
		Expect(testutil.ToFloat64(toolsServed.WithLabelValues("server " + server))).To(BeEquivalentTo(6))
		Expect(testutil.ToFloat64(toolCalls.WithLabelValues(server, "add", "success"))).To(Equal(before + 1))
		Expect(testutil.ToFloat64(toolCalls.WithLabelValues(server, "fail", "tool_error"))).To(BeNumerically(">=", 1))
		Expect(testutil.ToFloat64(toolCalls.WithLabelValues(server, "add", "invalid_arguments"))).To(BeNumerically(">=", 1))

		// They are served on the manager's registry, which /metrics exposes.
		families, err := metrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		names := map[string]bool{}
		for _, f := range families {
			names[f.GetName()] = true
		}
		Expect(names).To(HaveKey("mcp_catalog_tool_calls_total"))
		Expect(names).To(HaveKey("mcp_catalog_tool_call_duration_seconds"))
		Expect(names).To(HaveKey("mcp_catalog_tools_served"))
	})

	It("closes the pooled session of a deleted server", func() {
		// A REST call that asks for no events goes on the server's
		// answers-only session, one that asks for events on its stateless
		// one (call_upstream.go): both go with the server.
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code).To(Equal(http.StatusOK))
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`, "Accept", "text/event-stream").code).To(Equal(http.StatusOK))
		keys := []string{ns + "/calc" + answersOnlyKey, ns + "/calc"}
		for _, key := range keys {
			Expect(catalogUnderTest.pool.Held(key)).To(BeTrue(), "%q", key)
		}
		Expect(env.Client.Delete(ctx, &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "calc"}})).To(Succeed())
		for _, key := range keys {
			Eventually(func() bool { return catalogUnderTest.pool.Held(key) }).Should(BeFalse(), "%q", key)
		}
	})

	It("calls a server the menu lists before the informer delivered it to the call path", func() {
		// The menu is read from the cache, whose store moves before the
		// informer's handlers hear of it: a catalog just started lists the
		// servers the informer is still handing its registry.
		key := ns + "/calc"
		Eventually(func() *upstream { return catalogUnderTest.upstreams.get(key) }).ShouldNot(BeNil())
		catalogUnderTest.upstreams.forget(key) // as if not delivered yet
		r := execute(`{"name":"mcp_calc_add","arguments":{"a":2,"b":3}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["output"]).To(Equal("5"))
		Expect(catalogUnderTest.upstreams.get(key)).NotTo(BeNil(), "kept for the calls after it")
	})

	It("never forwards the caller's Authorization header", func() {
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`, "Authorization", "Bearer caller-secret").code).To(Equal(http.StatusOK))
		Expect(mcpSrv.HeaderValues("Authorization")).NotTo(ContainElement(ContainSubstring("caller-secret")))
	})

	It("answers 502 while the server is away and recovers when it is back", func() {
		Expect(execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code).To(Equal(http.StatusOK))
		mcpSrv.Stop()
		r := execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`)
		Expect(r.code).To(Equal(http.StatusBadGateway), string(r.body))
		// Before the controller notices, the call fails on the connection;
		// after, the tool is withheld with the server's reason.
		Expect(r.json()["error"]).To(MatchRegexp("refused the connection|closed the connection|could not be reached|is not Ready"))
		Expect(mcpSrv.Restart()).To(Succeed())
		Eventually(func() int { return execute(`{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code }).Should(Equal(http.StatusOK))
	})
})

var _ = Describe("The catalog against @modelcontextprotocol/server-everything", func() {
	It("executes its echo and get-sum tools", func() {
		everything, err := testmcp.StartEverything("streamableHttp")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(everything.Stop)
		ns := env.Namespace()
		readyServer(ns, "everything", everything.URL())
		// The catalog reads the manager's cache, which may not hold the status
		// readyServer saw yet.
		Eventually(func() string { return string(get("/v1/tools?namespace=" + ns).body) }).Should(ContainSubstring("mcp_everything_echo"))

		r := post("/v1/execute", `{"name":"mcp_everything_echo","arguments":{"message":"hello catalog"}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["output"]).To(ContainSubstring("hello catalog"))

		r = post("/v1/execute", `{"id":"call_9","type":"function","function":{"name":"mcp_everything_get-sum","arguments":"{\"a\": 19, \"b\": 23}"}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["output"]).To(ContainSubstring("42"))
		Expect(r.json()["message"].(map[string]any)["tool_call_id"]).To(Equal("call_9"))
	})
})
