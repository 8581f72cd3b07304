// Package testenv starts the real control plane tests run against (envtest:
// kube-apiserver and etcd built by hack/envtest-assets.sh) with the
// operator's CRDs, and holds the helpers the Ginkgo suites share.
package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/cachepolicy"
)

// Env is a running control plane and a client that talks to it directly
// (not through a cache), as a user would.
type Env struct {
	Ctx     context.Context
	Config  *rest.Config
	Client  client.Client
	Scheme  *k8sruntime.Scheme
	envtest *envtest.Environment
}

// Options change how StartWith starts the control plane.
type Options struct {
	// APIServerFlags are set on kube-apiserver's command line as
	// --name=value (names without the dashes), replacing any value envtest
	// gives the same flag: for example "authentication-config" with the
	// path of a structured authentication configuration.
	APIServerFlags map[string]string
}

// Start starts kube-apiserver and etcd with the CRDs installed.
func Start(ctx context.Context) (*Env, error) { return StartWith(ctx, Options{}) }

// StartWith is Start with options.
func StartWith(ctx context.Context, opts Options) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run `make test`, which builds kube-apiserver and etcd")
	}
	_, here, _, _ := runtime.Caller(0)
	crds := filepath.Join(filepath.Dir(here), "..", "..", "config", "crd", "bases")
	e := &Env{Ctx: ctx, envtest: &envtest.Environment{CRDDirectoryPaths: []string{crds}, ErrorIfCRDPathMissing: true}}
	if len(opts.APIServerFlags) > 0 {
		args := e.envtest.ControlPlane.GetAPIServer().Configure()
		for name, value := range opts.APIServerFlags {
			args.Set(name, value)
		}
	}
	cfg, err := e.envtest.Start()
	if err != nil {
		return nil, err
	}
	e.Config = cfg
	e.Scheme = k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(e.Scheme); err != nil {
		return nil, err
	}
	if err := mcpv1alpha1.AddToScheme(e.Scheme); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme}); err != nil {
		return nil, err
	}
	return e, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.envtest.Stop() }

// NewManager makes a manager on the control plane with no metrics or
// probe listeners, caching as the manager binary does.
func (e *Env) NewManager() (ctrl.Manager, error) {
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	cachepolicy.Apply(&opts)
	return ctrl.NewManager(e.Config, opts)
}

// Kubeconfig writes an admin kubeconfig for the real kubectl to path.
func (e *Env) Kubeconfig(path string) error {
	user, err := e.envtest.AddUser(envtest.User{Name: "kubectl", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	config, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, config, 0o600)
}
