package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Versions of what the cluster runs. Kubernetes is the version envtest
// runs (hack/envtest-assets.sh), so one build cache serves both.
const (
	kubeVersion    = "1.37.2"
	corednsVersion = "1.15.0"
)

// components are the Kubernetes binaries built from k8s.io/kubernetes.
// kube-apiserver is built here too, not taken from envtest's cache: that
// one is not version-stamped, and Helm and kubectl read the version.
var components = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}

// binaries is where everything the cluster runs was built.
type binaries struct {
	dir     string // the Kubernetes components
	etcd    string
	coredns string // CoreDNS's image archive
}

func (b binaries) path(name string) string { return filepath.Join(b.dir, name) }

// build builds what is not cached yet and says where everything is.
func build(ctx context.Context, cache string) (binaries, error) {
	b := binaries{
		dir:     filepath.Join(cache, "bin", "v"+kubeVersion),
		coredns: filepath.Join(cache, "coredns", "v"+corednsVersion, "coredns.tar"),
	}
	started := time.Now()
	built := false
	// etcd comes from envtest's cache (which builds kube-apiserver too,
	// unstamped, for make test).
	envtest := exec.CommandContext(ctx, "hack/envtest-assets.sh")
	envtest.Stderr = os.Stderr // its progress, through a cold build
	assets, err := envtest.Output()
	if err != nil {
		return b, fmt.Errorf("building etcd with hack/envtest-assets.sh: %w", err)
	}
	b.etcd = filepath.Join(strings.TrimSpace(string(assets)), "etcd")

	var missing []string
	for _, c := range components {
		if !executable(b.path(c)) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		built = true
		if err := buildKubernetes(ctx, b.dir, missing); err != nil {
			return b, err
		}
	}
	if _, err := os.Stat(b.coredns); err != nil {
		built = true
		if err := buildCoreDNS(ctx, filepath.Dir(b.coredns)); err != nil {
			return b, err
		}
	}
	if built {
		logf("binaries built in %s, cached in %s", time.Since(started).Round(time.Second), cache)
	}
	return b, nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&0o111 != 0
}

// stagingReplace matches k8s.io/kubernetes's replace directives for its
// staging modules, which point at folders the module zip does not hold.
var stagingReplace = regexp.MustCompile(`(?m)^\s*(k8s\.io/[a-z0-9-]+) => \./staging/`)

// buildKubernetes builds names from k8s.io/kubernetes in a scratch module
// that requires it and points each staging module at its published
// release (v1.37.2 -> v0.37.2), as hack/envtest-assets.sh does.
func buildKubernetes(ctx context.Context, dest string, names []string) error {
	mod, err := os.MkdirTemp("", "cluster-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mod)
	out, err := runOutput(ctx, mod, []string{"GOFLAGS=-mod=mod"}, "go", "mod", "download", "-json", "k8s.io/kubernetes@v"+kubeVersion)
	if err != nil {
		return fmt.Errorf("downloading k8s.io/kubernetes: %w", err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return fmt.Errorf("reading go mod download's answer: %w", err)
	}
	upstream, err := os.ReadFile(info.GoMod)
	if err != nil {
		return err
	}
	staging := "v0." + strings.SplitN(kubeVersion, ".", 2)[1]
	var gomod bytes.Buffer
	fmt.Fprintf(&gomod, "module cluster.local/kubernetes\n\ngo 1.26\n\nrequire k8s.io/kubernetes v%s\n\n", kubeVersion)
	for _, m := range stagingReplace.FindAllSubmatch(upstream, -1) {
		fmt.Fprintf(&gomod, "replace %s => %s %s\n", m[1], m[1], staging)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), gomod.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	// Stamped as Kubernetes' own build stamps them; unstamped, they say
	// v0.0.0-master, which Helm's and kubectl's version checks read.
	minor := strings.Split(kubeVersion, ".")[1]
	ldflags := fmt.Sprintf("-s -w -X k8s.io/component-base/version.gitVersion=v%[1]s -X k8s.io/component-base/version.gitMajor=1"+
		" -X k8s.io/component-base/version.gitMinor=%[2]s -X k8s.io/component-base/version.gitTreeState=clean"+
		" -X k8s.io/client-go/pkg/version.gitVersion=v%[1]s -X k8s.io/client-go/pkg/version.gitMajor=1"+
		" -X k8s.io/client-go/pkg/version.gitMinor=%[2]s", kubeVersion, minor)
	for i, name := range names {
		logf("building %s v%s from source (%d of %d; each takes up to 2 minutes on 2 cores once envtest's kube-apiserver is built)",
			name, kubeVersion, i+1, len(names))
		started := time.Now()
		tmp := filepath.Join(dest, name+".tmp")
		if err := goBuild(ctx, mod, name, tmp, ldflags, "k8s.io/kubernetes/cmd/"+name, false); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dest, name)); err != nil {
			return err
		}
		logf("built %s in %s", name, time.Since(started).Round(time.Second))
	}
	return nil
}

// corednsMain is CoreDNS with only the plugins the cluster's Corefile
// uses, CoreDNS's documented way to choose plugins at compile time: the
// full plugin set pulls in every cloud provider's SDK.
const corednsMain = `package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"errors", "health", "ready", "kubernetes", "cache", "loadbalance"}
}

func main() { coremain.Run() }
`

// buildCoreDNS builds CoreDNS and packs it as an image into dest.
func buildCoreDNS(ctx context.Context, dest string) error {
	mod, err := os.MkdirTemp("", "cluster-coredns-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mod)
	gomod := fmt.Sprintf("module cluster.local/coredns\n\ngo 1.26\n\nrequire github.com/coredns/coredns v%s\n", corednsVersion)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(corednsMain), 0o644); err != nil {
		return err
	}
	logf("building CoreDNS v%s from source (cold, about 2 minutes on 2 cores)", corednsVersion)
	started := time.Now()
	if _, err := runOutput(ctx, mod, []string{"GOFLAGS=-mod=mod"}, "go", "mod", "tidy"); err != nil {
		return fmt.Errorf("resolving CoreDNS's modules: %w", err)
	}
	bin := filepath.Join(mod, "coredns")
	if err := goBuild(ctx, mod, "coredns", bin, "-s -w", ".", true); err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dest, "coredns.tar.tmp")
	if err := writeImage(tmp, corednsImage, bin, "/coredns", nil); err != nil {
		return err
	}
	logf("built CoreDNS in %s", time.Since(started).Round(time.Second))
	return os.Rename(tmp, filepath.Join(dest, "coredns.tar"))
}

// goBuild builds pkg, saying every 30 s that it still runs. Only what
// runs in an image is built static (CGO_ENABLED=0): the components run on
// the host, and building them as hack/envtest-assets.sh builds
// kube-apiserver shares its build cache.
func goBuild(ctx context.Context, mod, name, out, ldflags, pkg string, static bool) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags="+ldflags, "-o", out, pkg)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if static {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	started := time.Now()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("building %s: %w\n%s", name, err, tail(output.String(), 30))
			}
			return nil
		case <-tick.C:
			logf("still building %s, %s so far", name, time.Since(started).Round(time.Second))
		}
	}
}

// runOutput runs a command and returns its stdout; on failure the error
// carries the end of its stderr.
func runOutput(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 20))
	}
	return stdout.String(), nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
