package controller

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// statusWrites is what a test reconciler's client saw of its status
// writes: each written object, and how to answer them.
type statusWrites struct {
	mu      sync.Mutex
	written []string
	// refuse answers the first this many writes with a conflict, or with
	// an internal error when internal is set.
	refuse   int
	internal bool
	// hold, when set, is waited on by the first write before it goes out;
	// started is closed once that write has begun.
	hold, started chan struct{}
}

func (s *statusWrites) bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.written...)
}

// update records a status write and sends it, refuses it or holds it.
func (s *statusWrites) update(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.written = append(s.written, string(body))
	n := len(s.written)
	s.mu.Unlock()
	if n == 1 && s.hold != nil {
		close(s.started)
		<-s.hold
	}
	if n <= s.refuse && s.internal {
		return apierrors.NewInternalError(errors.New("injected"))
	}
	if n <= s.refuse {
		return apierrors.NewConflict(schema.GroupResource{Group: "mcp.toolmesh.io", Resource: "mcpservers"}, obj.GetName(), errors.New("injected"))
	}
	return c.SubResource(sub).Update(ctx, obj, opts...)
}

// testReconciler is an MCPServerReconciler of the test's own, its status
// writes seen by writes. The servers it reconciles are created suspended,
// so that the manager's reconciler leaves them alone, and it reads them
// as if they were not.
func testReconciler(grace time.Duration, writes *statusWrites) (*MCPServerReconciler, *events.FakeRecorder) {
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	recorder := events.NewFakeRecorder(20)
	r := &MCPServerReconciler{
		Recorder: recorder, APIReader: base, progressGrace: grace,
		StatusBudget: DefaultStatusBudget, Limits: mcpclient.DefaultLimits,
		sessions:    &mcpclient.Pool{Owner: "test"},
		listChanged: newDebouncer(time.Hour, func(string) {}),
		Client: interceptor.NewClient(base, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				err := c.Get(ctx, key, obj, opts...)
				if srv, ok := obj.(*mcpv1alpha1.MCPServer); ok {
					srv.Spec.Suspend = false
				}
				return err
			},
			SubResourceUpdate: writes.update,
		}),
	}
	DeferCleanup(r.sessions.CloseAll)
	return r, recorder
}

// recorded drains the Events a test reconciler emitted.
func recorded(recorder *events.FakeRecorder) []string {
	var list []string
	for {
		select {
		case e := <-recorder.Events:
			list = append(list, e)
		default:
			return list
		}
	}
}

