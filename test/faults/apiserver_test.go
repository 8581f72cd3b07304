package faults

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

var _ = Describe("The API server", func() {
	It("answers a status write that lost a race with 409, and the controller retries on the fresh object, losing no field", func() {
		// Every request to this server takes two seconds, so discovery runs
		// long enough for its in-progress status to be written (after a
		// second) and for another writer to get in between.
		backend := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, Delay: 2 * time.Second})
		backend.AddTool("echo", "Echoes.", `{"type":"object"}`)
		srv := env.CreateServer(env.Namespace(), "raced", backend.URL())
		Eventually(func() bool {
			return meta.IsStatusConditionTrue(env.Fetch(srv).Status.Conditions, mcpv1alpha1.ConditionReconciling)
		}).Should(BeTrue(), "the controller has read the object and is discovering")

		// Another controller records its own condition meanwhile.
		audited := metav1.Condition{Type: "example.com/Audited", Status: metav1.ConditionTrue, Reason: "Reviewed", Message: "Reviewed by the audit controller"}
		Eventually(func() error {
			fresh := env.Fetch(srv)
			meta.SetStatusCondition(&fresh.Status.Conditions, audited)
			return env.Client.Status().Update(ctx, fresh)
		}).Should(Succeed())

		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		got := env.Fetch(srv)
		Expect(got.Status.ToolCount).To(BeEquivalentTo(1))
		Expect(meta.FindStatusCondition(got.Status.Conditions, audited.Type)).NotTo(BeNil(), "the other writer's condition was overwritten")
	})

	It("going away leaves the catalog serving the last menu; controllers back off and catch up", func() {
		ns := env.Namespace()
		backend := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		backend.AddTool("first", "The first tool.", `{"type":"object"}`)
		srv := env.CreateServer(ns, "steady", backend.URL())
		menuPath := "/v1/namespaces/" + ns + "/mcpservers/steady/tools"
		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		Eventually(func() string { return get(catalog.URL, menuPath).body }).Should(ContainSubstring(`"mcp_steady_first"`))
		lastMenu := get(catalog.URL, menuPath).body

		apiProxy.cut()
		refusedBefore := apiProxy.refused.Load()
		// While the API server is away the server gains a tool (the
		// controller discovers it and cannot write it) and a new MCPServer
		// is created (the manager cannot see it).
		backend.AddTool("second", "The second tool.", `{"type":"object"}`)
		other := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		other.AddTool("tool", "A tool.", `{"type":"object"}`)
		late := env.CreateServer(ns, "late", other.URL())

		outage := 12 * time.Second
		for deadline := time.Now().Add(outage); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			m := get(catalog.URL, menuPath)
			Expect(m.code).To(Equal(200), m.body)
			Expect(m.body).To(Equal(lastMenu))
			a := execute("mcp_steady_first", `{}`)
			Expect(a.code).To(Equal(200), a.body)
		}
		attempts := apiProxy.refused.Load() - refusedBefore
		GinkgoWriter.Printf("connections attempted during a %s outage: %d\n", outage, attempts)
		Expect(attempts).To(BeNumerically(">", 0), "the manager noticed the outage")
		// Backing off, not spinning: a retry loop without backoff makes
		// thousands in this time.
		Expect(attempts).To(BeNumerically("<", 300))

		apiProxy.restore()
		Eventually(func() string { return get(catalog.URL, menuPath).body }, time.Minute).Should(ContainSubstring(`"mcp_steady_second"`))
		Eventually(env.ReadyOf(late), time.Minute).Should(Equal("True/ToolsDiscovered"))
		// The catalog serves from the manager's cache, which hears of the
		// status a moment after the API server has it.
		Eventually(func() string { return get(catalog.URL, "/v1/tools").body }, time.Minute).Should(ContainSubstring(`"mcp_late_tool"`))
	})
})
