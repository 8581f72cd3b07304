// Package bench measures the catalog against baselines measured in the same
// run on the same machine: a direct mcp-go call and a plain reverse proxy.
// `make bench` runs it and writes docs/benchmarks.md from the results.
package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

// rig is one control plane, manager and catalog shared by the benchmarks.
type rig struct {
	env     *testenv.Env
	catalog *httptest.Server
	// writes counts requests from the manager that change the API server.
	writes atomic.Int64
	// bigNamespace holds the 100 servers of the 10,000-tool menu.
	bigNamespace string
}

var (
	rigOnce sync.Once
	shared  *rig
	rigErr  error
)

// setup starts the rig once per test binary; benchmarks that need it call
// it, so that compiling the package in `make test` starts nothing.
func setup(b *testing.B) *rig {
	b.Helper()
	rigOnce.Do(func() {
		// The rig's own logs would drown the results; errors surface as
		// failed benchmarks.
		ctrl.SetLogger(logr.Discard())
		ctx := context.Background()
		r := &rig{}
		if r.env, rigErr = testenv.Start(ctx); rigErr != nil {
			return
		}
		counted := rest.CopyConfig(r.env.Config)
		counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				switch req.Method {
				case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
					if !isEventOrLease(req) {
						r.writes.Add(1)
					}
				}
				return rt.RoundTrip(req)
			})
		}
		counted.QPS, counted.Burst = 500, 1000
		mgr, err := ctrl.NewManager(counted, ctrl.Options{Scheme: r.env.Scheme, HealthProbeBindAddress: "0",
			Metrics: metricsserver.Options{BindAddress: "0"}})
		if err != nil {
			rigErr = err
			return
		}
		if rigErr = controller.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 32}); rigErr != nil {
			return
		}
		cat, err := toolcatalog.New(mgr.GetClient(), toolcatalog.Options{Log: ctrl.Log.WithName("catalog")})
		if err != nil {
			b.Fatal(err)
		}
		if rigErr = cat.WatchChanges(ctx, mgr.GetCache()); rigErr != nil {
			return
		}
		r.catalog = httptest.NewServer(cat.Handler())
		go func() { _ = mgr.Start(ctx) }()
		shared = r
	})
	if rigErr != nil {
		b.Fatal(rigErr)
	}
	return shared
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// isEventOrLease leaves out writes that are not status: Events are the
// record of real changes, and there is no leader election here.
func isEventOrLease(req *http.Request) bool {
	return strings.Contains(req.URL.Path, "/events") || strings.Contains(req.URL.Path, "/leases")
}
