//go:build e2e

package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// ns holds the MCPServers, the collection and the agents; like the
// operator's namespace, it enforces the restricted Pod Security Standard.
const ns = "e2e"

// The specs share one installation and run in order. A failed spec does
// not stop the next (ContinueOnFailure): each makes its own MCPServer, but
// the agent's uses the stdio workload's server and collection.
var _ = Describe("the operator on a cluster with real pods", Ordered, ContinueOnFailure, func() {
	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			diagnose()
		}
	})

	BeforeAll(func() {
		By("installing the chart as README's install section does")
		kubectl("create", "namespace", operatorNS)
		kubectl("label", "namespace", operatorNS, "pod-security.kubernetes.io/enforce=restricted")
		helm("install", release, "charts/mcp-operator", "-n", operatorNS,
			"--set-string", "image.tag="+version, "--set", "image.pullPolicy=Never")
		restrictedNamespace(ns)
	})

	It("installs with helm: both managers Ready by their probes, one leader, the catalog served through its Service with RBAC on", func() {
		By("the Deployment rolling out both replicas")
		rolledOut(managerName, 2, 4*time.Minute)

		pods := managerPods()
		Expect(pods).To(HaveLen(2))
		for _, p := range pods {
			c := p.Spec.Containers[0]
			Expect(c.Image).To(Equal(operatorImage()))
			Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
			Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
			Expect(podCondition(&p, corev1.PodReady)).To(Equal(corev1.ConditionTrue), "pod %s", p.Name)
			Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeZero(), "pod %s restarted: its liveness probe failed", p.Name)
			// What the kubelet's probes ask, answered by the pod itself.
			for _, path := range []string{"/readyz", "/healthz"} {
				a, err := request(http.MethodGet, net.JoinHostPort(p.Status.PodIP, "8081"), path, "", nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(a.status).To(Equal(http.StatusOK), "%s of pod %s: %s", path, p.Name, a.body)
			}
		}

		By("one manager holding the Lease, and only that one leading by its own metrics")
		Eventually(func(g Gomega) {
			var lease coordinationv1.Lease
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: leaseName}, &lease)).To(Succeed())
			// The chart's own Lease, which helm uninstall deletes.
			g.Expect(lease.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
			holder := ptr.Deref(lease.Spec.HolderIdentity, "")
			var leaders []string
			for _, p := range pods {
				if leaderMetric(g, p.Status.PodIP) == "1" {
					leaders = append(leaders, p.Name)
				}
			}
			g.Expect(leaders).To(HaveLen(1), "pods whose leader_election_master_status is 1")
			// controller-runtime's identity is the hostname (the pod's
			// name) and a random suffix.
			g.Expect(holder).To(HavePrefix(leaders[0]+"_"), "the Lease's holder")
		}).WithTimeout(time.Minute).Should(Succeed())

		By("the catalog's Service having both managers as ready endpoints")
		Eventually(func(g Gomega) {
			var slices discoveryv1.EndpointSliceList
			g.Expect(k8s.List(ctx, &slices, client.InNamespace(operatorNS),
				client.MatchingLabels{discoveryv1.LabelServiceName: catalogService})).To(Succeed())
			var ready []string
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					if ptr.Deref(e.Conditions.Ready, false) {
						ready = append(ready, e.Addresses...)
					}
				}
			}
			g.Expect(ready).To(ConsistOf(pods[0].Status.PodIP, pods[1].Status.PodIP))
		}).Should(Succeed())

		By("the catalog refusing a caller without a token and one without RBAC, through the Service and on each endpoint")
		serviceAccount("nobody", "")
		nobody := token("nobody")
		menu := "/v1/namespaces/" + ns + "/toolcollections/assistant/tools"
		for _, addr := range []string{catalogAddr(), net.JoinHostPort(pods[0].Status.PodIP, "8090"), net.JoinHostPort(pods[1].Status.PodIP, "8090")} {
			// kube-proxy's rules follow the EndpointSlice a moment later:
			// until then the Service's address refuses connections.
			var a answer
			Eventually(func(g Gomega) {
				var err error
				a, err = request(http.MethodGet, addr, menu, "", nil)
				g.Expect(err).NotTo(HaveOccurred())
			}).Should(Succeed(), "connecting to %s", addr)
			Expect(a.status).To(Equal(http.StatusUnauthorized), "%s without a token: %s", addr, a.body)
			Expect(a.header.Get("WWW-Authenticate")).To(HavePrefix("Bearer "))
			a, err := request(http.MethodGet, addr, menu, nobody, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(a.status).To(Equal(http.StatusForbidden), "%s with a token and no RBAC: %s", addr, a.body)
			Expect(a.body).To(ContainSubstring("system:serviceaccount:" + ns + ":nobody"))
		}
	})

	It("runs a stdio server's image in a hardened pod, behind the bridge its init container copied from the operator's image, and calls it through the catalog", func() {
		srv := stdioServer(ns, "demo", map[string]string{"team": "e2e"})
		Expect(k8s.Create(ctx, srv)).To(Succeed())
		tc := &mcpv1alpha1.ToolCollection{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "assistant"},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}}}},
		}
		Expect(k8s.Create(ctx, tc)).To(Succeed())

		By("WorkloadAvailable from the Deployment controller, then Ready with the server's tools")
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(srv), srv)).To(Succeed())
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionWorkloadAvailable, metav1.ConditionTrue, mcpv1alpha1.ReasonDeploymentAvailable))
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonToolsDiscovered))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(originalNames(srv)).To(ContainElements("convert_units", "text_stats", "time_now"))
		Expect(srv.Status.ObservedGeneration).To(Equal(srv.Generation))

		pod := workloadPod(srv.Name)
		By("the init container having copied mcp-bridge from the operator's image, and exited 0")
		Expect(pod.Spec.InitContainers).To(HaveLen(1))
		Expect(pod.Spec.InitContainers[0].Image).To(Equal(operatorImage()))
		Expect(pod.Spec.InitContainers[0].Command).To(Equal([]string{"/usr/local/bin/mcp-bridge", "--install", "/mcp-bridge/mcp-bridge"}))
		done := pod.Status.InitContainerStatuses[0].State.Terminated
		Expect(done).NotTo(BeNil(), "the init container's state: %+v", pod.Status.InitContainerStatuses[0].State)
		Expect(done.ExitCode).To(BeZero())
		server := pod.Spec.Containers[0]
		Expect(server.Image).To(Equal(demoImage()))
		Expect(server.Command).To(Equal([]string{"/mcp-bridge/mcp-bridge"}))
		Expect(pod.Status.ContainerStatuses[0].Ready).To(BeTrue())

		By("the pod hardened as its spec says, and its processes running so")
		Expect(ptr.Deref(pod.Spec.SecurityContext.RunAsNonRoot, false)).To(BeTrue())
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			sc := c.SecurityContext
			Expect(ptr.Deref(sc.ReadOnlyRootFilesystem, false)).To(BeTrue(), c.Name)
			Expect(ptr.Deref(sc.AllowPrivilegeEscalation, true)).To(BeFalse(), c.Name)
			Expect(ptr.Deref(sc.Privileged, true)).To(BeFalse(), c.Name)
			Expect(sc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}), c.Name)
		}
		pids := containerProcesses(pod, "server")
		var commands []string
		for _, pid := range pids {
			st := procStatus(pid)
			commands = append(commands, st["Name"])
			for _, id := range strings.Fields(st["Uid"]) {
				Expect(id).NotTo(Equal("0"), "process %d (%s) runs as root: Uid %s", pid, st["Name"], st["Uid"])
			}
			Expect(st["CapEff"]).To(Equal("0000000000000000"), "process %d (%s) has capabilities", pid, st["Name"])
			Expect(st["CapPrm"]).To(Equal("0000000000000000"), "process %d (%s) may gain capabilities", pid, st["Name"])
			Expect(st["NoNewPrivs"]).To(Equal("1"), "process %d (%s)", pid, st["Name"])
			Expect(st["Seccomp"]).To(Equal("2"), "process %d (%s) has no seccomp filter", pid, st["Name"])
			Expect(rootMountOptions(pid)).To(ContainElement("ro"), "process %d (%s): its root filesystem is writable", pid, st["Name"])
		}
		// The bridge and the stdio server it started.
		Expect(commands).To(ConsistOf("mcp-bridge", "demo-mcp-server"))

		By("a tool call through the catalog's Service, to the workload through its Service")
		serviceAccount("tester", "mcp-operator-catalog-caller")
		tester := token("tester")
		convert := exposedName(srv, "convert_units")
		Eventually(func(g Gomega) {
			a, err := request(http.MethodPost, catalogAddr(), "/v1/namespaces/"+ns+"/toolcollections/assistant/execute", tester,
				map[string]any{"name": convert, "arguments": map[string]any{"value": 26.2, "from": "mi", "to": "km"}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.status).To(Equal(http.StatusOK), a.body)
			g.Expect(a.body).To(ContainSubstring("42.1648 km"))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("removes a workload's Deployment, Service and NetworkPolicy through the garbage collector when its MCPServer is deleted", func() {
		srv := stdioServer(ns, "doomed", nil)
		Expect(k8s.Create(ctx, srv)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(srv), srv)).To(Succeed())
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionWorkloadAvailable, metav1.ConditionTrue, mcpv1alpha1.ReasonDeploymentAvailable))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		meta := metav1.ObjectMeta{Namespace: ns, Name: srv.Name}
		children := []client.Object{&appsv1.Deployment{ObjectMeta: meta}, &corev1.Service{ObjectMeta: meta}, &networkingv1.NetworkPolicy{ObjectMeta: meta}}
		for _, child := range children {
			fetch(child)
			owner := metav1.GetControllerOf(child)
			Expect(owner).NotTo(BeNil(), "%T has no controller", child)
			Expect(owner.UID).To(Equal(srv.UID))
		}
		// And what the Deployment controller made: the garbage collector
		// removes them in turn.
		var sets appsv1.ReplicaSetList
		Expect(k8s.List(ctx, &sets, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": srv.Name})).To(Succeed())
		Expect(sets.Items).NotTo(BeEmpty())
		for i := range sets.Items {
			children = append(children, &sets.Items[i])
		}
		children = append(children, workloadPod(srv.Name))

		Expect(k8s.Delete(ctx, srv)).To(Succeed())
		Eventually(notFound(srv)).Should(Succeed(), "the MCPServer has no finalizer: it goes at once")
		for _, child := range children {
			Eventually(notFound(child)).WithTimeout(2*time.Minute).Should(Succeed(), "%T %s", child, child.GetName())
		}
	})

	It("lets an agent pod read a collection's menu and call a tool with its ServiceAccount token, and refuses one without a RoleBinding", func() {
		agent := agentImage()
		serviceAccount("agent", "mcp-operator-catalog-collection-caller")
		serviceAccount("stranger", "")
		srv := fetch(&mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"}})
		convert := exposedName(srv, "convert_units")
		arguments := `{"value": 26.2, "from": "mi", "to": "km"}`

		By("an agent whose account is bound to the collection caller role")
		steps := runAgent(agent, "agent", convert, arguments)
		Expect(steps["menu"].Status).To(Equal(http.StatusOK), "menu: %s", steps["menu"])
		Expect(string(steps["menu"].Body)).To(ContainSubstring(convert))
		Expect(steps["call"].Status).To(Equal(http.StatusOK), "call: %s", steps["call"])
		Expect(string(steps["call"].Body)).To(ContainSubstring("42.1648 km"))

		By("an agent whose account is bound to nothing")
		steps = runAgent(agent, "stranger", convert, arguments)
		for _, step := range []string{"menu", "call"} {
			Expect(steps[step].Status).To(Equal(http.StatusForbidden), "%s: %s", step, steps[step])
			Expect(string(steps[step].Body)).To(ContainSubstring("system:serviceaccount:" + ns + ":stranger"))
		}
	})

	It("reports a workload that exits at once as CrashLoopBackOff, in status and in an Event, and recovers when the spec is fixed", func() {
		srv := &mcpv1alpha1.MCPServer{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crasher"},
			Spec: mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{
				Image:     demoImage(),
				Transport: mcpv1alpha1.WorkloadStreamableHTTP,
				// The demo server refuses a flag it does not know and exits 2.
				Command: []string{"/demo-mcp-server", "--no-such-flag"},
			}},
		}
		Expect(k8s.Create(ctx, srv)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(srv), srv)).To(Succeed())
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionWorkloadAvailable, metav1.ConditionFalse, mcpv1alpha1.ReasonPodFailing, "CrashLoopBackOff"))
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonWorkloadUnavailable, "CrashLoopBackOff", demoImage()))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Eventually(func() []string { return events(srv) }).Should(ContainElement(
			SatisfyAll(HavePrefix("Warning "+mcpv1alpha1.ReasonWorkloadUnavailable+":"), ContainSubstring("CrashLoopBackOff"))))

		By("fixing the command")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fetch(srv).Spec.Workload.Command = []string{"/demo-mcp-server", "--listen", ":8080"}
			return k8s.Update(ctx, srv)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(srv), srv)).To(Succeed())
			g.Expect(srv.Status.ObservedGeneration).To(Equal(srv.Generation))
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionWorkloadAvailable, metav1.ConditionTrue, mcpv1alpha1.ReasonDeploymentAvailable))
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonToolsDiscovered))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(originalNames(srv)).To(ContainElement("convert_units"))
		Expect(events(srv)).To(ContainElement(HavePrefix("Normal " + mcpv1alpha1.ConditionWorkloadAvailable + ":")))
	})

	It("rolls a spec change out as a new ReplicaSet, Ready with the old tools until the new generation is discovered", func() {
		// The filter hides text_stats; the change below lifts it together
		// with a workload change. A narrowed filter would hide tools at
		// once, by design (withdrawFiltered); a widened one needs the new
		// generation's discovery to show them.
		srv := stdioServer(ns, "rolling", nil)
		srv.Spec.ToolFilter = &mcpv1alpha1.ToolFilter{Exclude: []string{"text_stats"}}
		Expect(k8s.Create(ctx, srv)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(srv), srv)).To(Succeed())
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonToolsDiscovered))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		oldTools, oldGeneration := originalNames(srv), srv.Generation
		Expect(oldTools).To(ContainElement("convert_units"))
		Expect(oldTools).NotTo(ContainElement("text_stats"))
		oldSets := replicaSets(srv.Name)
		Expect(oldSets).To(HaveLen(1))

		By("changing the workload and lifting the filter in one generation, the new pod held back by a Secret that does not exist yet")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fetch(srv)
			srv.Spec.Workload.Env = []corev1.EnvVar{{Name: "DEMO_GATE", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "rollout-gate"}, Key: "gate"}}}}
			srv.Spec.ToolFilter = nil
			return k8s.Update(ctx, srv)
		})).To(Succeed())

		By("a new ReplicaSet whose pod cannot start, while the old one serves")
		Eventually(func(g Gomega) {
			sets := replicaSets(srv.Name)
			g.Expect(sets).To(HaveLen(2))
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": srv.Name})).To(Succeed())
			var waiting []string
			for _, p := range pods.Items {
				for _, s := range p.Status.ContainerStatuses {
					if s.State.Waiting != nil {
						waiting = append(waiting, s.State.Waiting.Reason)
					}
				}
			}
			g.Expect(waiting).To(ContainElement("CreateContainerConfigError"))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(srv), srv)).To(Succeed())
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonRolloutInProgress))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(srv).To(conditionIs(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonToolsDiscovered))
		Expect(srv.Status.ObservedGeneration).To(Equal(oldGeneration))
		Expect(originalNames(srv)).To(Equal(oldTools), "the tools changed before the new generation rolled out")
		status, err := runErr(repoRoot, nil, "kubectl", "--kubeconfig="+kubeconfig, "-n", ns, "rollout", "status", "deployment/"+srv.Name, "--watch=false")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(ContainSubstring("Waiting for deployment"), "kubectl rollout status agrees that the rollout is not done")

		By("creating the Secret: the rollout finishes and the new generation's tools are read")
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rollout-gate"},
			StringData: map[string]string{"gate": "open"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(srv), srv)).To(Succeed())
			g.Expect(srv.Status.ObservedGeneration).To(Equal(srv.Generation))
			g.Expect(srv).To(conditionIs(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonToolsDiscovered))
			g.Expect(condition(srv, mcpv1alpha1.ConditionReconciling)).To(BeNil())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(originalNames(srv)).To(ContainElements("text_stats", "convert_units"))
		kubectl("-n", ns, "rollout", "status", "deployment/"+srv.Name, "--timeout=60s")
		old := fetch(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: oldSets[0]}})
		Expect(ptr.Deref(old.Spec.Replicas, -1)).To(BeZero(), "the old ReplicaSet %s", old.Name)
	})

	It("upgrades the release with a changed value, and uninstalls it leaving only the CRDs", func() {
		By("deleting what the specs made, which Helm does not own")
		for _, kind := range []client.Object{&mcpv1alpha1.MCPServer{}, &mcpv1alpha1.ToolCollection{}} {
			Expect(k8s.DeleteAllOf(ctx, kind, client.InNamespace(ns))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			var deploys appsv1.DeploymentList
			g.Expect(k8s.List(ctx, &deploys, client.InNamespace(ns))).To(Succeed())
			g.Expect(deploys.Items).To(BeEmpty())
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("helm upgrade moving the catalog to another port, with one replica")
		helm("upgrade", release, "charts/mcp-operator", "-n", operatorNS, "--reuse-values",
			"--set", "catalog.port=8091", "--set", "replicas=1")
		rolledOut(managerName, 1, 3*time.Minute)
		var svc corev1.Service
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: catalogService}, &svc)).To(Succeed())
		Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(8091))
		Eventually(func(g Gomega) {
			a, err := request(http.MethodGet, net.JoinHostPort(svc.Spec.ClusterIP, "8091"), "/v1/tools", "", nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.status).To(Equal(http.StatusUnauthorized))
		}).WithTimeout(time.Minute).Should(Succeed(), "the catalog on its new port, through the Service")

		By("helm uninstall")
		helm("uninstall", release, "-n", operatorNS, "--wait")
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(operatorNS))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		// What the garbage collector removes (EndpointSlices, say) may
		// lag behind the pods.
		Eventually(leftovers).WithTimeout(2 * time.Minute).Should(ConsistOf(
			// The namespace README's install creates, and what the
			// controller manager puts in every namespace.
			"Namespace "+operatorNS, "ConfigMap "+operatorNS+"/kube-root-ca.crt", "ServiceAccount "+operatorNS+"/default",
			// The CRDs: Helm installs them and never deletes them; the
			// aggregator registers their group version while they exist.
			"CustomResourceDefinition mcpservers.mcp.toolmesh.io", "CustomResourceDefinition toolcollections.mcp.toolmesh.io",
			"APIService v1alpha1.mcp.toolmesh.io",
		))
	})
})

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// managerPods are the chart's manager pods.
func managerPods() []corev1.Pod {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(k8s.List(ctx, &pods, client.InNamespace(operatorNS),
		client.MatchingLabels{"app.kubernetes.io/name": "mcp-operator", "app.kubernetes.io/component": "manager"})).To(Succeed())
	return pods.Items
}

