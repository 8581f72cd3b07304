package toolcatalog

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader counts the Lists a reader makes.
type countingReader struct {
	client.Reader
	lists atomic.Int32
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

var _ = Describe("Finding the replica a request belongs to", func() {
	replica := func(ns, name string, labels map[string]string, phase corev1.PodPhase) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "manager",
				Ports: []corev1.ContainerPort{{Name: "catalog", ContainerPort: 8090}}}}}}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		pod.Status.PodIP, pod.Status.Phase = "10.0.0.9", phase
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	}

	It("finds running manager pods only, a new one soon, and lists no more than once a second", func() {
		ns := env.Namespace()
		manager := map[string]string{"app.kubernetes.io/name": "mcp-operator"}
		replica(ns, "catalog-a", manager, corev1.PodRunning)
		replica(ns, "evicted", manager, corev1.PodFailed)
		replica(ns, "other", map[string]string{"app": "other"}, corev1.PodRunning)
		reader := &countingReader{Reader: env.Client}
		peers := Peers{Self: "catalog-b", Namespace: ns, Labels: manager, Reader: reader}
		list := &peerList{}
		address := func(owner string) (string, bool) { return list.address(ctx, peers, owner, func(string, ...any) {}) }

		found, ok := address("catalog-a")
		Expect(ok).To(BeTrue())
		Expect(found).To(Equal("10.0.0.9:8090"))
		for _, owner := range []string{"evicted", "other", "made-up-1", "made-up-2", "made-up-3"} {
			_, known := address(owner)
			Expect(known).To(BeFalse(), owner)
		}
		Expect(reader.lists.Load()).To(BeEquivalentTo(1), "names it lacks, asked within a second, cost no List")

		before, started := reader.lists.Load(), time.Now()
		replica(ns, "catalog-c", manager, corev1.PodRunning)
		Eventually(func() bool { _, ok := address("catalog-c"); return ok }).Should(BeTrue(), "a new replica")
		// Asked every 10 ms while it was missing: a List a second at most,
		// however long the machine took.
		Expect(reader.lists.Load() - before).To(BeNumerically("<=", 1+int32(time.Since(started)/peerRelist)))
	})
})
