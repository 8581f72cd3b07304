// Package helm keeps charts/mcp-operator from drifting from config/default:
// it renders the chart with the real Helm and config/default with the real
// kustomize (kubectl's), has the real API server dry-run both, and compares
// what the server would store, object by object and field by field.
package helm

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/test/promoperator"
)

var (
	env        *testenv.Env
	kubeconfig string
	cancel     context.CancelFunc
)

func TestHelm(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Helm chart suite")
}

var _ = BeforeSuite(func() {
	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(env.Kubeconfig(kubeconfig)).To(Succeed())
	// Namespaced objects are dry-run into the namespace config/default creates.
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	// The ServiceMonitor and PrometheusRules are validated by the Prometheus Operator's own CRDs.
	crds, err := promoperator.CRDPaths("servicemonitors", "prometheusrules")
	Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// kubectl runs the real kubectl against the test API server.
func kubectl(args ...string) (string, error) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out) + string(exit.Stderr), err
	}
	return string(out), err
}