// leaderMetric is leader_election_master_status for the manager's Lease
// on the pod at ip ("" when the pod never led).
func leaderMetric(g Gomega, ip string) string {
	a, err := request(http.MethodGet, net.JoinHostPort(ip, "8080"), "/metrics", "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.status).To(Equal(http.StatusOK))
	sample := `leader_election_master_status{name="` + leaseName + `"} `
	for line := range strings.Lines(a.body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), sample); ok {
			return v
		}
	}
	return ""
}

// workloadPod is the one running pod of the MCPServer's workload.
func workloadPod(name string) *corev1.Pod {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(k8s.List(ctx, &pods, client.InNamespace(ns),
		client.MatchingLabels{"app.kubernetes.io/name": "mcp-server", "app.kubernetes.io/instance": name})).To(Succeed())
	Expect(pods.Items).To(HaveLen(1))
	return &pods.Items[0]
}

// replicaSets are the names of the workload's ReplicaSets.
func replicaSets(name string) []string {
	GinkgoHelper()
	var sets appsv1.ReplicaSetList
	Expect(k8s.List(ctx, &sets, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name})).To(Succeed())
	var names []string
	for _, rs := range sets.Items {
		names = append(names, rs.Name)
	}
	return names
}

// agentImage builds test/cluster/agent as an image and imports it.
func agentImage() string {
	GinkgoHelper()
	const image = "localhost/mcp-e2e/agent:v1"
	bin := filepath.Join(work, "agent")
	run(repoRoot, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", bin, "./test/cluster/agent")
	archive := filepath.Join(work, "agent.tar")
	run(repoRoot, nil, clusterBin, "image", "--binary", bin, "--tag", image, "--out", archive)
	run(repoRoot, nil, clusterBin, "import", archive)
	return image
}

// agentStep is one line the agent printed.
type agentStep struct {
	Step   string          `json:"step"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
	Text   string          `json:"text"`
	Error  string          `json:"error"`
}

func (s agentStep) String() string {
	return fmt.Sprintf("status %d, body %s%s, error %q", s.Status, s.Body, s.Text, s.Error)
}

// runAgent runs the agent in a pod of the account, to its end, and
// returns what it printed, by step.
func runAgent(image, account, tool, arguments string) map[string]agentStep {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account},
		Spec: corev1.PodSpec{
			ServiceAccountName: account,
			RestartPolicy:      corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "agent", Image: image, ImagePullPolicy: corev1.PullNever,
				Args: []string{catalogURL, ns, "assistant", tool, arguments},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	Eventually(func(g Gomega) corev1.PodPhase {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		if pod.Status.Phase == corev1.PodFailed {
			StopTrying("the agent pod " + account + " failed").Now()
		}
		return pod.Status.Phase
	}).WithTimeout(2*time.Minute).Should(Equal(corev1.PodSucceeded), "the agent pod %s", account)
	// The log comes through the API server from the kubelet.
	raw, err := clientset.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "agent %s printed:\n%s", account, raw)
	steps := map[string]agentStep{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var s agentStep
		Expect(json.Unmarshal(sc.Bytes(), &s)).To(Succeed(), "the agent's line %q", sc.Text())
		Expect(s.Error).To(BeEmpty(), "the agent's %s step", s.Step)
		steps[s.Step] = s
	}
	Expect(steps).To(HaveKey("menu"))
	Expect(steps).To(HaveKey("call"))
	return steps
}

// leftovers are the objects of every kind the API server serves that
// remain in the operator's namespace, and the cluster-scoped ones that
// name the release, as "<Kind> <namespace>/<name>" or "<Kind> <name>";
// Events are not counted.
func leftovers(g Gomega) []string {
	lists, err := clientset.Discovery().ServerPreferredResources()
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		g.Expect(err).NotTo(HaveOccurred())
		for _, r := range list.APIResources {
			if !slices.Contains(r.Verbs, "list") || r.Kind == "Event" {
				continue
			}
			items := &unstructured.UnstructuredList{}
			items.SetGroupVersionKind(gv.WithKind(r.Kind + "List"))
			var opts []client.ListOption
			if r.Namespaced {
				opts = append(opts, client.InNamespace(operatorNS))
			}
			g.Expect(k8s.List(ctx, items, opts...)).To(Succeed(), "listing %s", r.Name)
			for _, item := range items.Items {
				switch {
				case r.Namespaced:
					out = append(out, r.Kind+" "+operatorNS+"/"+item.GetName())
				case strings.Contains(item.GetName(), release) || strings.Contains(item.GetName(), "mcp.toolmesh.io") ||
					item.GetLabels()["app.kubernetes.io/instance"] == release:
					out = append(out, r.Kind+" "+item.GetName())
				}
			}
		}
	}
	return out
}

// rolledOut waits for the operator's Deployment name to run replicas pods
// of its current generation, each ready and available.
func rolledOut(name string, replicas int32, within time.Duration) {
	GinkgoHelper()
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: name}}
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		st := deploy.Status
		g.Expect(st.ObservedGeneration).To(Equal(deploy.Generation))
		g.Expect([]int32{st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas}).To(HaveEach(replicas),
			"replicas, updated, ready, available")
	}).WithTimeout(within).WithPolling(time.Second).Should(Succeed())
}
