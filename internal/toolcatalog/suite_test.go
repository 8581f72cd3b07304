package toolcatalog

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/testenv"
)

// The suite runs the real controllers and the catalog in one manager
// against a real kube-apiserver, and talks to the catalog over HTTP.

const (
	suiteMaxRequestBytes = 64 << 10
	suiteMaxResultText   = 1 << 10
)

var (
	suiteLogs testenv.LockedBuffer
	env       *testenv.Env
	ctx       context.Context
	cancel    context.CancelFunc
	catalog   *httptest.Server
	// catalogUnderTest is the Catalog behind catalog, for looking inside.
	catalogUnderTest *Catalog
	// authCatalog is the same catalog with --catalog-auth=kubernetes and a
	// one-second decision cache.
	authCatalog          *httptest.Server
	authCatalogUnderTest *Catalog
	// suiteManager runs the controllers and feeds every catalog's cache.
	suiteManager ctrl.Manager
	// apiRequests records what the manager asks the API server.
	apiRequests = &requestLog{}
)

// newCatalog serves another catalog over the suite's manager, with its
// own options; it stops with the test.
func newCatalog(opts Options) (*Catalog, *httptest.Server) {
	if opts.Auth != "" && opts.Auth != AuthNone {
		opts.Reviewer = suiteManager.GetClient()
	}
	opts.Log = ctrl.Log.WithName("catalog-under-test")
	c, err := New(suiteManager.GetClient(), opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(c.WatchChanges(ctx, suiteManager.GetCache())).To(Succeed())
	srv := httptest.NewServer(c.Handler())
	DeferCleanup(srv.Close)
	return c, srv
}

// requestLog records the method, path, query and Accept header of API
// requests.
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" accept="+r.Header.Get("Accept"))
		l.mu.Unlock()
		return next.RoundTrip(r)
	})
}

func (l *requestLog) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.seen {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

const suiteAuthCacheTTL = time.Second

func TestCatalog(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Catalog Suite")
}

var _ = BeforeSuite(func() {
	// Every log line also goes to suiteLogs, which the secrets test reads.
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, &suiteLogs)), zap.UseDevMode(true), zap.Level(zapcore.Level(-2))))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())

	// Every request the manager makes is recorded, for the test that the
	// manager never lists or watches Secret data.
	env.Config.Wrap(apiRequests.wrap)
	mgr, err := env.NewManager()
	Expect(err).NotTo(HaveOccurred())
	suiteManager = mgr
	Expect(controller.SetupWithManager(ctx, mgr, controller.Options{})).To(Succeed())

	c, err := New(mgr.GetClient(), Options{
		MaxRequestBytes: suiteMaxRequestBytes,
		MaxResultText:   suiteMaxResultText,
		Log:             ctrl.Log.WithName("catalog"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	catalog = httptest.NewServer(c.Handler())
	catalogUnderTest = c

	guarded, err := New(mgr.GetClient(), Options{
		Auth:         AuthKubernetes,
		AuthCacheTTL: suiteAuthCacheTTL,
		Reviewer:     mgr.GetClient(),
		Log:          ctrl.Log.WithName("catalog-auth"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(guarded.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	authCatalog = httptest.NewServer(guarded.Handler())
	authCatalogUnderTest = guarded

	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	for _, s := range []*httptest.Server{catalog, authCatalog} {
		if s != nil {
			s.Close()
		}
	}
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
