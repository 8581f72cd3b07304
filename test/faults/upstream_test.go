package faults

import (
	"runtime"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// upstream starts a real MCP server with an echo tool behind a
// faultyUpstream, and an MCPServer for it exposing mcp_<prefix>_echo.
func upstream(prefix string, timeout time.Duration) (*faultyUpstream, *mcpv1alpha1.MCPServer) {
	backend := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	backend.AddTool("echo", "Echoes its message.", `{"type":"object","properties":{"message":{"type":"string"}}}`)
	faulty := newFaultyUpstream(strings.TrimSuffix(backend.URL(), "/mcp"))
	DeferCleanup(faulty.Close)
	srv := env.CreateServer(env.Namespace(), prefix, faulty.URL+"/mcp", func(s *mcpv1alpha1.MCPServer) {
		s.Spec.ToolPrefix = prefix
		s.Spec.Transport = mcpv1alpha1.TransportType("StreamableHTTP")
		s.Spec.Timeout = &metav1.Duration{Duration: timeout}
		s.Spec.RefreshInterval = &metav1.Duration{Duration: 10 * time.Second}
	})
	return faulty, srv
}

// callerGoroutines counts the goroutines on the calling side of upstream
// calls: catalog handlers, MCP client sessions and their HTTP connections.
// The servers' own goroutines (test servers, proxies) are left out.
func callerGoroutines() int {
	buf := make([]byte, 8<<20)
	stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
	count := 0
	for _, g := range stacks {
		caller := strings.Contains(g, "internal/toolcatalog") || strings.Contains(g, "internal/mcpclient") ||
			strings.Contains(g, "mcp-go/client") || strings.Contains(g, "(*persistConn)")
		server := strings.Contains(g, "mcp-go/server") || strings.Contains(g, "internal/testmcp") ||
			strings.Contains(g, "test/faults") || strings.Contains(g, "httputil")
		if caller && !server {
			count++
		}
	}
	return count
}

// settled polls f until it gives the same value three times in a row, and
// returns that value: a baseline taken once things stopped moving.
func settled(f func() int) int {
	last, same := f(), 0
	Eventually(func() int {
		now := f()
		if now == last {
			same++
		} else {
			last, same = now, 0
		}
		return same
	}, 30*time.Second, 200*time.Millisecond).Should(BeNumerically(">=", 2))
	return last
}

// peakHeapGrowth runs f and reports how far the heap in use rose above
// where it started, sampled every few milliseconds.
func peakHeapGrowth(f func()) uint64 {
	var stats runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&stats)
	base, peak := stats.HeapInuse, stats.HeapInuse
	stop := repeat(5*time.Millisecond, func() {
		runtime.ReadMemStats(&stats)
		peak = max(peak, stats.HeapInuse)
	})
	f()
	stop()
	return peak - base
}

const echo = `{"message":"hi"}`

// timeoutFor gives the server answering with fault f its timeout. Only
// the stream that never answers is meant to meet it (3s, as the tables
// expect); the others get a long one, since under -race on a loaded
// two-core machine decoding 16 MiB before the cap trips took over 3 s,
// and a timeout would have hidden the error the table asserts.
func timeoutFor(f fault) time.Duration {
	if f == endlessStream {
		return 3 * time.Second
	}
	return 30 * time.Second
}

