package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

var _ = Describe("A generation's in-progress status", func() {
	// writer is a reconciler of its own that counts its status writes and
	// fails the first refuse of them with a conflict. The servers are
	// suspended, so the manager's own reconciler leaves them alone.
	writer := func(grace time.Duration, refuse int32) (r *MCPServerReconciler, writes *atomic.Int32) {
		base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		writes = &atomic.Int32{}
		return &MCPServerReconciler{Recorder: events.NewFakeRecorder(10), progressGrace: grace, Client: interceptor.NewClient(base, interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if writes.Add(1) <= refuse {
					return apierrors.NewConflict(schema.GroupResource{Group: "mcp.toolmesh.io", Resource: "mcpservers"}, obj.GetName(), errors.New("injected"))
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		})}, writes
	}
	suspended := func(s *mcpv1alpha1.MCPServer) { s.Spec.Suspend = true }
	// start takes up the server's generation as Reconcile does.
	start := func(r *MCPServerReconciler, srv *mcpv1alpha1.MCPServer) (before, after *mcpv1alpha1.MCPServer, p *progressWrite) {
		before = fetch(srv)
		after = before.DeepCopy()
		markReconciling(after)
		return before, after, r.writeProgressLater(ctx, before, after)
	}
	finished := func(srv *mcpv1alpha1.MCPServer) {
		got := fetch(srv)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(readyOf(srv)()).To(Equal("True/ToolsDiscovered"))
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReconciling)).To(BeNil())
	}

	It("is not written for work that ends within the grace: the finished status is the generation's one write", func() {
		srv := createServer(newNamespace(), "quick", "http://127.0.0.1:1/mcp", suspended)
		r, writes := writer(time.Hour, 0)
		before, after, p := start(r, srv)
		markReady(after, "Discovered 0 tools")
		from := p.settle(before, after)
		Expect(from).To(BeIdenticalTo(before))
		Expect(r.commit(ctx, from, after)).To(Succeed())
		Expect(writes.Load()).To(BeEquivalentTo(1))
		finished(srv)
	})

	It("is written once the work outlasts the grace, and the finished status is written after it", func() {
		srv := createServer(newNamespace(), "slow", "http://127.0.0.1:1/mcp", suspended)
		r, writes := writer(time.Millisecond, 0)
		before, after, p := start(r, srv)
		Eventually(serverCondition(srv, mcpv1alpha1.ConditionReconciling)).Should(Equal("True/Progressing@1"))
		markReady(after, "Discovered 0 tools")
		from := p.settle(before, after)
		Expect(from.Status.Conditions).To(ContainElement(HaveField("Type", mcpv1alpha1.ConditionReconciling)))
		// The patch holds the in-progress write's resourceVersion: the
		// one it started from would be refused as a conflict.
		Expect(r.commit(ctx, from, after)).To(Succeed())
		Expect(writes.Load()).To(BeEquivalentTo(2))
		finished(srv)
	})

	It("leaves a failed in-progress write to the reconcile's own, which starts from what it read", func() {
		srv := createServer(newNamespace(), "refused", "http://127.0.0.1:1/mcp", suspended)
		r, writes := writer(time.Millisecond, 1)
		before, after, p := start(r, srv)
		Eventually(writes.Load).Should(BeEquivalentTo(1))
		markReady(after, "Discovered 0 tools")
		Expect(p.settle(before, after)).To(BeIdenticalTo(before))
		Expect(r.commit(ctx, before, after)).To(Succeed())
		Expect(writes.Load()).To(BeEquivalentTo(2))
		finished(srv)
	})
})
