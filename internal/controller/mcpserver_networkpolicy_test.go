package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// envtest runs no network plugin: nothing enforces a NetworkPolicy here.
// The specs read the policy as the operator wrote it; what it admits is
// checked against label sets in TestNetworkPolicyAdmits.

func networkPolicyOf(srv *mcpv1alpha1.MCPServer) func() (*networkingv1.NetworkPolicy, error) {
	return func() (*networkingv1.NetworkPolicy, error) {
		var p networkingv1.NetworkPolicy
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(srv), &p)
		return &p, err
	}
}

// managerOnly is the ingress of a workload listening on port: the suite's
// manager pods, on that port, nothing else.
func managerOnly(port int32) []networkingv1.NetworkPolicyIngressRule {
	return []networkingv1.NetworkPolicyIngressRule{{
		From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "mcp-operator-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "mcp-operator", "app.kubernetes.io/component": "manager"}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}},
	}}
}

// isolated polls whether srv's NetworkPolicy is exactly what the operator
// renders for a workload listening on port.
func isolated(srv *mcpv1alpha1.MCPServer, port int32) func(Gomega) {
	return func(g Gomega) {
		p, err := networkPolicyOf(srv)()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"app.kubernetes.io/name": "mcp-server", "app.kubernetes.io/instance": srv.Name}))
		g.Expect(p.Spec.PodSelector.MatchExpressions).To(BeEmpty())
		g.Expect(p.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		g.Expect(p.Spec.Ingress).To(Equal(managerOnly(port)))
	}
}

// quieted makes srv look down for an hour, so that the operator's next
// retry of it is its refresh interval away (an hour, with refreshHourly),
// and waits for a reconcile that took this in. From then on only a watch
// brings a reconcile within a spec's time.
func quieted(srv *mcpv1alpha1.MCPServer) {
	Eventually(readyOf(srv)).Should(Equal("False/WorkloadUnavailable"))
	Eventually(func() error {
		s := fetch(srv)
		ready := meta.FindStatusCondition(s.Status.Conditions, mcpv1alpha1.ConditionReady)
		ready.LastTransitionTime = metav1.NewTime(time.Now().Add(-time.Hour))
		ready.Message = "stale"
		return k8sClient.Status().Update(ctx, s)
	}).Should(Succeed())
	Eventually(func() string { return conditionMessage(srv, mcpv1alpha1.ConditionReady) }).ShouldNot(Equal("stale"))
}

func refreshHourly(s *mcpv1alpha1.MCPServer) {
	s.Spec.RefreshInterval = &metav1.Duration{Duration: time.Hour}
}

var _ = Describe("A workload's NetworkPolicy", func() {
	It("admits only the manager's pods, on the server's port, and belongs to the MCPServer", func() {
		srv := createWorkload(newNamespace(), "guarded")
		d := existing(deploymentOf(srv))
		p := existing(networkPolicyOf(srv))

		Expect(p.Labels).To(Equal(d.Labels), "the managed-by label puts it in the manager's cache")
		Expect(p.OwnerReferences).To(ConsistOf(metav1.OwnerReference{APIVersion: "mcp.toolmesh.io/v1alpha1", Kind: "MCPServer",
			Name: "guarded", UID: fetch(srv).UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}),
			"the MCPServer is the controller owner: the garbage collector deletes the policy with it")
		Expect(p.Spec.PodSelector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels), "it selects exactly the workload's pods")
		Expect(p.Spec.Egress).To(BeEmpty())
		Eventually(isolated(srv, 8080)).Should(Succeed())

		By("following the server's port")
		updateServer(srv, func(moved *mcpv1alpha1.MCPServer) {
			moved.Spec.Workload.Port = 9090
		})
		Eventually(isolated(srv, 9090)).Should(Succeed())
	})

	It("is put back when someone edits or deletes it", func() {
		srv := createWorkload(newNamespace(), "kept", refreshHourly)
		Eventually(isolated(srv, 8080)).Should(Succeed())
		quieted(srv)

		By("restoring the rules after an edit that opens the pods to every peer")
		p := existing(networkPolicyOf(srv))
		p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		p.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "nothing"}}
		p.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		Expect(k8sClient.Update(ctx, p, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Eventually(isolated(srv, 8080)).Should(Succeed())

		By("making it again after a delete")
		deleted := existing(networkPolicyOf(srv))
		Expect(k8sClient.Delete(ctx, deleted)).To(Succeed())
		Eventually(func() (bool, error) {
			p, err := networkPolicyOf(srv)()
			return err == nil && p.UID != deleted.UID, client.IgnoreNotFound(err)
		}).Should(BeTrue())
		Eventually(isolated(srv, 8080)).Should(Succeed())
	})

	It("is not taken over when someone else made one of the same name, and nothing of the workload is made", func() {
		ns := newNamespace()
		theirs := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claimed"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{}},
			},
		}
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		srv := createWorkload(ns, "claimed")
		Eventually(readyOf(srv)).Should(Equal("False/WorkloadConflict"))
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionReady)).To(ContainSubstring("A NetworkPolicy named claimed exists and does not belong to this MCPServer"))
		p := existing(networkPolicyOf(srv))
		Expect(p.UID).To(Equal(theirs.UID))
		Expect(p.OwnerReferences).To(BeEmpty())
		Expect(p.Labels).To(BeEmpty())
		Expect(p.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"app": "theirs"}))
		Expect(p.Spec.Ingress).To(Equal([]networkingv1.NetworkPolicyIngressRule{{}}))
		Expect(gone(deploymentOf(srv))()).To(BeTrue(), "no pod runs while the policy's name is taken")
		Expect(gone(serviceOf(srv))()).To(BeTrue())
	})

	It("is neither made nor removed by a manager that does not know its namespace", func() {
		// Suspended, so the suite's manager leaves it to these reconcilers.
		srv := createWorkload(newNamespace(), "outside", func(s *mcpv1alpha1.MCPServer) { s.Spec.Suspend = true })
		unconfigured := &MCPServerReconciler{Client: k8sClient, APIReader: k8sClient, BridgeImage: suiteBridgeImage}
		_, err := unconfigured.applyWorkload(ctx, fetch(srv))
		Expect(err).NotTo(HaveOccurred())
		existing(deploymentOf(srv))
		existing(serviceOf(srv))
		_, err = networkPolicyOf(srv)()
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)

		By("leaving the policy a manager that knew its namespace made")
		configured := &MCPServerReconciler{Client: k8sClient, APIReader: k8sClient, BridgeImage: suiteBridgeImage, WorkloadIngress: suiteIngress}
		_, err = configured.applyWorkload(ctx, fetch(srv))
		Expect(err).NotTo(HaveOccurred())
		made := existing(networkPolicyOf(srv))
		_, err = unconfigured.applyWorkload(ctx, fetch(srv))
		Expect(err).NotTo(HaveOccurred())
		Expect(existing(networkPolicyOf(srv)).UID).To(Equal(made.UID))
		Eventually(isolated(srv, 8080)).Should(Succeed())
	})
})
