package toolcatalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// catalogSeries counts the time series of the catalog's own metrics.
func catalogSeries() int {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "mcp_catalog_") {
			n += len(f.GetMetric())
		}
	}
	return n
}

func heapInUse() uint64 {
	var stats runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&stats)
	return stats.HeapInuse
}

var _ = Describe("Memory a caller can grow", func() {
	It("stays flat under thousands of made-up namespaces, collections and tokens", func() {
		ns := env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		collection(ns, "kit", "calc")
		Expect(post("/v1/namespaces/"+ns+"/toolcollections/kit/execute", `{"name":"mcp_calc_add","arguments":{"a":1,"b":1}}`).code).To(Equal(http.StatusOK))
		Expect(get("/v1/tools").code).To(Equal(http.StatusOK))

		series, heap := catalogSeries(), heapInUse()
		handlers := catalogUnderTest.mcp.size()
		const junk = 2000
		for i := range junk {
			Expect(get(fmt.Sprintf("/v1/tools?namespace=junk-%d", i)).code).To(Equal(http.StatusOK))
			Expect(get(fmt.Sprintf("/v1/namespaces/junk-%d/toolcollections/c/tools", i)).code).To(Equal(http.StatusNotFound))
			Expect(get(fmt.Sprintf("/v1/tools/search?q=add&namespace=junk-%d", i)).code).To(Equal(http.StatusOK))
			Expect(get(fmt.Sprintf("/v1/namespaces/%s/toolcollections/c%d/tools/search?q=add", ns, i)).code).To(Equal(http.StatusNotFound))
			Expect(post(fmt.Sprintf("/v1/namespaces/%s/toolcollections/c%d/mcp", ns, i), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
				"Content-Type", "application/json", "Accept", "application/json, text/event-stream").code).To(Equal(http.StatusNotFound))
			Expect(post(fmt.Sprintf("/v1/namespaces/%s/toolcollections/c%d/execute", ns, i), `{"name":"x"}`).code).To(Equal(http.StatusNotFound))
			Expect(post("/v1/execute", fmt.Sprintf(`{"name":"mcp_junk_%d"}`, i)).code).To(Equal(http.StatusNotFound))
		}
		for i := range 300 {
			req, err := http.NewRequest(http.MethodGet, authCatalog.URL+"/v1/tools", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", fmt.Sprintf("Bearer junk-token-%d", i))
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		}

		Expect(catalogSeries()).To(Equal(series), "a made-up name became a metric series")
		for _, k := range catalogUnderTest.menus.keys() {
			Expect(strings.HasPrefix(k.namespace, "junk-") || (k.kind == collectionView && k.namespace == ns && k.name != "kit")).To(BeFalse(),
				"a view or rendering of a menu that does not exist was kept: %+v", k)
		}
		Expect(catalogUnderTest.mcp.size()).To(Equal(handlers), "MCP handlers for collections that do not exist")
		grown := int64(heapInUse()) - int64(heap)
		GinkgoWriter.Printf("heap in use grew by %d KiB over %d junk requests\n", grown>>10, 7*junk+300)
		Expect(grown).To(BeNumerically("<", 32<<20))
	})

	It("remembers junk tokens apart, so they do not flush an idle real caller's answer", func() {
		env.InstallCatalogRoles()
		ns := env.Namespace()
		real := serviceAccountToken(ns, "steady")
		var reviewsOfReal atomic.Int64
		reviewer := interceptor.NewClient(mustWithWatch(), interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if tr, ok := obj.(*authenticationv1.TokenReview); ok && tr.Spec.Token == real {
					reviewsOfReal.Add(1)
				}
				return c.Create(ctx, obj, opts...)
			},
		})
		a := newAuthorizer(AuthKubernetes, reviewer, time.Hour, 50)
		ask := func(token string) error {
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			_, err := a.authenticate(ctx, req)
			return err
		}
		Expect(ask(real)).To(Succeed())
		for i := range 500 { // ten times the capacity, the real caller idle
			Expect(ask(fmt.Sprintf("junk-%d", i))).To(HaveOccurred())
		}
		Expect(ask(real)).To(Succeed())
		Expect(reviewsOfReal.Load()).To(BeEquivalentTo(1), "the real caller's answer was flushed")
		Expect(a.tokens.Len()).To(Equal(1))
		Expect(a.rejected.Len()).To(Equal(50), "junk is remembered, within its own bound")
	})

	It("decides again for a token of the same user with other extra (a scoped token)", func() {
		tokens := map[string]authenticationv1.UserInfo{
			"full":   {Username: "alice", UID: "1", Groups: []string{"devs"}},
			"scoped": {Username: "alice", UID: "1", Groups: []string{"devs"}, Extra: map[string]authenticationv1.ExtraValue{"scopes.example.com": {"read-only"}}},
		}
		var reviews atomic.Int64
		reviewer := interceptor.NewClient(mustWithWatch(), interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				switch o := obj.(type) {
				case *authenticationv1.TokenReview:
					o.Status.User, o.Status.Authenticated = tokens[o.Spec.Token]
				case *authorizationv1.SubjectAccessReview:
					// An authorizer that reads the scope, as webhook
					// authorizers and scoped-token schemes do.
					reviews.Add(1)
					_, scoped := o.Spec.Extra["scopes.example.com"]
					o.Status.Allowed = !scoped
				}
				return nil
			},
		})
		a := newAuthorizer(AuthKubernetes, reviewer, time.Hour, 50)
		decide := func(token string) bool {
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			who, err := a.authenticate(ctx, req)
			Expect(err).NotTo(HaveOccurred())
			allowed, err := a.allowed(ctx, who, verbExecute, toolCollectionsResource, "team-a", "kit")
			Expect(err).NotTo(HaveOccurred())
			return allowed
		}
		Expect(decide("full")).To(BeTrue())
		Expect(decide("scoped")).To(BeFalse(), "the scoped token was given the full token's decision")
		Expect(decide("full")).To(BeTrue())
		Expect(reviews.Load()).To(BeEquivalentTo(2), "one review per identity, then the cache")
	})

	It("answers 503 when the API server cannot check a token, and remembers nothing of it", func() {
		ns := env.Namespace()
		token := serviceAccountToken(ns, "unlucky")
		var failing atomic.Bool
		failing.Store(true)
		reviewer := interceptor.NewClient(mustWithWatch(), interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*authenticationv1.TokenReview); ok && failing.Load() {
					return apierrors.NewServiceUnavailable("injected")
				}
				return c.Create(ctx, obj, opts...)
			},
		})
		a := newAuthorizer(AuthKubernetes, reviewer, time.Hour, 50)
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		_, err := a.authenticate(ctx, req)
		var authErr *authError
		Expect(errors.As(err, &authErr)).To(BeTrue(), "%v", err)
		Expect(authErr.code).To(Equal(http.StatusServiceUnavailable))
		Expect(err.Error()).To(Equal("the token could not be checked with the API server; retry"))
		Expect(err.Error()).NotTo(ContainSubstring(token))

		failing.Store(false)
		who, err := a.authenticate(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "the failure was cached")
		Expect(who.username).To(Equal("system:serviceaccount:" + ns + ":unlucky"))
	})
})