var _ = Describe("An MCP server that misbehaves", func() {
	It("ends calls it never answers at their timeout, gives back what they held, and slows no other server", func() {
		// The stalled calls' timeout is long enough that the quick calls
		// below all come back within it on a busy machine.
		slow, _ := upstream("stalls", 15*time.Second)
		_, _ = upstream("quick", 10*time.Second)
		Eventually(func() int { return execute("mcp_stalls_echo", echo).code }).Should(Equal(200))
		Eventually(func() int { return execute("mcp_quick_echo", echo).code }).Should(Equal(200))
		// The warm-up's connections and goroutines settle before the baseline.
		goroutines := settled(callerGoroutines)
		connections := settled(func() int { return int(slow.openConnections()) })

		slow.inject("tools/call", hang)
		const stuck = 8
		var wg sync.WaitGroup
		stalled := make([]answer, stuck)
		for i := range stuck {
			wg.Go(func() { stalled[i] = execute("mcp_stalls_echo", echo) })
		}
		Eventually(slow.hung.Load).Should(BeEquivalentTo(stuck))
		for range 20 {
			Expect(execute("mcp_quick_echo", echo).code).To(Equal(200))
		}
		// The other server's calls were not queued behind the stalled ones:
		// they all came back while every stalled call still hung.
		Expect(slow.hung.Load()).To(BeEquivalentTo(stuck), "the quick calls waited for the stalled ones")
		wg.Wait()
		for _, a := range stalled {
			Expect(a.code).To(Equal(504), a.body)
			Expect(a.body).To(ContainSubstring("did not answer within 15s"))
		}

		// A call that ended on a session tells the server with a request
		// of its own (notifications/cancelled), whose connection the pool
		// keeps for the next call until it has been idle this long.
		Eventually(slow.openConnections).WithTimeout(mcpclient.IdleConnTimeout+30*time.Second).
			Should(BeNumerically("<=", connections), "connections to the stalled server")
		Eventually(callerGoroutines).Should(BeNumerically("<=", goroutines), "goroutines")
		slow.clear("tools/call")
		Expect(execute("mcp_stalls_echo", echo).code).To(Equal(200))
	})

	DescribeTable("fails a call answered badly with a clear error and bounded memory, then recovers",
		func(f fault, code int, message string) {
			prefix := strings.ReplaceAll(string(f), "-", "")
			tool := "mcp_" + prefix + "_echo"
			faulty, _ := upstream(prefix, timeoutFor(f))
			Eventually(func() int { return execute(tool, echo).code }).Should(Equal(200))

			faulty.inject("tools/call", f)
			var a answer
			grown := peakHeapGrowth(func() { a = execute(tool, echo) })
			Expect(a.code).To(Equal(code), a.body)
			Expect(a.body).To(MatchRegexp(message))
			GinkgoWriter.Printf("%s: heap grew by at most %d MiB\n", f, grown>>20)
			Expect(grown).To(BeNumerically("<", 100<<20), "a 100 MiB answer must never be held whole")

			faulty.clear("tools/call")
			Expect(execute(tool, echo).code).To(Equal(200))
		},
		Entry("a connection reset mid-answer", reset, 502, "closed the connection|could not be reached|malformed"),
		Entry("invalid JSON", invalidJSON, 502, "malformed JSON-RPC"),
		Entry("a 100 MiB body", hugeBody, 502, "answered with more than 16777216 bytes"),
		Entry("an event stream that never answers", endlessStream, 504, "did not answer within 3s"),
		Entry("one event that never ends", endlessEvent, 502, "answered with more than 16777216 bytes"),
	)

	DescribeTable("reports discovery answered badly in Ready, then recovers",
		func(f fault, reason, message string) {
			prefix := "list" + strings.ReplaceAll(string(f), "-", "")
			faulty, srv := upstream(prefix, timeoutFor(f))
			faulty.inject("tools/list", f)
			Eventually(env.ReadyOf(srv)).Should(Equal("False/" + reason))
			Expect(env.Fetch(srv).Status.Conditions).To(ContainElement(HaveField("Message", MatchRegexp(message))))
			faulty.clear("tools/list")
			Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		},
		Entry("a connection reset mid-answer", reset, "Unreachable", "closed the connection|could not be reached"),
		Entry("invalid JSON", invalidJSON, "MalformedResponse", "malformed JSON-RPC"),
		Entry("a 100 MiB body", hugeBody, "MalformedResponse", "more than 16777216 bytes"),
		Entry("an event stream that never answers", endlessStream, "Timeout", "did not answer within 3s"),
		Entry("one event that never ends", endlessEvent, "MalformedResponse", "more than 16777216 bytes"),
	)

	It("takes a server that goes away out of the menus within one refresh, and back when it returns", func() {
		refresh := 10 * time.Second
		backend := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		backend.AddTool("echo", "Echoes its message.", `{"type":"object"}`)
		srv := env.CreateServer(env.Namespace(), "away", backend.URL(), testenv.Every(refresh))
		inMenu := func() bool { return strings.Contains(get(catalog.URL, "/v1/tools").body, `"mcp_away_echo"`) }
		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		Eventually(inMenu).Should(BeTrue())
		Expect(execute("mcp_away_echo", echo).code).To(Equal(200))

		backend.Stop()
		a := execute("mcp_away_echo", echo)
		Expect(a.code).To(Equal(502), a.body)
		Expect(a.body).To(MatchRegexp("refused the connection|closed the connection|could not be reached|is not Ready"))
		// Within one refresh (plus its 10% jitter and the time to connect).
		Eventually(env.ReadyOf(srv), refresh*11/10+5*time.Second).Should(Equal("False/Unreachable"))
		Eventually(inMenu).Should(BeFalse())
		a = execute("mcp_away_echo", echo)
		Expect(a.code).To(Equal(502), a.body)
		Expect(a.body).To(ContainSubstring("is not Ready (Unreachable)"))
		Expect(a.body).NotTo(ContainSubstring("127.0.0.1"), "the caller learns where the server runs")

		Expect(backend.Restart()).To(Succeed())
		Eventually(env.ReadyOf(srv), refresh*11/10+5*time.Second).Should(Equal("True/ToolsDiscovered"))
		Eventually(inMenu).Should(BeTrue())
		Expect(execute("mcp_away_echo", echo).code).To(Equal(200))
	})
})
