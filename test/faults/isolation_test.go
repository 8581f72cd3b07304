package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// failure is one call that goes wrong in its own way, and what its caller
// must be told.
type failure struct {
	tool string
	// fault is injected into the answer to this call; "" lets the real
	// tool answer.
	fault fault
	code  int
	says  string
}

var _ = Describe("One call's failure", func() {
	DescribeTable("fails that call alone, with its own cause, while calls beside it on the same session succeed",
		func(transport testmcp.Transport, failures []failure) {
			gate := make(chan struct{})
			var waiting atomic.Int64
			backend := testenv.StartMCP(testmcp.Options{Transport: transport})
			backend.AddToolFunc("wait", "Waits for the test.", `{"type":"object"}`, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				waiting.Add(1)
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return mcp.NewToolResultText(fmt.Sprint("waited ", req.GetArguments()["n"])), nil
			})
			backend.AddToolFunc("oversize", "Answers past the cap.", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(padMarker), nil
			})
			backend.AddToolFunc("rpcerror", "Fails as a request.", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("the database is locked")
			})
			backend.AddToolFunc("toolerror", "Fails as a tool.", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultError("the disk is full"), nil
			})
			for _, name := range []string{"garbage", "cut", "denied"} {
				backend.AddToolFunc(name, "Answered by the proxy.", `{"type":"object"}`, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("fine"), nil
				})
			}
			base, path, _ := strings.Cut(strings.TrimPrefix(backend.URL(), "http://"), "/")
			faulty := newFaultyUpstream("http://" + base)
			DeferCleanup(faulty.Close)
			prefix := "iso" + strings.ToLower(string(transport))[:3]
			srv := env.CreateServer(env.Namespace(), prefix, faulty.URL+"/"+path, func(s *mcpv1alpha1.MCPServer) {
				s.Spec.Transport = mcpv1alpha1.TransportType(transport)
				s.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Second}
			})
			Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
			tool := func(name string) string { return "mcp_" + prefix + "_" + name }
			Eventually(func() int { return execute(tool("toolerror"), `{}`).code }).Should(Equal(200))
			for _, f := range failures {
				if f.fault != "" {
					faulty.injectTool(f.tool, f.fault)
				}
			}

			var wg sync.WaitGroup
			beside := make([]answer, 3)
			for i := range beside {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					beside[i] = execute(tool("wait"), fmt.Sprintf(`{"n":%d}`, i))
				}()
			}
			Eventually(waiting.Load).Should(BeEquivalentTo(3), "three calls wait at the server")

			for _, f := range failures {
				got := execute(tool(f.tool), `{}`)
				Expect(got.code).To(Equal(f.code), "%s: %s", f.tool, got.body)
				var body struct {
					Error string `json:"error"`
				}
				Expect(json.Unmarshal([]byte(got.body), &body)).To(Succeed(), got.body)
				Expect(body.Error).To(ContainSubstring(f.says), f.tool)
			}
			close(gate)
			wg.Wait()
			for i, a := range beside {
				Expect(a.code).To(Equal(200), "call %d beside the failures: %s", i, a.body)
				Expect(a.body).To(ContainSubstring(fmt.Sprintf(`"output":"waited %d"`, i)))
			}
		},
		Entry("over Streamable HTTP", testmcp.StreamableHTTP, []failure{
			{tool: "oversize", fault: hugeBody, code: 502, says: "answered with more than 16777216 bytes"},
			{tool: "garbage", fault: invalidJSON, code: 502, says: "answered with malformed JSON-RPC"},
			{tool: "cut", fault: reset, code: 502, says: "could not be reached"},
			{tool: "denied", fault: unauthorized, code: 502, says: "answered HTTP 401 Unauthorized"},
			{tool: "rpcerror", code: 200, says: "the database is locked (JSON-RPC error -32603)"},
			{tool: "toolerror", code: 200, says: "the disk is full"},
		}),
		// Over SSE every answer shares the one event stream: a POST that
		// fails, and an answer on the stream past the cap, fail their call
		// alone.
		Entry("over SSE", testmcp.SSE, []failure{
			{tool: "oversize", code: 502, says: "answered with more than 16777216 bytes"},
			{tool: "cut", fault: reset, code: 502, says: "could not be reached"},
			{tool: "denied", fault: unauthorized, code: 502, says: "answered HTTP 401 Unauthorized"},
			{tool: "rpcerror", code: 200, says: "the database is locked (JSON-RPC error -32603)"},
			{tool: "toolerror", code: 200, says: "the disk is full"},
		}),
	)
})
