package controller

import (
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// kstatusOf computes what Flux and the cli-utils appliers read.
func kstatusOf(obj client.Object) status.Status {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	result, err := status.Compute(&unstructured.Unstructured{Object: raw})
	Expect(err).NotTo(HaveOccurred())
	return result.Status
}

// kubectl runs the real kubectl against the test API server.
func kubectl(args ...string) (string, error) {
	kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(env.Kubeconfig(kubeconfig)).To(Succeed())
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

var _ = Describe("GitOps health", func() {
	It("reads InProgress while a change is applied, Current when done, Failed when stalled", func() {
		ns := newNamespace()
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.AddTools("t")
		srv := createServer(ns, "tracked", mcp.URL())
		Expect(kstatusOf(srv)).To(Equal(status.InProgressStatus), "a new object with no status")
		Eventually(func() status.Status { return kstatusOf(fetch(srv)) }).Should(Equal(status.CurrentStatus))

		changed := fetch(srv)
		changed.Spec.ToolPrefix = "renamed"
		Expect(k8sClient.Update(ctx, changed)).To(Succeed())
		Expect(kstatusOf(changed)).To(Equal(status.InProgressStatus), "generation 2 not yet observed")
		Eventually(func() status.Status { return kstatusOf(fetch(srv)) }).Should(Equal(status.CurrentStatus))
		Expect(toolNames(srv)).To(Equal([]string{"mcp_renamed_t"}))

		stalled := fetch(srv)
		stalled.Spec.ToolFilter = &mcpv1alpha1.ToolFilter{Include: []string{"["}}
		Expect(k8sClient.Update(ctx, stalled)).To(Succeed())
		Eventually(func() status.Status { return kstatusOf(fetch(srv)) }).Should(Equal(status.FailedStatus))
	})

	It("makes kubectl wait for the new generation's Ready, never a stale one", func() {
		ns := newNamespace()
		fast := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		fast.AddTools("t")
		slow := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, Delay: 3 * time.Second})
		slow.AddTools("t")
		srv := createServer(ns, "waited", fast.URL())
		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))

		moved := fetch(srv)
		moved.Spec.URL = slow.URL()
		Expect(k8sClient.Update(ctx, moved)).To(Succeed())
		started := time.Now()
		out, err := kubectl("wait", "-n", ns, "--for=condition=Ready", "mcps/waited", "--timeout=60s")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(time.Since(started)).To(BeNumerically(">=", 2*time.Second), "kubectl returned on the old generation's Ready")
		done := fetch(srv)
		Expect(done.Status.ObservedGeneration).To(Equal(done.Generation))
		Expect(readyOf(srv)()).To(Equal("True/ToolsDiscovered"))
	})

	It("accepts config/default in a server-side dry run", func() {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "mcp-operator-system"}}))).To(Succeed())
		out, err := kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-k", filepath.Join("..", "..", "config", "default"))
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("deployment.apps/mcp-operator-controller-manager serverside-applied (server dry run)"))
		Expect(out).To(ContainSubstring("customresourcedefinition.apiextensions.k8s.io/mcpservers.mcp.toolmesh.io serverside-applied (server dry run)"))
	})

	It("accepts every sample", func() {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "samples"}}))).To(Succeed())
		out, err := kubectl("apply", "-n", "samples", "--dry-run=server", "-k", filepath.Join("..", "..", "config", "samples"))
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("toolcollection.mcp.toolmesh.io/assistant created (server dry run)"))
	})
})
