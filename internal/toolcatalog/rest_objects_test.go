package toolcatalog

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

var _ = Describe("The objects routes", func() {
	var (
		ns, other string
		srv       *httptest.Server
	)
	BeforeEach(func() {
		env.InstallCatalogRoles()
		ns, other = env.Namespace(), env.Namespace()
		_, srv = newCatalog(Options{Auth: AuthKubernetes, AuthCacheTTL: time.Second, APIReader: suiteManager.GetAPIReader(),
			Console: ConsoleOptions{Enabled: true, TryIt: true}})
		calc := calcServer().URL()
		readyServer(ns, "calc", calc)
		readyServer(ns, "abacus", calc)
		readyServer(other, "elsewhere", calc)
		collection(ns, "kit", "calc")
	})

	// fetch GETs path with token (none when empty) and optional headers.
	fetch := func(path, token string, headers ...string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp, body
	}
	type listed struct {
		Items []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Namespace     string `json:"namespace"`
				Name          string `json:"name"`
				ManagedFields []any  `json:"managedFields"`
			} `json:"metadata"`
			Status map[string]any `json:"status"`
		} `json:"items"`
	}
	names := func(body []byte) []string {
		var l listed
		Expect(json.Unmarshal(body, &l)).To(Succeed(), string(body))
		out := []string{}
		for _, item := range l.Items {
			out = append(out, item.Metadata.Namespace+"/"+item.Metadata.Name)
		}
		return out
	}

	It("lists the servers a viewer may list or get, sorted, without their tools", func() {
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		resp, body := fetch("/v1/mcpservers", reader)
		Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
		// The RoleBinding lets the reader list in ns only: the server in
		// the other namespace is not shown.
		Expect(names(body)).To(Equal([]string{ns + "/abacus", ns + "/calc"}))
		var l listed
		Expect(json.Unmarshal(body, &l)).To(Succeed())
		for _, item := range l.Items {
			Expect(item.APIVersion).To(Equal(mcpv1alpha1.GroupVersion.String()))
			Expect(item.Kind).To(Equal("MCPServer"))
			Expect(item.Metadata.ManagedFields).To(BeEmpty())
			Expect(item.Status).NotTo(HaveKey("tools"))
			Expect(item.Status).To(HaveKeyWithValue("toolCount", BeNumerically(">", 0)))
		}

		// A viewer who may get one server, and list nothing, sees that one.
		one := serviceAccountToken(other, "one")
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "get-abacus"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcpservers"}, Verbs: []string{"get"}, ResourceNames: []string{"abacus"}}}}
		Expect(env.Client.Create(ctx, role)).To(Succeed())
		Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "get-abacus"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "get-abacus"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: other, Name: "one"}}})).To(Succeed())
		Eventually(func() []string {
			_, body := fetch("/v1/mcpservers?namespace="+ns, one)
			return names(body)
		}).Should(Equal([]string{ns + "/abacus"}))

		// A stranger sees an empty list, not an error: there is nothing of
		// theirs to see.
		stranger := serviceAccountToken(ns, "stranger")
		resp, body = fetch("/v1/mcpservers", stranger)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(names(body)).To(BeEmpty())
		// And no token at all is a 401.
		resp, _ = fetch("/v1/mcpservers", "")
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	})

	It("serves one object with its tools to who may get it, and tells nobody else whether it exists", func() {
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		resp, body := fetch("/v1/namespaces/"+ns+"/mcpservers/calc", reader)
		Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
		var server mcpv1alpha1.MCPServer
		Expect(json.Unmarshal(body, &server)).To(Succeed())
		Expect(server.Kind).To(Equal("MCPServer"))
		Expect(server.Name).To(Equal("calc"))
		Expect(server.ManagedFields).To(BeEmpty())
		Expect(server.Status.Tools).NotTo(BeEmpty())
		Expect(server.Status.Tools[0].InputSchema).NotTo(BeNil())

		resp, body = fetch("/v1/namespaces/"+ns+"/mcpservers/missing", reader)
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
		Expect(string(body)).To(ContainSubstring("mcpserver " + ns + "/missing not found"))

		stranger := serviceAccountToken(ns, "stranger")
		for _, name := range []string{"calc", "missing"} {
			resp, body = fetch("/v1/namespaces/"+ns+"/mcpservers/"+name, stranger)
			Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
			Expect(string(body)).To(ContainSubstring("lacks get on mcpservers/" + name))
		}

		resp, body = fetch("/v1/namespaces/"+ns+"/toolcollections/kit", reader)
		Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
		var tc mcpv1alpha1.ToolCollection
		Expect(json.Unmarshal(body, &tc)).To(Succeed())
		Expect(tc.Kind).To(Equal("ToolCollection"))
		Expect(tc.Status.Tools).NotTo(BeEmpty())
		resp, body = fetch("/v1/toolcollections?namespace="+ns, reader)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(names(body)).To(Equal([]string{ns + "/kit"}))

		// Lists leave the tools out of their copies, never out of the
		// cache: the objects read after a list still have them.
		_, _ = fetch("/v1/mcpservers?namespace="+ns, reader)
		_, body = fetch("/v1/namespaces/"+ns+"/mcpservers/calc", reader)
		Expect(json.Unmarshal(body, &server)).To(Succeed())
		Expect(server.Status.Tools).NotTo(BeEmpty())
		_, body = fetch("/v1/namespaces/"+ns+"/toolcollections/kit", reader)
		Expect(json.Unmarshal(body, &tc)).To(Succeed())
		Expect(tc.Status.Tools).NotTo(BeEmpty())
	})

	It("answers 304 while nothing changed and the new object once it did", func() {
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		path := "/v1/namespaces/" + ns + "/mcpservers/calc"
		resp, first := fetch(path, reader)
		tag := resp.Header.Get("ETag")
		Expect(tag).To(MatchRegexp(`^"[0-9a-f]{32}"$`))
		resp, body := fetch(path, reader, "If-None-Match", tag)
		Expect(resp.StatusCode).To(Equal(http.StatusNotModified))
		Expect(body).To(BeEmpty())

		patch := client.MergeFrom(&mcpv1alpha1.MCPServer{})
		Expect(env.Client.Patch(ctx, &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "calc",
			Labels: map[string]string{"team": "maths"}}}, patch)).To(Succeed())
		Eventually(func() string {
			resp, body = fetch(path, reader, "If-None-Match", tag)
			return resp.Status
		}).Should(Equal("200 OK"))
		Expect(resp.Header.Get("ETag")).NotTo(Equal(tag))
		Expect(string(body)).To(ContainSubstring(`"team":"maths"`))
		Expect(body).NotTo(Equal(first))
	})

	It("shows the object's own Events, newest first, and not a deleted namesake's", func() {
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		var server mcpv1alpha1.MCPServer
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "calc"}, &server)).To(Succeed())
		event := func(name, reason string, uid types.UID, at time.Time) {
			Expect(env.Client.Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
				InvolvedObject: corev1.ObjectReference{Kind: "MCPServer", Namespace: ns, Name: "calc", UID: uid, APIVersion: mcpv1alpha1.GroupVersion.String()},
				Type:           corev1.EventTypeWarning, Reason: reason, Message: "<b>" + reason + "</b>",
				FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 2,
				Source: corev1.EventSource{Component: "someone"},
			})).To(Succeed())
		}
		// The API server keeps timestamps to the second.
		future := time.Now().Add(time.Hour).Truncate(time.Second)
		event("newest", "Newest", server.UID, future)
		event("namesake", "Namesake", "another-uid", future.Add(time.Minute))

		type events struct {
			Items []eventItem `json:"items"`
		}
		var got events
		Eventually(func(g Gomega) []string {
			resp, body := fetch("/v1/namespaces/"+ns+"/mcpservers/calc/events", reader)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
			g.Expect(json.Unmarshal(body, &got)).To(Succeed())
			reasons := []string{}
			for _, e := range got.Items {
				reasons = append(reasons, e.Reason)
			}
			return reasons
		}).Should(And(HaveEach(Not(Equal("Namesake"))), ContainElements("Newest", "ToolsDiscovered")))
		// A slow first discovery may have left a Warning before it; the
		// newest is the one an hour from now.
		newest := got.Items[0]
		Expect(newest.LastTime).To(BeTemporally("==", future))
		newest.LastTime = time.Time{}
		Expect(newest).To(Equal(eventItem{Type: "Warning", Reason: "Newest", Message: "<b>Newest</b>", Count: 2, ReportingController: "someone"}))
		for _, e := range got.Items[1:] {
			Expect(e.ReportingController).To(Equal("mcpserver-controller"), "only the controller wrote the others")
		}

		stranger := serviceAccountToken(ns, "stranger")
		resp, _ := fetch("/v1/namespaces/"+ns+"/mcpservers/calc/events", stranger)
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
	})

	It("tells a viewer whether they may call a collection's tools", func() {
		caller := serviceAccountToken(ns, "caller")
		bind(ns, "caller", "catalog-caller", "caller")
		reader := serviceAccountToken(ns, "reader")
		bind(ns, "reader", "catalog-reader", "reader")
		stranger := serviceAccountToken(ns, "stranger")
		access := "/v1/namespaces/" + ns + "/toolcollections/kit/access"
		for token, want := range map[string]string{caller: `{"execute":true}`, reader: `{"execute":false}`} {
			resp, body := fetch(access, token)
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(strings.TrimSpace(string(body))).To(Equal(want))
		}
		resp, _ := fetch(access, stranger)
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
	})

	It("serves the console's files without a token, and nothing without the console", func() {
		resp, body := fetch("/ui/", "")
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.Header.Get("Content-Security-Policy")).To(ContainSubstring("script-src 'self'"))
		Expect(string(body)).To(ContainSubstring("<html"))
		resp, body = fetch("/ui/config.json", "")
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(string(body)).To(MatchJSON(`{"auth":"kubernetes","tryIt":true}`))

		_, off := newCatalog(Options{Auth: AuthKubernetes, APIReader: suiteManager.GetAPIReader()})
		offResp, err := http.Get(off.URL + "/ui/")
		Expect(err).NotTo(HaveOccurred())
		offResp.Body.Close()
		Expect(offResp.StatusCode).To(Equal(http.StatusNotFound))
		// Paths that only look like the console's are not exempt from
		// authentication: cleaned, they are routes that need a token.
		for path, want := range map[string]int{
			// Cleaned by the router: a redirect to the route, which needs
			// a token.
			"/ui/../v1/mcpservers": http.StatusTemporaryRedirect,
			// Escaped dots are a name in the console, which has no such file.
			"/ui/%2e%2e/v1/mcpservers": http.StatusNotFound,
			"/ui/..%2fv1/mcpservers":   http.StatusNotFound,
			// Not the console's at all: a token is asked for first.
			"/uix/../v1/mcpservers": http.StatusUnauthorized,
		} {
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			Expect(err).NotTo(HaveOccurred())
			req.URL.Opaque = path // sent as written, not cleaned by the client
			tricked, err := http.DefaultTransport.RoundTrip(req)
			Expect(err).NotTo(HaveOccurred())
			data, _ := io.ReadAll(tricked.Body)
			tricked.Body.Close()
			Expect(tricked.StatusCode).To(Equal(want), path)
			Expect(string(data)).NotTo(ContainSubstring(`"items"`), path)
			if want == http.StatusTemporaryRedirect {
				Expect(tricked.Header.Get("Location")).To(Equal("/v1/mcpservers"))
			}
		}

		// Everything else still needs a token.
		offResp, err = http.Get(off.URL + "/v1/mcpservers")
		Expect(err).NotTo(HaveOccurred())
		offResp.Body.Close()
		Expect(offResp.StatusCode).To(Equal(http.StatusUnauthorized))
	})
})
