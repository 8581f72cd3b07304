package controller

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

func init() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
}

// newNamespace gives each test a namespace of its own.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// startMCP starts an in-process MCP server, stopped when the test ends.
func startMCP(opts testmcp.Options) *testmcp.Server {
	s, err := testmcp.Start(opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.Stop)
	return s
}

// createServer creates an MCPServer at url; mutate adjusts the spec.
func createServer(ns, name, url string, mutate ...func(*mcpv1alpha1.MCPServer)) *mcpv1alpha1.MCPServer {
	srv := &mcpv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       mcpv1alpha1.MCPServerSpec{URL: url},
	}
	for _, m := range mutate {
		m(srv)
	}
	Expect(k8sClient.Create(ctx, srv)).To(Succeed())
	// envtest runs no namespace controller: delete the object itself so its
	// server, stopped by then, is not retried for the rest of the suite.
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, srv))).To(Succeed()) })
	return srv
}

func every(d time.Duration) func(*mcpv1alpha1.MCPServer) {
	return func(s *mcpv1alpha1.MCPServer) { s.Spec.RefreshInterval = &metav1.Duration{Duration: d} }
}

// fetch reads the current object.
func fetch(srv *mcpv1alpha1.MCPServer) *mcpv1alpha1.MCPServer {
	var got mcpv1alpha1.MCPServer
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(srv), &got)).To(Succeed())
	return &got
}

// readyOf returns "Status/Reason" of the Ready condition, if it speaks for
// the current generation.
func readyOf(srv *mcpv1alpha1.MCPServer) func() string {
	return func() string {
		got := fetch(srv)
		c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != got.Generation {
			return "none"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

func toolNames(srv *mcpv1alpha1.MCPServer) []string {
	var names []string
	for _, t := range fetch(srv).Status.Tools {
		names = append(names, t.Name)
	}
	return names
}

// eventsOf lists "Reason: note" of every Event about the object.
func eventsOf(obj client.Object) func() []string {
	return func() []string {
		var list eventsv1.EventList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == obj.GetName() {
				out = append(out, fmt.Sprintf("%s: %s", e.Reason, e.Note))
			}
		}
		return out
	}
}

func containsSubstring(sub string) OmegaMatcher {
	return ContainElement(ContainSubstring(sub))
}

func toolNamesN(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return names
}

func exposed(server string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "mcp_" + server + "_" + strings.ReplaceAll(n, ".", "_")
	}
	return out
}
