package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// up starts the cluster and returns once its node is Ready and cluster
// DNS answers: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd (with the images imported), kubelet,
// kube-proxy, then CoreDNS as a pod.
func (c *cluster) up(ctx context.Context, bins binaries, images string) error {
	started := time.Now()
	// Ports another cluster holds (one from another folder, which this
	// one's pidfiles do not know) refuse the start before anything is
	// cleaned up: the cleanup below would take that cluster's pods, chains
	// and bridge down.
	if err := portsFree(); err != nil {
		return &refusal{err}
	}
	if c.leftover() {
		logf("a previous cluster's state is left in %s or on the machine: removing it first", c.dir)
		if err := c.down(); err != nil {
			return fmt.Errorf("removing the previous cluster: %w", err)
		}
	}
	if err := ensurePackages(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	if err := c.saveSysctls(); err != nil {
		return err
	}
	if err := c.writeConfigs(); err != nil {
		return err
	}
	if err := addBridge(); err != nil {
		return err
	}
	if err := c.startControlPlane(ctx, bins); err != nil {
		return err
	}
	if err := c.startNode(ctx, bins, images); err != nil {
		return err
	}
	logf("cluster up in %s: export KUBECONFIG=%s", time.Since(started).Round(100*time.Millisecond), c.kubeconfig())
	return nil
}

// refusal is an up that started nothing, and so has nothing to undo.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// runningPIDs names the components that run from the folder.
func (c *cluster) runningPIDs() []string {
	var out []string
	for _, name := range processes {
		if pid := c.running(name); pid != 0 {
			out = append(out, fmt.Sprintf("%s pid %d", name, pid))
		}
	}
	return out
}

// leftover says whether anything of an earlier cluster remains.
func (c *cluster) leftover() bool {
	if _, err := os.Stat(c.dir); err == nil {
		return true
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridgeName)); err == nil {
		return true
	}
	return len(podCgroups()) > 0
}

// ensurePackages installs containerd, runc, the CNI plugins and iptables
// from Debian when one is missing.
func ensurePackages(ctx context.Context) error {
	need := map[string]string{
		"/usr/bin/containerd": "containerd", "/usr/sbin/runc": "runc",
		"/usr/lib/cni/bridge": "containernetworking-plugins", "/usr/sbin/iptables": "iptables",
	}
	var missing []string
	for path, pkg := range need {
		if !executable(path) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	logf("installing %s with apt-get", strings.Join(missing, ", "))
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	if _, err := runOutput(ctx, "", env, "apt-get", "update", "-qq"); err != nil {
		return err
	}
	_, err := runOutput(ctx, "", env, "apt-get", append([]string{"install", "-y", "-qq"}, missing...)...)
	return err
}

// portsFree checks the loopback ports the components listen on.
func portsFree() error {
	for _, port := range []int{etcdClientPort, etcdPeerPort, 10257, 10259, 10248, 10249, 10256} {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("port 127.0.0.1:%d is taken (another cluster?): %w", port, err)
		}
		_ = ln.Close()
	}
	return nil
}

