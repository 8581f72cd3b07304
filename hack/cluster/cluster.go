package main

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

// The cluster's addresses. One cluster runs on a machine at a time: the
// bridge, its address and the ports are fixed, so that down finds what an
// up in a crashed process made.
const (
	nodeName    = "mcp-e2e"
	networkName = "mcp-e2e"
	bridgeName  = "mcpe2e0"
	// nodeIP is the bridge's address: the pods' gateway, the node's
	// InternalIP, and where the API server and the kubelet listen, so that
	// pods reach them (a pod's 127.0.0.1 is its own).
	nodeIP      = "10.244.0.1"
	podSubnet   = "10.244.0.0/24"
	clusterCIDR = "10.244.0.0/16"
	serviceCIDR = "10.96.0.0/16"
	// kubernetesIP is the kubernetes Service's address, the first of
	// serviceCIDR; dnsIP is kube-dns's.
	kubernetesIP  = "10.96.0.1"
	dnsIP         = "10.96.0.10"
	apiserverPort = 6443
	// etcd's ports are below the ephemeral range, where envtest's control
	// planes pick theirs.
	etcdClientPort = 12379
	etcdPeerPort   = 12380
	// pauseImage is the sandbox image containerd asks for (its default);
	// make image writes it.
	pauseImage = "registry.k8s.io/pause:3.6"
)

// processes are what up starts, in order, each with a pidfile.
var processes = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet", "kube-proxy"}

// cluster is one cluster's folder: state, configuration, logs, pidfiles.
type cluster struct {
	cache, dir string
}

func newCluster(cache, dir string) (*cluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if abs == "/" || len(abs) < 8 {
		return nil, fmt.Errorf("refusing %q as the cluster's folder: down removes it", dir)
	}
	return &cluster{cache: cache, dir: abs}, nil
}

func (c *cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.dir}, parts...)...)
}

func (c *cluster) kubeconfig() string { return c.path("admin.kubeconfig") }

func (c *cluster) apiserverURL() string { return fmt.Sprintf("https://%s:%d", nodeIP, apiserverPort) }

//go:embed config
var configs embed.FS

// templateData is what the files in config/ are filled in with.
type templateData struct {
	Dir, NodeName, NodeIP, Bridge, Network, PodSubnet, ClusterCIDR, DNSIP string
	PauseImage, CoreDNSImage                                              string
	Server, User                                                          string
}

func (c *cluster) data() templateData {
	return templateData{
		Dir: c.dir, NodeName: nodeName, NodeIP: nodeIP, Bridge: bridgeName, Network: networkName,
		PodSubnet: podSubnet, ClusterCIDR: clusterCIDR, DNSIP: dnsIP,
		PauseImage: pauseImage, CoreDNSImage: corednsImage, Server: c.apiserverURL(),
	}
}

// render fills in config/<name> and writes it to dest.
func (c *cluster) render(name, dest string, data templateData) error {
	raw, err := configs.ReadFile("config/" + name)
	if err != nil {
		return err
	}
	tmpl, err := template.New(name).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		return fmt.Errorf("rendering %s: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dest, out.Bytes(), 0o600)
}
