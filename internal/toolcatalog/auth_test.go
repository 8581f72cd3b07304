package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// serviceAccountToken creates a ServiceAccount and returns a token for it
// from the TokenRequest API, as a pod would get.
func serviceAccountToken(ns, name string) string {
	Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	clientset, err := kubernetes.NewForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	token, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return token.Status.Token
}

func bind(ns, name, role, serviceAccount string) *rbacv1.RoleBinding {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: serviceAccount}}}
	Expect(env.Client.Create(ctx, rb)).To(Succeed())
	return rb
}

var _ = Describe("Kubernetes authorization", func() {
	var ns string
	menuPath := func() string { return "/v1/namespaces/" + ns + "/toolcollections/kit/tools" }
	executePath := func() string { return "/v1/namespaces/" + ns + "/toolcollections/kit/execute" }
	const addCall = `{"name":"mcp_calc_add","arguments":{"a":1,"b":2}}`

	BeforeEach(func() {
		env.InstallCatalogRoles()
		ns = env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		collection(ns, "kit", "calc")
	})

	do := func(method, path, body, token string) (int, string) {
		req, err := http.NewRequest(method, authCatalog.URL+path, strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var payload map[string]any
		Expect(json.NewDecoder(resp.Body).Decode(&payload)).To(Succeed())
		if msg, ok := payload["error"].(string); ok {
			return resp.StatusCode, msg
		}
		raw, _ := json.Marshal(payload)
		return resp.StatusCode, string(raw)
	}

	It("asks for a token and refuses a bad one, without repeating it", func() {
		code, msg := do(http.MethodGet, menuPath(), "", "")
		Expect(code).To(Equal(http.StatusUnauthorized))
		Expect(msg).To(ContainSubstring("a bearer token is required"))
		code, msg = do(http.MethodGet, menuPath(), "", "not-a-real-token-marker")
		Expect(code).To(Equal(http.StatusUnauthorized))
		Expect(msg).To(Equal("the bearer token is not valid"))
	})

	It("lets a caller read and call, a reader only read, and nobody else anything", func() {
		caller := serviceAccountToken(ns, "caller")
		bind(ns, "caller", "catalog-caller", "caller")
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		stranger := serviceAccountToken(ns, "stranger")

		code, body := do(http.MethodGet, menuPath(), "", caller)
		Expect(code).To(Equal(http.StatusOK), body)
		code, body = do(http.MethodPost, executePath(), addCall, caller)
		Expect(code).To(Equal(http.StatusOK), body)
		Expect(body).To(ContainSubstring(`"output":"3"`))

		code, _ = do(http.MethodGet, menuPath(), "", reader)
		Expect(code).To(Equal(http.StatusOK))
		code, msg := do(http.MethodPost, executePath(), addCall, reader)
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(msg).To(Equal("forbidden: system:serviceaccount:" + ns + ":reader lacks execute on toolcollections/kit in namespace " + ns))

		code, msg = do(http.MethodGet, menuPath(), "", stranger)
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(msg).To(ContainSubstring("lacks get on toolcollections/kit in namespace " + ns))
		Expect(msg).NotTo(ContainSubstring(stranger))
	})

	It("shows the global menu filtered to the servers a caller may see", func() {
		other := env.Namespace()
		otherServer := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		otherServer.AddTools("hidden_tool")
		readyServer(other, "secret", otherServer.URL())

		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		code, body := do(http.MethodGet, "/v1/tools", "", reader)
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(ContainSubstring("mcp_calc_add"))
		Expect(body).NotTo(ContainSubstring("mcp_secret_hidden_tool"))

		// Calls through the global endpoint need execute on the server.
		code, msg := do(http.MethodPost, "/v1/execute", addCall, reader)
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(msg).To(ContainSubstring("lacks execute on mcpservers/calc"))

		// The MCP endpoint applies the same filter.
		s := connectMCP(authCatalog.URL+"/mcp", map[string]string{"Authorization": "Bearer " + reader}, nil)
		listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, t := range listed.Tools {
			names = append(names, t.Name)
		}
		Expect(names).To(ContainElement("mcp_calc_add"))
		Expect(names).NotTo(ContainElement("mcp_secret_hidden_tool"))

		By("each caller is answered its own pages, and none is kept for the next")
		h := authCatalogUnderTest.mcp.handlerFor(viewKey{kind: globalView})
		h.mu.Lock()
		Expect(h.listed.pages).To(BeEmpty())
		h.mu.Unlock()
		insider := serviceAccountToken(other, "insider")
		bind(other, "insider", "catalog-reader", "insider")
		s = connectMCP(authCatalog.URL+"/mcp", map[string]string{"Authorization": "Bearer " + insider}, nil)
		listed, err = s.ListTools(ctx, mcpclient.DefaultLimits)
		Expect(err).NotTo(HaveOccurred())
		names = nil
		for _, t := range listed.Tools {
			names = append(names, t.Name)
		}
		Expect(names).To(ConsistOf("mcp_secret_hidden_tool"))
	})

	It("says why a server is not Ready only to callers who may call it", func() {
		other := env.Namespace()
		away := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		away.AddTools("gone_tool")
		srv := readyServer(other, "away", away.URL())
		away.Stop() // its held session ends, and the controller notices at once
		Eventually(env.ReadyOf(srv)).Should(HavePrefix("False/"))
		call := `{"name":"mcp_away_gone_tool"}`

		caller := serviceAccountToken(other, "caller")
		bind(other, "caller", "catalog-caller", "caller")
		Eventually(func() string { _, msg := do(http.MethodPost, "/v1/execute", call, caller); return msg }).
			Should(ContainSubstring("MCPServer " + other + "/away is not Ready ("))

		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		code, msg := do(http.MethodPost, "/v1/execute", call, reader)
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(msg).To(ContainSubstring("lacks execute on mcpservers/away"))
		Expect(msg).NotTo(ContainSubstring("Ready"))
	})

	It("stops allowing soon after the RoleBinding is removed", func() {
		caller := serviceAccountToken(ns, "caller")
		rb := bind(ns, "caller", "catalog-caller", "caller")
		Eventually(func() int { code, _ := do(http.MethodPost, executePath(), addCall, caller); return code }).Should(Equal(http.StatusOK))

		// Decisions are kept for the cache TTL (a second here); after it the
		// API server's answer, now a refusal, is asked for again.
		Expect(env.Client.Delete(ctx, rb)).To(Succeed())
		Eventually(func() int { code, _ := do(http.MethodPost, executePath(), addCall, caller); return code }).
			Should(Equal(http.StatusForbidden))
	})

	It("lets the other requests of a shared review have its answer when the one that started it leaves", func() {
		token := serviceAccountToken(ns, "leaver")
		gate := &gatedReviews{Client: env.Client, entered: make(chan struct{}, 1), release: make(chan struct{})}
		authz := newAuthorizer(AuthKubernetes, gate, time.Minute, 100)
		request := func() *http.Request {
			r, err := http.NewRequest(http.MethodGet, "/", nil)
			Expect(err).NotTo(HaveOccurred())
			r.Header.Set("Authorization", "Bearer "+token)
			return r
		}
		leaving, leave := context.WithCancel(ctx)
		first := make(chan error, 1)
		go func() {
			_, err := authz.authenticate(leaving, request())
			first <- err
		}()
		Eventually(gate.entered).Should(Receive(), "the first request's review reached the API server")
		second := make(chan error, 1)
		go func() {
			_, err := authz.authenticate(ctx, request())
			second <- err
		}()
		leave()
		var err error
		Eventually(first).Should(Receive(&err))
		Expect(err).To(MatchError(ContainSubstring("the request ended")), "the request that left")
		close(gate.release)
		Eventually(second).Should(Receive(&err))
		Expect(err).NotTo(HaveOccurred(), "the request still waiting got the shared review's answer")
		Expect(gate.reviews.Load()).To(BeEquivalentTo(1))
	})

	It("sends one review for a burst of first requests with one token or one question", func() {
		token := serviceAccountToken(ns, "burst")
		bind(ns, "burst", "catalog-caller", "burst")
		reviews := &heldReviews{Client: env.Client, second: make(chan struct{})}
		authz := newAuthorizer(AuthKubernetes, reviews, time.Minute, 100)
		request, err := http.NewRequest(http.MethodGet, "/", nil)
		Expect(err).NotTo(HaveOccurred())
		request.Header.Set("Authorization", "Bearer "+token)

		const burst = 16
		run := func(check func() error) []error {
			errs := make(chan error, burst)
			for range burst {
				go func() { errs <- check() }()
			}
			var all []error
			for range burst {
				all = append(all, <-errs)
			}
			return all
		}
		for _, err := range run(func() error {
			_, err := authz.authenticate(ctx, request)
			return err
		}) {
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(reviews.tokenReviews.Load()).To(BeEquivalentTo(1), "TokenReviews sent for one token")
		who, err := authz.authenticate(ctx, request) // from the cache
		Expect(err).NotTo(HaveOccurred())
		Expect(reviews.tokenReviews.Load()).To(BeEquivalentTo(1))
		Expect(who.username).To(Equal("system:serviceaccount:" + ns + ":burst"))

		reviews.second = make(chan struct{})
		for _, err := range run(func() error {
			ok, err := authz.allowed(ctx, who, verbExecute, toolCollectionsResource, ns, "kit")
			if err == nil && !ok {
				err = errors.New("refused")
			}
			return err
		}) {
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(reviews.accessReviews.Load()).To(BeEquivalentTo(1), "SubjectAccessReviews sent for one question")
	})

	It("lets an agent call a collection over MCP with its ServiceAccount token", func() {
		caller := serviceAccountToken(ns, "agent")
		bind(ns, "agent", "catalog-caller", "agent")
		callCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := testmcp.Inspector(callCtx, authCatalog.URL+"/v1/namespaces/"+ns+"/toolcollections/kit/mcp",
			"--transport", "http", "--header", "Authorization: Bearer "+caller,
			"--method", "tools/call", "--tool-name", "mcp_calc_add", "--tool-arg", "a=40", "--tool-arg", "b=2")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"text": "42"`))
	})
})

// heldReviews passes reviews to the API server and counts them. It holds
// the first review of each kind until a second one arrives (the requests
// were not shared) or two seconds pass, so that a burst's requests all
// come while the first is still under way.
type heldReviews struct {
	client.Client
	tokenReviews, accessReviews atomic.Int32
	second                      chan struct{}
}

func (h *heldReviews) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	switch obj.(type) {
	case *authenticationv1.TokenReview:
		h.count(&h.tokenReviews)
	case *authorizationv1.SubjectAccessReview:
		h.count(&h.accessReviews)
	}
	return h.Client.Create(ctx, obj, opts...)
}

func (h *heldReviews) count(n *atomic.Int32) {
	switch n.Add(1) {
	case 1:
		select {
		case <-h.second:
		case <-time.After(2 * time.Second):
		}
	case 2:
		close(h.second)
	}
}

// gatedReviews passes reviews to the API server, each once release is
// closed, and says on entered when one arrives.
type gatedReviews struct {
	client.Client
	reviews atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gatedReviews) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	g.reviews.Add(1)
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
	return g.Client.Create(ctx, obj, opts...)
}
