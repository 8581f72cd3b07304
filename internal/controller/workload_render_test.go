package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// admits reads an ingress policy as the NetworkPolicy API defines it: a
// connection to a pod the policy selects is let in when one rule matches
// both its peer and its port; a peer's two selectors must both match; a
// nil namespaceSelector means the policy's own namespace, a nil
// podSelector every pod. It is what a network plugin enforces, and what
// envtest cannot.
func admits(t *testing.T, p *networkingv1.NetworkPolicy, to map[string]string, fromNS string, from map[string]string, port int32) bool {
	t.Helper()
	matches := func(s *metav1.LabelSelector, set map[string]string) bool {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatalf("the policy holds an invalid selector: %v", err)
		}
		return sel.Matches(labels.Set(set))
	}
	if !matches(&p.Spec.PodSelector, to) {
		return true // not selected: the policy says nothing about this pod
	}
	nsLabels := map[string]string{corev1.LabelMetadataName: fromNS}
	for _, rule := range p.Spec.Ingress {
		portOK := len(rule.Ports) == 0
		for _, rp := range rule.Ports {
			portOK = portOK || (rp.Port == nil || rp.Port.IntVal == port) && (rp.Protocol == nil || *rp.Protocol == corev1.ProtocolTCP)
		}
		peerOK := len(rule.From) == 0
		for _, peer := range rule.From {
			nsOK := fromNS == p.Namespace
			if peer.NamespaceSelector != nil {
				nsOK = matches(peer.NamespaceSelector, nsLabels)
			}
			podOK := peer.PodSelector == nil || matches(peer.PodSelector, from)
			peerOK = peerOK || nsOK && podOK
		}
		if portOK && peerOK {
			return true
		}
	}
	return false
}

func TestNetworkPolicyAdmits(t *testing.T) {
	srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "github", Namespace: "tools"},
		Spec: mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{Image: "ghcr.io/github/github-mcp-server:1"}}}
	manager := map[string]string{"app.kubernetes.io/name": "mcp-operator", "app.kubernetes.io/component": "manager"}
	labelled := WorkloadIngress{Namespace: "mcp-operator-system", PodLabels: manager}
	wholeNamespace := WorkloadIngress{Namespace: "mcp-operator-system"}
	workload := workloadLabels(srv)
	otherWorkload := map[string]string{labelName: nameValue, labelInstance: "files"}
	agent := map[string]string{"app": "agent"}

	tests := []struct {
		name   string
		from   WorkloadIngress
		to     map[string]string
		fromNS string
		pod    map[string]string
		port   int32
		want   bool
	}{
		{"a manager pod reaches the server's port", labelled, workload, "mcp-operator-system", manager, 8080, true},
		{"a manager pod reaches no other port", labelled, workload, "mcp-operator-system", manager, 9090, false},
		{"a pod labelled like the manager elsewhere is refused", labelled, workload, "tools", manager, 8080, false},
		{"another pod of the manager's namespace is refused", labelled, workload, "mcp-operator-system", agent, 8080, false},
		{"a pod of the workload's own namespace is refused", labelled, workload, "tools", agent, 8080, false},
		{"without labels, any pod of the manager's namespace", wholeNamespace, workload, "mcp-operator-system", agent, 8080, true},
		{"without labels, still no pod elsewhere", wholeNamespace, workload, "tools", manager, 8080, false},
		{"another MCPServer's pods are not this policy's", labelled, otherWorkload, "tools", agent, 8080, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := renderNetworkPolicy(srv, tt.from)
			if got := admits(t, p, tt.to, tt.fromNS, tt.pod, tt.port); got != tt.want {
				t.Errorf("admitted: %v, want %v", got, tt.want)
			}
		})
	}
}
