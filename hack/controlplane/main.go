// Command controlplane starts a local Kubernetes control plane (the real
// kube-apiserver and etcd the tests use, built by hack/envtest-assets.sh)
// with the operator's CRDs installed, writes an admin kubeconfig, and runs
// until interrupted. `make demo` uses it; it is for laptops, not clusters.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	kubeconfig := flag.String("kubeconfig-out", "", "where to write the admin kubeconfig (required)")
	crds := flag.String("crds", "config/crd/bases", "folder of CRDs to install")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "controlplane: --kubeconfig-out is required")
		os.Exit(2)
	}
	if err := run(*kubeconfig, *crds); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(kubeconfigPath, crds string) error {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return fmt.Errorf("KUBEBUILDER_ASSETS is not set: run hack/envtest-assets.sh first")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{crds}, ErrorIfCRDPathMissing: true}
	if _, err := env.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver and etcd: %w", err)
	}
	defer func() { _ = env.Stop() }()

	user, err := env.AddUser(envtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	config, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfigPath), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfigPath, config, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	fmt.Println("controlplane: ready, kubeconfig at", kubeconfigPath)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Println("controlplane: stopping")
	return nil
}
