package faults

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// These run the manager binary against a control plane of their own, so
// that no other manager reconciles the same objects.
var _ = Describe("Managers as processes", Ordered, func() {
	var (
		plane      *testenv.Env
		kubeconfig string
		bin        string
	)
	BeforeAll(func() {
		rig := newProcessRig()
		plane, kubeconfig, bin = rig.plane, rig.kubeconfig, rig.bin
	})

	// servers lists the MCPServers of a namespace.
	servers := func(ns string) []mcpv1alpha1.MCPServer {
		var list mcpv1alpha1.MCPServerList
		Expect(plane.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		return list.Items
	}
	readyCount := func(ns string) func() int {
		return func() int {
			n := 0
			for _, s := range servers(ns) {
				if meta.IsStatusConditionTrue(s.Status.Conditions, mcpv1alpha1.ConditionReady) {
					n++
				}
			}
			return n
		}
	}

	It("converges after the manager is killed mid-discovery, with no status lost or half-written", func() {
		const count, perUpstream = 24, 8
		ns := plane.Namespace()
		for i := range count / perUpstream {
			// Slow servers with the same five tools: discovery takes a few
			// seconds each, and every status must end up the same.
			up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, Delay: 300 * time.Millisecond})
			up.AddTools("a", "b", "c", "d", "e")
			for j := range perUpstream {
				plane.CreateServer(ns, fmt.Sprintf("s%02d", i*perUpstream+j), up.URL(), func(s *mcpv1alpha1.MCPServer) {
					s.Spec.ToolPrefix = "same"
				})
			}
		}
		By("starting a manager")
		first := startManager(bin, kubeconfig, "--mcpserver-concurrency=2")
		Eventually(readyCount(ns), time.Minute).Should(BeNumerically(">=", 3))
		first.kill()
		done := readyCount(ns)()
		GinkgoWriter.Printf("killed with %d of %d servers discovered\n", done, count)
		Expect(done).To(BeNumerically("<", count), "killed mid-discovery")

		// Whatever was written is whole: a status has all its tools and the
		// hash of them, or none.
		hash := ""
		for _, s := range servers(ns) {
			Expect(s.Status.Tools).To(HaveLen(int(s.Status.ToolCount)), s.Name)
			if s.Status.ToolCount > 0 {
				Expect(s.Status.ToolCount).To(BeEquivalentTo(5), s.Name)
				if hash == "" {
					hash = s.Status.ToolsHash
				}
				Expect(s.Status.ToolsHash).To(Equal(hash), s.Name)
			}
		}

		By("starting a manager again")
		second := startManager(bin, kubeconfig, "--mcpserver-concurrency=2")
		Eventually(readyCount(ns), 2*time.Minute).Should(Equal(count), second.logs)
		By("all converged")
		for _, s := range servers(ns) {
			ready := meta.FindStatusCondition(s.Status.Conditions, mcpv1alpha1.ConditionReady)
			Expect(ready.ObservedGeneration).To(Equal(s.Generation), s.Name)
			Expect(s.Status.ObservedGeneration).To(Equal(s.Generation), s.Name)
			Expect(s.Status.Tools).To(HaveLen(5), s.Name)
			Expect(s.Status.ToolsHash).To(Equal(hash), s.Name)
		}
	})

	It("keeps what --max-tools and --max-tool-pages allow of a server that offers too many tools, and says so", func() {
		ns := plane.Namespace()
		up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, PageSize: 2})
		up.AddTools("a", "b", "c", "d", "e", "f", "g")
		manager := startManager(bin, kubeconfig, "--max-tools=5", "--max-tool-pages=2")
		srv := plane.CreateServer(ns, "flood", up.URL())
		Eventually(plane.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"), manager.logs)
		got := plane.Fetch(srv)
		// Two pages of two: the page limit is reached before the tool limit.
		Expect(got.Status.Tools).To(HaveLen(4))
		truncated := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionToolsTruncated)
		Expect(truncated).NotTo(BeNil())
		Expect(truncated.Reason).To(Equal(mcpv1alpha1.ReasonTooManyTools))
		Expect(truncated.Message).To(ContainSubstring("more tools than the 5 tools in 2 pages read"))
	})

	It("hands the controllers to the other replica when the leader is killed; the survivor's catalog never fails", func() {
		ns := plane.Namespace()
		up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		up.AddTool("echo", "Echoes.", `{"type":"object"}`)
		lease := []string{"--leader-elect", "--leader-election-namespace=" + ns,
			"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}
		a, b := startManager(bin, kubeconfig, lease...), startManager(bin, kubeconfig, lease...)
		leads := func(m *managerProcess) bool {
			return strings.Contains(strings.ToLower(m.logs()), "successfully acquired lease")
		}
		Eventually(func() bool { return leads(a) || leads(b) }).Should(BeTrue())
		leader, survivor := a, b
		if leads(b) {
			leader, survivor = b, a
		}
		Expect(leads(survivor)).To(BeFalse(), "two leaders")

		before := plane.CreateServer(ns, "before", up.URL())
		Eventually(plane.ReadyOf(before)).Should(Equal("True/ToolsDiscovered"))
		for _, m := range []*managerProcess{leader, survivor} {
			Eventually(func() string { return get(m.catalog, "/v1/tools").body }).Should(ContainSubstring(`"mcp_before_echo"`), m.String())
		}

		// Call the survivor's catalog without pause from here on.
		var failures []string
		var calls atomic.Int64
		callsSoFar := calls.Load
		stop := repeat(50*time.Millisecond, func() {
			for _, a := range []answer{get(survivor.catalog, "/v1/tools"), post(survivor.catalog, "/v1/execute", `{"name":"mcp_before_echo"}`)} {
				calls.Add(1)
				if a.code != 200 {
					failures = append(failures, fmt.Sprintf("%d %s", a.code, a.body))
				}
			}
		})

		killed := time.Now()
		leader.kill()
		after := plane.CreateServer(ns, "after", up.URL())
		Eventually(func() bool { return leads(survivor) }).Should(BeTrue())
		GinkgoWriter.Printf("the survivor leads %s after the kill (lease 6s)\n", time.Since(killed).Round(100*time.Millisecond))
		Eventually(plane.ReadyOf(after)).Should(Equal("True/ToolsDiscovered"))
		Eventually(func() string { return get(survivor.catalog, "/v1/tools").body }).Should(ContainSubstring(`"mcp_after_echo"`))
		// Some more calls once the new leader serves, then stop.
		seen := callsSoFar()
		Eventually(callsSoFar).Should(BeNumerically(">=", seen+10))
		stop()
		GinkgoWriter.Printf("%d calls to the survivor's catalog\n", calls.Load())
		Expect(calls.Load()).To(BeNumerically(">", 20))
		Expect(failures).To(BeEmpty())
	})
})