// writeConfigs writes the certificates, kubeconfigs and each component's
// configuration into the folder.
func (c *cluster) writeConfigs() error {
	p, err := newPKI(c.path("pki"))
	if err != nil {
		return err
	}
	ips := func(s ...string) []net.IP {
		var out []net.IP
		for _, ip := range s {
			out = append(out, net.ParseIP(ip))
		}
		return out
	}
	certs := []cert{
		{name: "kube-apiserver", cn: "kube-apiserver", server: true, ips: ips(nodeIP, kubernetesIP, "127.0.0.1"),
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		{name: "admin", cn: "mcp-e2e-admin", orgs: []string{"system:masters"}},
		{name: "kubelet", cn: "system:node:" + nodeName, orgs: []string{"system:nodes"}, server: true,
			ips: ips(nodeIP), dns: []string{nodeName}},
		{name: "kube-controller-manager", cn: "system:kube-controller-manager"},
		{name: "kube-scheduler", cn: "system:kube-scheduler"},
		{name: "kube-proxy", cn: "system:kube-proxy"},
	}
	for _, ct := range certs {
		if err := p.issue(ct); err != nil {
			return err
		}
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	data := c.data()
	for _, user := range []string{"admin", "kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		d := data
		d.User = user
		if err := c.render("kubeconfig", c.path(user+".kubeconfig"), d); err != nil {
			return err
		}
	}
	for name, dest := range map[string]string{
		"containerd.toml": c.path("containerd.toml"),
		"cni.conflist":    c.path("cni", "net.d", "10-"+networkName+".conflist"),
		"kubelet.yaml":    c.path("kubelet.yaml"),
		"kube-proxy.yaml": c.path("kube-proxy.yaml"),
		"coredns.yaml":    c.path("coredns.yaml"),
	} {
		if err := c.render(name, dest, data); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) startControlPlane(ctx context.Context, bins binaries) error {
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	if err := c.start("etcd", bins.etcd, "--name=default", "--data-dir="+c.path("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync=true"); err != nil {
		return err
	}
	pki := func(name string) string { return c.path("pki", name) }
	if err := c.start("kube-apiserver", bins.path("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		// The bridge's address: reachable from pods, through the kubernetes
		// Service, and from this machine; not from elsewhere.
		"--bind-address="+nodeIP, "--advertise-address="+nodeIP, "--secure-port="+strconv.Itoa(apiserverPort),
		"--service-cluster-ip-range="+serviceCIDR,
		"--client-ca-file="+pki("ca.crt"),
		"--tls-cert-file="+pki("kube-apiserver.crt"), "--tls-private-key-file="+pki("kube-apiserver.key"),
		"--kubelet-client-certificate="+pki("apiserver-kubelet-client.crt"), "--kubelet-client-key="+pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+pki("ca.crt"), "--kubelet-preferred-address-types=InternalIP",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki("sa.pub"), "--service-account-signing-key-file="+pki("sa.key"),
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--cert-dir="+c.path("kube-apiserver"), "--profiling=false"); err != nil {
		return err
	}
	k, err := newKube(c.kubeconfig())
	if err != nil {
		return err
	}
	if err := c.waitUntil(ctx, "kube-apiserver to be ready", 90*time.Second, "kube-apiserver", k.ready); err != nil {
		return err
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		kubeconfig := c.path(name + ".kubeconfig")
		args := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig, "--bind-address=127.0.0.1", "--leader-elect=false"}
		if name == "kube-controller-manager" {
			args = append(args, "--secure-port=10257", "--cert-dir="+c.path(name),
				"--service-account-private-key-file="+pki("sa.key"), "--root-ca-file="+pki("ca.crt"),
				"--use-service-account-credentials=true", "--cluster-name="+nodeName)
		} else {
			args = append(args, "--secure-port=10259")
		}
		if err := c.start(name, bins.path(name), args...); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) startNode(ctx context.Context, bins binaries, images string) error {
	socket := c.path("containerd", "containerd.sock")
	if err := c.start("containerd", "/usr/bin/containerd", "--config="+c.path("containerd.toml")); err != nil {
		return err
	}
	if err := c.waitUntil(ctx, "containerd's socket", 30*time.Second, "containerd", func(context.Context) error {
		_, err := os.Stat(socket)
		return err
	}); err != nil {
		return err
	}
	if err := c.importImages(ctx, append(archives(images), bins.coredns)); err != nil {
		return err
	}
	if err := c.hasImage(ctx, pauseImage); err != nil {
		return fmt.Errorf("%w: run make image (it writes bin/images/pause.tar)", err)
	}
	if err := c.start("kubelet", bins.path("kubelet"), "--config="+c.path("kubelet.yaml"),
		"--kubeconfig="+c.path("kubelet.kubeconfig"), "--root-dir="+c.path("kubelet"),
		"--hostname-override="+nodeName, "--node-ip="+nodeIP, "--v=1"); err != nil {
		return err
	}
	if err := c.start("kube-proxy", bins.path("kube-proxy"), "--config="+c.path("kube-proxy.yaml")); err != nil {
		return err
	}
	k, err := newKube(c.kubeconfig())
	if err != nil {
		return err
	}
	if err := c.waitUntil(ctx, "the node to be Ready", 120*time.Second, "kubelet", k.nodeReady); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig="+c.kubeconfig(), "apply", "-f", c.path("coredns.yaml")).CombinedOutput(); err != nil {
		return fmt.Errorf("applying CoreDNS: %w: %s", err, out)
	}
	return c.waitUntil(ctx, "CoreDNS to be available", 120*time.Second, "kubelet", k.dnsAvailable)
}

// archives are the image archives in folder.
func archives(folder string) []string {
	files, _ := filepath.Glob(filepath.Join(folder, "*.tar"))
	return files
}

// ctr runs ctr against the cluster's containerd, in its namespace for
// Kubernetes.
func (c *cluster) ctr(ctx context.Context, args ...string) (string, error) {
	socket := c.path("containerd", "containerd.sock")
	return runOutput(ctx, "", nil, "ctr", append([]string{"--address=" + socket, "--namespace=k8s.io"}, args...)...)
}

// importImages imports every archive into containerd.
func (c *cluster) importImages(ctx context.Context, files []string) error {
	for _, f := range files {
		if _, err := c.ctr(ctx, "images", "import", f); err != nil {
			return fmt.Errorf("importing %s: %w", f, err)
		}
		logf("imported %s", f)
	}
	return nil
}

// hasImage checks that containerd holds ref.
func (c *cluster) hasImage(ctx context.Context, ref string) error {
	names, err := c.ctr(ctx, "images", "list", "--quiet")
	if err != nil {
		return err
	}
	for n := range strings.FieldsSeq(names) {
		if n == ref {
			return nil
		}
	}
	return fmt.Errorf("containerd holds no %s (it has %s)", ref, strings.Join(strings.Fields(names), ", "))
}

// waitUntil polls check every half second until it succeeds, the
// component named by log exits, or timeout passes.
func (c *cluster) waitUntil(ctx context.Context, what string, timeout time.Duration, log string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		last = check(attempt)
		cancelAttempt()
		if last == nil {
			return nil
		}
		for _, name := range processes {
			if _, err := os.Stat(c.pidfile(name)); err == nil && c.running(name) == 0 {
				return fmt.Errorf("%s exited while waiting for %s: see %s", name, what, c.path("logs", name+".log"))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %w); see %s", what, ctx.Err(), last, c.path("logs", log+".log"))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

var errNotYet = errors.New("not yet")