var _ = Describe("A generation's in-progress status", func() {
	suspended := func(s *mcpv1alpha1.MCPServer) { s.Spec.Suspend = true }
	reconcileOnce := func(r *MCPServerReconciler, srv *mcpv1alpha1.MCPServer) ctrl.Result {
		result, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(srv)})
		Expect(err).NotTo(HaveOccurred())
		return result
	}
	finished := func(srv *mcpv1alpha1.MCPServer) {
		got := fetch(srv)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(readyOf(srv)()).To(Equal("True/ToolsDiscovered"))
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReconciling)).To(BeNil())
	}

	It("is not written for a discovery that ends within the grace: the finished status is the generation's one write", func() {
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.AddTools("quick")
		srv := createServer(newNamespace(), "quick", mcp.URL(), suspended)
		writes := &statusWrites{}
		r, recorder := testReconciler(time.Minute, writes)

		reconcileOnce(r, srv)
		Expect(writes.bodies()).To(HaveLen(1))
		Expect(writes.bodies()[0]).NotTo(ContainSubstring(mcpv1alpha1.ConditionReconciling))
		finished(srv)
		Expect(recorded(recorder)).To(Equal([]string{"Normal ToolsDiscovered Discovered 1 tools"}))
	})

	It("is written once a discovery outlasts the grace, then the finished status, with the generation's warning said once", func() {
		// Each request waits, so discovery outlasts a grace of 1 ms.
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, TLS: true, Delay: 200 * time.Millisecond})
		mcp.AddTools("slow")
		srv := createServer(newNamespace(), "slow", mcp.URL(), suspended, func(s *mcpv1alpha1.MCPServer) {
			s.Spec.TLS = &mcpv1alpha1.TLSSpec{InsecureSkipVerify: true}
		})
		writes := &statusWrites{}
		r, recorder := testReconciler(time.Millisecond, writes)

		reconcileOnce(r, srv)
		bodies := writes.bodies()
		Expect(bodies).To(HaveLen(2))
		Expect(bodies[0]).To(ContainSubstring(`"reason":"` + mcpv1alpha1.ReasonProgressing + `"`))
		Expect(bodies[1]).To(ContainSubstring(`"reason":"` + mcpv1alpha1.ReasonToolsDiscovered + `"`))
		finished(srv)
		Expect(recorded(recorder)).To(ConsistOf(
			HavePrefix("Warning InsecureSkipVerify spec.tls.insecureSkipVerify is set"),
			Equal("Normal ToolsDiscovered Discovered 1 tools")))
	})

	It("that lost a race skips the reconcile's own write, which would lose it too, and runs again shortly", func() {
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, Delay: 200 * time.Millisecond})
		mcp.AddTools("raced")
		srv := createServer(newNamespace(), "raced", mcp.URL(), suspended)
		writes := &statusWrites{refuse: 1}
		r, _ := testReconciler(time.Millisecond, writes)

		Expect(reconcileOnce(r, srv)).To(Equal(ctrl.Result{RequeueAfter: conflictRetry}))
		Expect(writes.bodies()).To(HaveLen(1), "only the refused in-progress write")
		Expect(fetch(srv).Status.Conditions).To(BeEmpty())

		reconcileOnce(r, srv)
		finished(srv)
	})

	It("that failed otherwise leaves the reconcile's own write to go out from what it read, with the generation's warning", func() {
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, TLS: true, Delay: 200 * time.Millisecond})
		mcp.AddTools("failed")
		srv := createServer(newNamespace(), "failed", mcp.URL(), suspended, func(s *mcpv1alpha1.MCPServer) {
			s.Spec.TLS = &mcpv1alpha1.TLSSpec{InsecureSkipVerify: true}
		})
		writes := &statusWrites{refuse: 1, internal: true}
		r, recorder := testReconciler(time.Millisecond, writes)

		Expect(reconcileOnce(r, srv)).To(HaveField("RequeueAfter", BeNumerically(">", time.Second)))
		Expect(writes.bodies()).To(HaveLen(2))
		finished(srv)
		Expect(recorded(recorder)).To(ConsistOf(
			HavePrefix("Warning InsecureSkipVerify spec.tls.insecureSkipVerify is set"),
			Equal("Normal ToolsDiscovered Discovered 1 tools")))
	})

	It("in flight is waited for, and the finished status is written after it", func() {
		srv := createServer(newNamespace(), "held", "http://127.0.0.1:1/mcp", suspended)
		writes := &statusWrites{hold: make(chan struct{}), started: make(chan struct{})}
		r, _ := testReconciler(time.Millisecond, writes)
		before := fetch(srv)
		after := before.DeepCopy()
		markReconciling(after)
		p := r.writeProgressLater(ctx, before, after)
		Eventually(writes.started).Should(BeClosed())

		markReady(after, "Discovered 0 tools")
		settled := make(chan *mcpv1alpha1.MCPServer, 1)
		go func() {
			defer GinkgoRecover()
			from, err := p.settle(before, after)
			Expect(err).NotTo(HaveOccurred())
			settled <- from
		}()
		Consistently(settled, 300*time.Millisecond).ShouldNot(Receive(), "settled while its write was in flight")
		close(writes.hold)
		var from *mcpv1alpha1.MCPServer
		Eventually(settled).Should(Receive(&from))
		Expect(from.Status.Conditions).To(ContainElement(HaveField("Type", mcpv1alpha1.ConditionReconciling)))
		// The update carries the in-progress write's resourceVersion: the
		// one it started from would be refused as a conflict.
		Expect(from.ResourceVersion).NotTo(Equal(before.ResourceVersion))
		Expect(r.commit(ctx, from, after)).To(BeTrue(), "written")
		Expect(writes.bodies()).To(HaveLen(2))
		finished(srv)
		Expect(strings.Contains(writes.bodies()[1], `"resourceVersion":"`+from.ResourceVersion+`"`)).To(BeTrue(),
			"the finished write carries the in-progress write's resourceVersion: %s", writes.bodies()[1])
	})
})
