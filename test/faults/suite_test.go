// Package faults injects faults into the operator's surroundings (MCP
// servers that hang, reset, lie or flood; an API server that goes away;
// managers killed mid-work; writers that race) and checks that it keeps
// working and loses nothing. Everything is real: kube-apiserver and etcd,
// mcp-go servers over loopback HTTP, the manager binary as a process.
package faults

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck // so does Gomega's
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/toolmesh/mcp-operator/internal/cachepolicy"
	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

var (
	ctx    context.Context
	cancel context.CancelFunc
	// env is the control plane; tests reach it directly, the in-process
	// manager through apiProxy, which can cut it off.
	env      *testenv.Env
	apiProxy *tcpProxy
	// catalog serves the in-process manager's catalog over HTTP.
	catalog *httptest.Server
	// managerDone is closed when the in-process manager has stopped.
	managerDone chan struct{}
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Fault injection suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())

	apiServer, err := url.Parse(env.Config.Host)
	Expect(err).NotTo(HaveOccurred())
	apiProxy, err = newTCPProxy(apiServer.Host)
	Expect(err).NotTo(HaveOccurred())
	viaProxy := rest.CopyConfig(env.Config)
	viaProxy.Host = "https://" + apiProxy.addr()

	opts := ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	cachepolicy.Apply(&opts)
	mgr, err := ctrl.NewManager(viaProxy, opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(controller.SetupWithManager(ctx, mgr, controller.Options{})).To(Succeed())
	c, err := toolcatalog.New(mgr.GetClient(), toolcatalog.Options{Log: ctrl.Log.WithName("catalog")})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	catalog = httptest.NewServer(c.Handler())
	managerDone = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(managerDone)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if catalog != nil {
		catalog.Close()
	}
	if cancel != nil {
		cancel()
	}
	if managerDone != nil {
		Eventually(managerDone).Should(BeClosed())
	}
	if apiProxy != nil {
		apiProxy.close()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// answer is one HTTP answer from a catalog.
type answer struct {
	code int
	body string
}

// callers talk to catalogs without keeping connections, so connection
// counts and goroutines are the catalog's own.
var callers = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}

func post(base, path, body string) answer {
	return read(callers.Post(base+path, "application/json", strings.NewReader(body)))
}

func get(base, path string) answer { return read(callers.Get(base + path)) }

// read turns a response, or the failure to get one (code -1), into an
// answer.
func read(resp *http.Response, err error) answer {
	if err != nil {
		return answer{code: -1, body: err.Error()}
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(b)}
}

// repeat runs f every interval until the returned stop is called; stop
// returns once f has run for the last time, so what f wrote is then safe
// to read.
func repeat(interval time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case <-time.After(interval):
			}
			f()
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// execute calls a tool through the in-process catalog's global menu.
func execute(tool, arguments string) answer {
	return post(catalog.URL, "/v1/execute", `{"name":"`+tool+`","arguments":`+arguments+`}`)
}