var _ = Describe("What the manager reads", func() {
	It("reads the Secrets a server names directly, watches Secrets as metadata only, and follows a rotation", func() {
		ns := env.Namespace()
		up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		up.SetRequiredHeader("Authorization", "Bearer first")
		up.AddTools("private")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"}, StringData: map[string]string{"value": "Bearer first"}}
		Expect(env.Client.Create(ctx, secret)).To(Succeed())
		readyServer(ns, "guarded", up.URL(), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Headers = []mcpv1alpha1.HeaderSpec{{Name: "Authorization",
				ValueFrom: &mcpv1alpha1.HeaderValueSource{SecretKeyRef: mcpv1alpha1.KeyReference{Name: "token", Key: "value"}}}}
		})
		call := `{"name":"mcp_guarded_private"}`
		Expect(post("/v1/execute", call).code).To(Equal(http.StatusOK))

		reads := apiRequests.matching("GET /api/v1/namespaces/" + ns + "/secrets/token?")
		Expect(reads).NotTo(BeEmpty(), "the Secret is read from the API server")
		for _, r := range apiRequests.matching("/secrets?") {
			Expect(r).To(ContainSubstring("as=PartialObjectMetadata;"), "a list or watch of Secrets fetched their data: %s", r)
		}
		for _, r := range apiRequests.matching("/configmaps?") {
			Expect(r).To(ContainSubstring("as=PartialObjectMetadata;"), "a list or watch of ConfigMaps fetched their data: %s", r)
		}

		// A call costs no read while nothing changed...
		before := len(apiRequests.matching("/secrets/token?"))
		Expect(post("/v1/execute", call).code).To(Equal(http.StatusOK))
		Expect(apiRequests.matching("/secrets/token?")).To(HaveLen(before), "a call read the Secret again")

		// ...and the new value is used once the Secret changes.
		up.SetRequiredHeader("Authorization", "Bearer second")
		secret.StringData = map[string]string{"value": "Bearer second"}
		Expect(env.Client.Update(ctx, secret)).To(Succeed())
		Eventually(func() int { return post("/v1/execute", call).code }).Should(Equal(http.StatusOK))
	})
})

func mustWithWatch() client.WithWatch {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}
