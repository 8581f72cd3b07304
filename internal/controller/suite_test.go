package controller

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
)

// The suite runs the controllers in a real manager against a real
// kube-apiserver and etcd (built from source by hack/envtest-assets.sh).

const (
	suiteStatusBudget = 256 << 10
	// suiteBridgeImage is what --bridge-image says in the suite.
	suiteBridgeImage = "ghcr.io/toolmesh/mcp-operator:suite"
)

// suiteIngress is where the suite's manager is told it runs (POD_NAMESPACE
// and --workload-ingress-from-labels, as config/manager sets them): the
// pods its workloads' NetworkPolicies admit.
var suiteIngress = WorkloadIngress{Namespace: "mcp-operator-system",
	PodLabels: map[string]string{"app.kubernetes.io/name": "mcp-operator", "app.kubernetes.io/component": "manager"}}

var (
	env       *testenv.Env
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	k8sClient = env.Client

	mgr, err := env.NewManager()
	Expect(err).NotTo(HaveOccurred())
	Expect(SetupWithManager(ctx, mgr, Options{StatusBudget: suiteStatusBudget, Limits: mcpclient.DefaultLimits,
		Egress: &mcpclient.EgressPolicy{Deny: mcpclient.DefaultEgressDeny}, MaxDescriptionBytes: DefaultMaxDescriptionBytes,
		BridgeImage: suiteBridgeImage, WorkloadIngress: suiteIngress})).To(Succeed())

	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
