package controller

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// kstatusOf computes what Flux and the cli-utils appliers read.
func kstatusOf(obj client.Object) status.Status { return kstatusResult(obj).Status }

// kstatusResult is kstatus's whole reading: the status and the message
// Flux and the appliers report with it.
func kstatusResult(obj client.Object) *status.Result {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	result, err := status.Compute(&unstructured.Unstructured{Object: raw})
	Expect(err).NotTo(HaveOccurred())
	return result
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

	It("reads Failed, not InProgress, while discovery fails and is retried, and Current once it works", func() {
		ns := newNamespace()
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.AddTools("t")
		mcp.Stop()
		srv := createServer(ns, "down", mcp.URL(), every(10*time.Second))
		Eventually(readyOf(srv)).Should(Equal("False/Unreachable"))
		failing := fetch(srv)
		result := kstatusResult(failing)
		Expect(result.Status).To(Equal(status.FailedStatus), "kstatus says %s: %s", result.Status, result.Message)
		Expect(result.Message).To(ContainSubstring("refused the connection"))
		Expect(failing.Status.ObservedGeneration).To(Equal(failing.Generation), "the generation was handled: its attempt failed")
		Expect(meta.FindStatusCondition(failing.Status.Conditions, mcpv1alpha1.ConditionReconciling)).To(BeNil(),
			"no attempt is under way between two retries")

		By("handling a new generation while the server stays down")
		updateServer(srv, func(changed *mcpv1alpha1.MCPServer) { changed.Spec.ToolPrefix = "renamed" })
		Eventually(func() int64 { return fetch(srv).Status.ObservedGeneration }).Should(BeEquivalentTo(2))
		Expect(kstatusOf(fetch(srv))).To(Equal(status.FailedStatus))
		Expect(readyOf(srv)()).To(Equal("False/Unreachable"))

		By("reading Current once the server answers")
		Expect(mcp.Restart()).To(Succeed())
		Eventually(func() status.Status { return kstatusOf(fetch(srv)) }, 40*time.Second).Should(Equal(status.CurrentStatus))
		Expect(readyOf(srv)()).To(Equal("True/ToolsDiscovered"))
		Expect(toolNames(srv)).To(Equal([]string{"mcp_renamed_t"}))
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

	It("accepts config/default with client-side apply, whose last-applied annotation must fit in 256 KiB", func() {
		// The MCPServer CRD embeds pod-spec types (volumes, affinity) and is
		// the largest object here; kubectl apply copies it whole into an
		// annotation.
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "mcp-operator-system"}}))).To(Succeed())
		out, err := kubectl("apply", "--dry-run=server", "-k", filepath.Join("..", "..", "config", "default"))
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`customresourcedefinition.apiextensions.k8s.io/mcpservers.mcp.toolmesh.io (configured|created|unchanged) \(server dry run\)`))
	})

	It("gives the manager its own image as --bridge-image, whatever image config/default is set to", func() {
		rendered := func(root string) (image string, args []string) {
			out, err := exec.Command("kubectl", "kustomize", filepath.Join(root, "default")).Output()
			Expect(err).NotTo(HaveOccurred())
			for _, doc := range strings.Split(string(out), "\n---\n") {
				var d appsv1.Deployment
				Expect(yaml.Unmarshal([]byte(doc), &d)).To(Succeed())
				if d.Kind == "Deployment" {
					c := d.Spec.Template.Spec.Containers[0]
					return c.Image, c.Args
				}
			}
			Fail("config/default renders no Deployment")
			return "", nil
		}
		image, args := rendered(filepath.Join("..", "..", "config"))
		Expect(image).To(Equal("ghcr.io/toolmesh/mcp-operator:dev"))
		Expect(args).To(ContainElement("--bridge-image=ghcr.io/toolmesh/mcp-operator:dev"))

		// What kustomize edit set image controller=... writes, on a copy.
		copied := filepath.Join(GinkgoT().TempDir(), "config")
		Expect(os.CopyFS(copied, os.DirFS(filepath.Join("..", "..", "config")))).To(Succeed())
		kustomization := filepath.Join(copied, "default", "kustomization.yaml")
		raw, err := os.ReadFile(kustomization)
		Expect(err).NotTo(HaveOccurred())
		pinned := strings.Replace(string(raw), "  newTag: dev\n", "  newTag: v1.2.3@sha256:"+strings.Repeat("ab", 32)+"\n", 1)
		pinned = strings.Replace(pinned, "newName: ghcr.io/toolmesh/mcp-operator", "newName: registry.example.com/mirror/mcp-operator", 1)
		Expect(pinned).NotTo(Equal(string(raw)))
		Expect(os.WriteFile(kustomization, []byte(pinned), 0o600)).To(Succeed())
		image, args = rendered(copied)
		Expect(image).To(HavePrefix("registry.example.com/mirror/mcp-operator:v1.2.3@sha256:"))
		Expect(args).To(ContainElement("--bridge-image=" + image))
	})

	It("accepts the workload samples, and runs the filesystem one behind the bridge", func() {
		ns := newNamespace()
		dir := filepath.Join("..", "..", "config", "samples", "workload")
		out, err := kubectl("apply", "-n", ns, "--dry-run=server", "-k", dir)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("mcpserver.mcp.toolmesh.io/files created (server dry run)"))
		Expect(out).To(ContainSubstring("mcpserver.mcp.toolmesh.io/github created (server dry run)"))

		out, err = kubectl("apply", "-n", ns, "-k", dir)
		Expect(err).NotTo(HaveOccurred(), out)
		for _, name := range []string{"files", "github"} {
			srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, srv))).To(Succeed()) })
		}
		files := existing(deploymentOf(&mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "files"}}))
		server := serverIn(files.Spec.Template.Spec.Containers)
		Expect(server.Command).To(Equal([]string{"/mcp-bridge/mcp-bridge"}))
		Expect(server.Args).To(Equal([]string{"--listen", ":8080", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/data"}))
		github := existing(deploymentOf(&mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"}}))
		Expect(serverIn(github.Spec.Template.Spec.Containers).Env[0].ValueFrom.SecretKeyRef.Name).To(Equal("github-token"))
	})

	It("accepts every sample", func() {
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "samples"}}))).To(Succeed())
		out, err := kubectl("apply", "-n", "samples", "--dry-run=server", "-k", filepath.Join("..", "..", "config", "samples"))
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("toolcollection.mcp.toolmesh.io/assistant created (server dry run)"))
	})
})
