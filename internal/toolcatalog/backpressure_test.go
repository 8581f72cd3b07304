package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// callTo posts an execute request to a catalog and reads the answer.
func callTo(base, path, body string, headers ...string) response {
	return doAt(base, http.MethodPost, path, body, headers...)
}

// holdingServer is a real MCP server whose "hold" tool answers "held N"
// once gate closes; inside counts the calls it holds.
func holdingServer(gate <-chan struct{}) (*testmcp.Server, *atomic.Int64) {
	inside := &atomic.Int64{}
	busy := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	busy.AddToolFunc("hold", "Holds until the test lets go.", `{"type":"object"}`, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		inside.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText(fmt.Sprint("held ", req.GetArguments()["n"])), nil
	})
	return busy, inside
}

var _ = Describe("Backpressure", func() {
	It("answers 429 past a server's maxConcurrentCalls, over REST and MCP, while other servers answer", func() {
		ns := env.Namespace()
		gate := make(chan struct{})
		busy, inside := holdingServer(gate)
		readyServer(ns, "busy", busy.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.MaxConcurrentCalls = ptr.To[int32](2) })
		other := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		other.AddTools("ping")
		readyServer(ns, "other", other.URL())
		collection(ns, "both", "busy", "other")

		c, srv := newCatalog(Options{QueueTimeout: time.Minute})
		Eventually(func() int { return callTo(srv.URL, "/v1/execute", `{"name":"mcp_other_ping"}`).code }).Should(Equal(http.StatusOK))

		By("two calls in flight and two waiting for a turn")
		var wg sync.WaitGroup
		held := make([]response, 4)
		for i := range held {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				held[i] = callTo(srv.URL, "/v1/execute", fmt.Sprintf(`{"name":"mcp_busy_hold","arguments":{"n":%d}}`, i))
			}()
		}
		Eventually(inside.Load).Should(BeEquivalentTo(2))
		Eventually(func() int64 { return c.upstreams.get(ns + "/busy").limit.waiting.Load() }).Should(BeEquivalentTo(2))

		By("the next one is turned away at once, with Retry-After")
		r := callTo(srv.URL, "/v1/execute", `{"name":"mcp_busy_hold","arguments":{"n":9}}`)
		Expect(r.code).To(Equal(http.StatusTooManyRequests), string(r.body))
		Expect(r.header.Get("Retry-After")).To(Equal("1"))
		Expect(r.json()["error"]).To(Equal(fmt.Sprintf("MCPServer %s/busy has 2 calls in flight and as many waiting (spec.maxConcurrentCalls); retry in 1s", ns)))

		By("over MCP it is a JSON-RPC error, not a tool result")
		s := connectMCP(srv.URL+"/v1/namespaces/"+ns+"/toolcollections/both/mcp", nil, nil)
		_, err := s.CallTool(ctx, "mcp_busy_hold", json.RawMessage(`{}`), mcpclient.CallOptions{})
		Expect(err).To(HaveOccurred())
		code, message, ok := mcpclient.RPCErrorOf(err)
		Expect(ok).To(BeTrue(), "%v", err)
		Expect(code).To(Equal(-32603))
		Expect(message).To(ContainSubstring("has 2 calls in flight and as many waiting"))

		By("another server answers meanwhile")
		Expect(callTo(srv.URL, "/v1/execute", `{"name":"mcp_other_ping"}`).code).To(Equal(http.StatusOK))

		close(gate)
		wg.Wait()
		for i, h := range held {
			Expect(h.code).To(Equal(http.StatusOK), "held call %d: %s", i, h.body)
			Expect(h.json()["output"]).To(Equal(fmt.Sprint("held ", i)))
		}
	})

	It("turns a waiting call away when its turn does not come within the queue timeout", func() {
		ns := env.Namespace()
		gate := make(chan struct{})
		busy, inside := holdingServer(gate)
		readyServer(ns, "single", busy.URL(), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.MaxConcurrentCalls = ptr.To[int32](1)
			s.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
		})
		_, srv := newCatalog(Options{QueueTimeout: 200 * time.Millisecond})
		DeferCleanup(func() { close(gate) }) // before the catalog closes: cleanups run last first
		first := make(chan response, 1)
		go func() {
			defer GinkgoRecover()
			first <- callTo(srv.URL, "/v1/execute", `{"name":"mcp_single_hold"}`)
		}()
		Eventually(func() int64 {
			select {
			case r := <-first:
				StopTrying(fmt.Sprintf("the held call ended before the server held it: %d %s", r.code, r.body)).Now()
			default:
			}
			return inside.Load()
		}).Should(BeEquivalentTo(1))
		r := callTo(srv.URL, "/v1/execute", `{"name":"mcp_single_hold"}`)
		Expect(r.code).To(Equal(http.StatusTooManyRequests), string(r.body))
		Expect(inside.Load()).To(BeEquivalentTo(1), "the waiting call never reached the server")
	})

	It("limits each authenticated caller's rate, and only theirs", func() {
		env.InstallCatalogRoles()
		ns := env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		collection(ns, "kit", "calc")
		hasty := serviceAccountToken(ns, "hasty")
		bind(ns, "hasty", "catalog-caller", "hasty")
		calm := serviceAccountToken(ns, "calm")
		bind(ns, "calm", "catalog-caller", "calm")
		_, srv := newCatalog(Options{Auth: AuthKubernetes, CallerRate: 0.2, CallerBurst: 2})
		path := "/v1/namespaces/" + ns + "/toolcollections/kit/execute"
		add := `{"name":"mcp_calc_add","arguments":{"a":1,"b":2}}`

		for range 2 {
			r := callTo(srv.URL, path, add, "Authorization", "Bearer "+hasty)
			Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		}
		r := callTo(srv.URL, path, add, "Authorization", "Bearer "+hasty)
		Expect(r.code).To(Equal(http.StatusTooManyRequests), string(r.body))
		Expect(r.header.Get("Retry-After")).To(Equal("5"))
		Expect(r.json()["error"]).To(Equal("system:serviceaccount:" + ns + ":hasty made more than 0.2 tool calls per second (--catalog-caller-rate); retry in 5s"))

		r = callTo(srv.URL, path, add, "Authorization", "Bearer "+calm)
		Expect(r.code).To(Equal(http.StatusOK), "another caller is not held back: %s", r.body)
	})
})
