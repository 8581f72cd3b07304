// Package bench measures the manager as a user deploys it: the manager
// binary, built by the benchmark, runs as a process of its own against a
// real control plane (envtest), and everything it is measured against runs
// in this process: the MCP servers (mcp-go), a bare httputil.ReverseProxy
// in front of them, and the clients. Every figure a goal reads is a ratio
// against a baseline measured in the same run, interleaved with it.
// `make bench` runs it and writes docs/benchmarks.md from the results.
package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolmesh/mcp-operator/internal/testenv"
)

// controlPlane is envtest's kube-apiserver and etcd, reached by the
// managers under test through a proxy that counts what they ask, so that
// a benchmark can tell how many writes a manager sent.
type controlPlane struct {
	env *testenv.Env
	// client talks to the API server directly (not counted), without
	// client-side throttling, as a fast kubectl would.
	client client.WithWatch
	// kubeconfig points at the counting proxy; managers use it.
	kubeconfig string
	proxy      *http.Server
	counts     requestCounts
}

// requestCounts counts requests through the proxy by verb and resource.
// Writes are those that change objects, leaving out only Leases, which
// leader election renews every few seconds by design.
type requestCounts struct {
	mu sync.Mutex
	// byKind is keyed by verb and resource, a bounded set.
	byKind map[string]int64
}

func (c *requestCounts) count(req *http.Request) {
	resource := resourceOf(req.URL.Path)
	verb := req.Method
	if req.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	c.mu.Lock()
	c.byKind[verb+" "+resource]++
	c.mu.Unlock()
}

func (c *requestCounts) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.byKind))
	for k, n := range c.byKind {
		out[k] = n
	}
	return out
}

// writesSince counts the writes since a snapshot and says what they were.
func (c *requestCounts) writesSince(before map[string]int64) (int64, string) {
	var total int64
	var parts []string
	for k, n := range c.snapshot() {
		verb, resource, _ := strings.Cut(k, " ")
		if !isWrite(verb) || resource == "leases" || n == before[k] {
			continue
		}
		total += n - before[k]
		parts = append(parts, fmt.Sprintf("%s=%d", k, n-before[k]))
	}
	sort.Strings(parts)
	return total, strings.Join(parts, ", ")
}

func isWrite(verb string) bool {
	switch verb {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// resourceOf is the resource (and subresource) an API path names:
// /apis/g/v/namespaces/ns/mcpservers/x/status is "mcpservers/status".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path // discovery
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return ""
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// startControlPlane starts envtest and the counting proxy in front of it.
func startControlPlane(dir string) (*controlPlane, error) {
	env, err := testenv.Start(context.Background())
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cp := &controlPlane{env: env, counts: requestCounts{byKind: map[string]int64{}}}
	direct := rest.CopyConfig(env.Config)
	direct.QPS, direct.Burst = -1, 0
	if cp.client, err = client.NewWithWatch(direct, client.Options{Scheme: env.Scheme}); err != nil {
		return nil, fmt.Errorf("making the benchmark's client: %w", err)
	}
	proxyURL, err := cp.startProxy()
	if err != nil {
		return nil, err
	}
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: proxyURL}
	kc.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	kc.CurrentContext = "bench"
	if err := clientcmd.WriteToFile(*kc, cp.kubeconfig); err != nil {
		return nil, fmt.Errorf("writing the managers' kubeconfig: %w", err)
	}
	return cp, nil
}

// startProxy serves plain HTTP on loopback and forwards to the API server
// with the admin's credentials; watches stream through unbuffered.
func (cp *controlPlane) startProxy() (string, error) {
	host := cp.env.Config.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	target, err := url.Parse(host)
	if err != nil {
		return "", fmt.Errorf("reading the API server's address: %w", err)
	}
	transport, err := rest.TransportFor(cp.env.Config)
	if err != nil {
		return "", fmt.Errorf("making the proxy's transport: %w", err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening for the API proxy: %w", err)
	}
	cp.proxy = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.counts.count(r)
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = cp.proxy.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

func (cp *controlPlane) stop() {
	_ = cp.proxy.Close()
	_ = cp.env.Stop()
}

var (
	planeOnce sync.Once
	plane     *controlPlane
	planeErr  error
	// workDir holds the manager binary, kubeconfig, logs and profiles of
	// one run of the package.
	workDir string
)

// sharedPlane starts the control plane once per test binary; TestMain
// stops it. Benchmarks that need it call it, so that compiling the
// package in `make test` starts nothing.
func sharedPlane() (*controlPlane, error) {
	planeOnce.Do(func() {
		if workDir, planeErr = os.MkdirTemp("", "mcp-bench-"); planeErr != nil {
			return
		}
		plane, planeErr = startControlPlane(workDir)
	})
	return plane, planeErr
}
