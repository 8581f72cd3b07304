package controller

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
)

func init() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
}

// Shorthands for the shared helpers of internal/testenv.
var (
	startMCP = testenv.StartMCP
	every    = testenv.Every
)

func newNamespace() string { return env.Namespace() }

func createServer(ns, name, url string, mutate ...func(*mcpv1alpha1.MCPServer)) *mcpv1alpha1.MCPServer {
	return env.CreateServer(ns, name, url, mutate...)
}

func fetch(srv *mcpv1alpha1.MCPServer) *mcpv1alpha1.MCPServer { return env.Fetch(srv) }

// updateServer applies mutate to the server's latest version and writes
// it, again on a conflict: the controller may write the status between
// the read and the write.
func updateServer(srv *mcpv1alpha1.MCPServer, mutate func(*mcpv1alpha1.MCPServer)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := fetch(srv)
		mutate(latest)
		return k8sClient.Update(ctx, latest)
	})).To(Succeed())
}

func readyOf(srv *mcpv1alpha1.MCPServer) func() string { return env.ReadyOf(srv) }

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
