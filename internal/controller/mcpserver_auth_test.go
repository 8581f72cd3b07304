package controller

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// fakeTokenEndpoint is an OAuth token endpoint on 127.0.0.1 that issues
// accessToken to the client with clientSecret, or refuses with refuse.
type fakeTokenEndpoint struct {
	srv          *httptest.Server
	clientSecret string
	accessToken  string
	mu           sync.Mutex
	refuse       string
	grants       []string
}

func startTokenEndpoint(clientSecret, accessToken string) *fakeTokenEndpoint {
	e := &fakeTokenEndpoint{clientSecret: clientSecret, accessToken: accessToken}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := func(status int, body map[string]any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(body)
		}
		_ = r.ParseForm()
		e.mu.Lock()
		e.grants = append(e.grants, r.PostForm.Get("grant_type"))
		refuse := e.refuse
		e.mu.Unlock()
		id, secret, _ := r.BasicAuth()
		secret, _ = url.QueryUnescape(secret)
		switch {
		case refuse != "":
			answer(http.StatusUnauthorized, map[string]any{"error": refuse, "error_description": "client secret " + secret + " is not known"})
		case id != "mcp-operator" || secret != e.clientSecret:
			answer(http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
		default:
			answer(http.StatusOK, map[string]any{"access_token": e.accessToken, "token_type": "Bearer", "expires_in": 3600})
		}
	}))
	DeferCleanup(e.srv.Close)
	return e
}

func (e *fakeTokenEndpoint) refuseWith(code string) {
	e.mu.Lock()
	e.refuse = code
	e.mu.Unlock()
}

func (e *fakeTokenEndpoint) grantsAsked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.grants...)
}

func oauthSecret(ns, value string) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp"},
		StringData: map[string]string{"client-secret": value}})).To(Succeed())
}

func oauthClientOf(e *fakeTokenEndpoint) mcpv1alpha1.OAuth2Client {
	return mcpv1alpha1.OAuth2Client{TokenURL: e.srv.URL + "/oauth/token", ClientID: "mcp-operator",
		ClientSecretRef: mcpv1alpha1.KeyReference{Name: "idp", Key: "client-secret"}, Scopes: []string{"tools.read"}}
}

// noMarkers checks that nothing secret reached the server's status or
// Events.
func noMarkers(srv *mcpv1alpha1.MCPServer) {
	GinkgoHelper()
	status, err := json.Marshal(fetch(srv).Status)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(status)).NotTo(ContainSubstring("marker-"), "a secret reached status")
	Expect(strings.Join(eventsOf(srv)(), "\n")).NotTo(ContainSubstring("marker-"), "a secret reached an Event")
}

var _ = Describe("MCPServer spec.auth", func() {
	It("discovers a server that requires a token from the client credentials grant", func() {
		ns := newNamespace()
		idp := startTokenEndpoint("marker-client-secret", "marker-access-token")
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
		mcp.SetRequiredHeader("Authorization", "Bearer marker-access-token")
		mcp.AddTools("private")
		oauthSecret(ns, "marker-client-secret")
		client := oauthClientOf(idp)
		srv := createServer(ns, "authed", mcp.URL(), every(time.Hour), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Auth = &mcpv1alpha1.UpstreamAuth{OAuth2ClientCredentials: &client}
		})

		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		Expect(toolNames(srv)).To(Equal(exposed("authed", "private")))
		Expect(fetch(srv).Status.ServerInfo.ListChanged).To(BeTrue(), "the listening stream is authorized too")
		Expect(idp.grantsAsked()).To(ContainElement("client_credentials"))
		// The held session hears list changes on its authorized stream.
		mcp.AddTools("added")
		Eventually(func() []string { return toolNames(srv) }).Should(Equal(exposed("authed", "added", "private")))
		noMarkers(srv)
	})

	It("discovers a server whose tokens are exchanged with the exchanging client's own token", func() {
		ns := newNamespace()
		idp := startTokenEndpoint("marker-client-secret", "marker-service-token")
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.SetRequiredHeader("Authorization", "Bearer marker-service-token")
		mcp.AddTools("issues")
		oauthSecret(ns, "marker-client-secret")
		srv := createServer(ns, "exchanged", mcp.URL(), every(time.Hour), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Auth = &mcpv1alpha1.UpstreamAuth{TokenExchange: &mcpv1alpha1.TokenExchange{OAuth2Client: oauthClientOf(idp)}}
		})

		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		Expect(idp.grantsAsked()).To(HaveEach("client_credentials"), "discovery has no caller to exchange for")
		noMarkers(srv)
	})

	It("says AuthUnavailable with the OAuth code when the token endpoint refuses, and recovers", func() {
		ns := newNamespace()
		idp := startTokenEndpoint("marker-client-secret", "marker-access-token")
		idp.refuseWith("invalid_client")
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.SetRequiredHeader("Authorization", "Bearer marker-access-token")
		mcp.AddTools("private")
		oauthSecret(ns, "marker-client-secret")
		client := oauthClientOf(idp)
		srv := createServer(ns, "refused", mcp.URL(), every(10*time.Second), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Auth = &mcpv1alpha1.UpstreamAuth{OAuth2ClientCredentials: &client}
		})

		Eventually(readyOf(srv)).Should(Equal("False/AuthUnavailable"))
		failing := fetch(srv)
		ready := meta.FindStatusCondition(failing.Status.Conditions, mcpv1alpha1.ConditionReady)
		Expect(ready.Message).To(ContainSubstring("invalid_client"))
		Expect(ready.Message).To(ContainSubstring("HTTP 401"))
		Expect(meta.IsStatusConditionTrue(failing.Status.Conditions, mcpv1alpha1.ConditionStalled)).To(BeTrue())
		Eventually(eventsOf(srv)).Should(containsSubstring("AuthUnavailable: "))
		noMarkers(srv)

		// Retried with backoff: once the token endpoint issues, discovery
		// resumes without a spec change.
		idp.refuseWith("")
		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
	})
})
