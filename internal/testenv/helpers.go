package testenv

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// Namespace creates a namespace of the test's own.
func (e *Env) Namespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	Expect(e.Client.Create(e.Ctx, ns)).To(Succeed())
	return ns.Name
}

// StartMCP starts an in-process MCP server, stopped when the test ends.
func StartMCP(opts testmcp.Options) *testmcp.Server {
	s, err := testmcp.Start(opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(s.Stop)
	return s
}

// CreateServer creates an MCPServer at url, deleted when the test ends;
// mutate adjusts it first.
func (e *Env) CreateServer(ns, name, url string, mutate ...func(*mcpv1alpha1.MCPServer)) *mcpv1alpha1.MCPServer {
	srv := &mcpv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       mcpv1alpha1.MCPServerSpec{URL: url},
	}
	for _, m := range mutate {
		m(srv)
	}
	Expect(e.Client.Create(e.Ctx, srv)).To(Succeed())
	// envtest runs no namespace controller: delete the object itself so its
	// server, stopped by then, is not retried for the rest of the suite.
	DeferCleanup(func() { Expect(client.IgnoreNotFound(e.Client.Delete(e.Ctx, srv))).To(Succeed()) })
	return srv
}

// Every sets spec.refreshInterval.
func Every(d time.Duration) func(*mcpv1alpha1.MCPServer) {
	return func(s *mcpv1alpha1.MCPServer) { s.Spec.RefreshInterval = &metav1.Duration{Duration: d} }
}

// Fetch reads the current MCPServer.
func (e *Env) Fetch(srv *mcpv1alpha1.MCPServer) *mcpv1alpha1.MCPServer {
	var got mcpv1alpha1.MCPServer
	Expect(e.Client.Get(e.Ctx, client.ObjectKeyFromObject(srv), &got)).To(Succeed())
	return &got
}

// ReadyOf polls "Status/Reason" of the Ready condition when it speaks for
// the current generation, and "none" otherwise.
func (e *Env) ReadyOf(srv *mcpv1alpha1.MCPServer) func() string {
	return func() string {
		got := e.Fetch(srv)
		c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != got.Generation {
			return "none"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// ServiceAccountToken creates a ServiceAccount in ns, deleted when the
// test ends, and gets it a token valid for ttl from the TokenRequest API,
// as a pod would.
func (e *Env) ServiceAccountToken(ns, name string, ttl time.Duration) string {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(e.Client.Create(e.Ctx, sa)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(e.Client.Delete(e.Ctx, sa))).To(Succeed()) })
	clientset, err := kubernetes.NewForConfig(e.Config)
	Expect(err).NotTo(HaveOccurred())
	seconds := int64(ttl.Seconds())
	issued, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(e.Ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return issued.Status.Token
}

// RunManager starts mgr in the background until the spec or suite that
// calls it ends: the cleanup stops it and waits for it to return. Called
// after Start, its cleanup runs before the control plane's Stop.
func RunManager(ctx context.Context, mgr ctrl.Manager) {
	ctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(stopped)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() { stop(); <-stopped })
}

// Rewriting fronts backend (an MCP server's URL) with a proxy that
// replaces old with new in every answer, stopped when the test ends: how
// tests serve a definition the test libraries would not build, or refuse
// to serve. It answers the proxied URL, with backend's path.
func Rewriting(backend, old, new string) string {
	GinkgoHelper()
	target, err := url.Parse(backend)
	Expect(err).NotTo(HaveOccurred())
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		body = bytes.ReplaceAll(body, []byte(old), []byte(new))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	DeferCleanup(srv.Close)
	return srv.URL + target.Path
}
