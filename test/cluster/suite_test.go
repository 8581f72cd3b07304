//go:build e2e

// Package cluster runs the operator as a platform team does: the images
// make image builds, imported into a one-node cluster with real pods
// (hack/cluster: kubelet, containerd, kube-proxy, CoreDNS, the Deployment
// controller and the garbage collector), the chart installed with helm,
// stdio servers running in pods and agents calling the catalog from pods.
// make e2e runs it (go test -tags e2e); it needs root, and is built only
// with that tag, so go test ./... leaves it out.
package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// What make e2e passes.
var (
	// version is the tag make image gave the operator's and the demo
	// server's images.
	version = os.Getenv("MCP_E2E_VERSION")
	// images is the folder of make image's archives.
	images = envOr("MCP_E2E_IMAGES", "bin/images")
	// helmVersion is the Makefile's HELM_VERSION.
	helmVersion = os.Getenv("MCP_E2E_HELM_VERSION")
)

// Set up by BeforeSuite.
var (
	repoRoot   string
	work       string // binaries and files of this run
	clusterBin string
	helmBin    string
	kubeconfig string
	k8s        client.Client
	clientset  kubernetes.Interface
	ctx        = context.Background()
)

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func TestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cluster with real pods")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(GinkgoLogr)
	// Two cores shared with other work: controllers, the kubelet and
	// kube-proxy may take seconds to act on a change.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	Expect(version).NotTo(BeEmpty(), "MCP_E2E_VERSION names the images' tag (make e2e sets it)")
	Expect(helmVersion).NotTo(BeEmpty(), "MCP_E2E_HELM_VERSION names Helm's version (make e2e sets it)")
	var err error
	repoRoot, err = filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	if !filepath.IsAbs(images) {
		images = filepath.Join(repoRoot, images)
	}
	work, err = os.MkdirTemp("", "mcp-e2e-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, work)

	clusterBin = filepath.Join(work, "cluster")
	run(repoRoot, nil, "go", "build", "-o", clusterBin, "./hack/cluster")
	// Helm at the Makefile's version, built once per run (from the build
	// cache after the first).
	run(repoRoot, []string{"GOBIN=" + work}, "go", "install", "helm.sh/helm/v4/cmd/helm@"+helmVersion)
	helmBin = filepath.Join(work, "helm")

	// A cluster that runs already is another run's: leave it alone.
	Expect(run(repoRoot, nil, clusterBin, "status")).To(BeEmpty(), "a cluster runs on this machine already")
	// Registered before up, so that an interrupted up is cleaned too (up
	// cleans up after itself when it fails).
	DeferCleanup(func() {
		By("stopping the cluster")
		run(repoRoot, nil, clusterBin, "down")
	})
	By("starting the cluster")
	kubeconfig = strings.TrimSpace(run(repoRoot, nil, clusterBin, "up", "--images", images))

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	// Listing every kind after uninstall reads deprecated ones too.
	cfg.WarningHandler = rest.NoWarnings{}
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(mcpv1alpha1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
})

// run runs a command to its end and returns its stdout; its stderr goes to
// the spec's output. A failure fails the spec with both.
func run(dir string, env []string, name string, args ...string) string {
	GinkgoHelper()
	out, err := runErr(dir, env, name, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

func runErr(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, GinkgoWriter)
	started := time.Now()
	err := cmd.Run()
	fmt.Fprintf(GinkgoWriter, "$ %s %s (%s)\n", name, strings.Join(args, " "), time.Since(started).Round(100*time.Millisecond))
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}
