package identity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

const (
	// upstreamPath is the upstream's MCP endpoint; upstreamURL (reserved
	// in suite_test.go) ends with it.
	upstreamPath = "/mcp"
	// exchangerID is the catalog's client at the provider for token
	// exchange: client credentials and exchanges for the upstream only.
	exchangerID = "catalog-exchanger"
	// serviceID is the upstream's own identity (oauth2ClientCredentials).
	serviceID = "tools-service"
	// refusedAudience is an audience the exchanger may not exchange for.
	refusedAudience = "https://not-allowed.example/mcp"
	// whoamiTool answers the sub of the token it was called with.
	whoamiTool = "whoami"

	exchangerSecretName = "exchanger-oauth"
	serviceSecretName   = "tools-oauth"
	wrongSecretName     = "tools-oauth-wrong"
	secretKey           = "client-secret"
	caConfigMapName     = "idp-ca"
	caKey               = "ca.crt"

	// upstreamCollection serves every server labelled upstreamLabel.
	upstreamCollection = "upstreams"
	upstreamLabel      = "identity.toolmesh.io/upstream"

	// slowTimeout is spec.timeout of the slow server; slowDelay how long
	// the provider holds requests while it is slow; slowBound the most a
	// call may take then (spec.timeout and a loaded machine's slack, well
	// short of the delay).
	slowTimeout = 2 * time.Second
	slowDelay   = 45 * time.Second
	slowBound   = 20 * time.Second
	// reuseFor is how long the expiry spec's exchanged tokens are reused.
	reuseFor = 10 * time.Second
)

// upstreamRequest is one request the upstream accepted: the claims of its
// token that say who (never the token itself) and what it asked.
type upstreamRequest struct {
	Method, RPC, Session string
	// Sub is the token's subject; Act the sub of its act claim, the client
	// that acts for Sub (token exchange), "" for none.
	Sub, Act string
}

// upstream is an MCP server (mcp-go, Streamable HTTP, stateful, MCP
// 2025-11-25, which has sessions) that
// accepts only a JWT of the suite's provider whose aud names its URL, as
// an MCP server implementing the authorization spec does. It records who
// called, binds each session to the subject that first used it, and has
// one tool, whoami.
type upstream struct {
	URL      string
	verifier *oidc.IDTokenVerifier

	mu       sync.Mutex
	accepted []upstreamRequest
	refused  []string
	tokens   []string
	sessions map[string]string // Mcp-Session-Id → sub
	crossed  []string
}

type subjectKey struct{}

// startUpstream serves the upstream on the address reserved for it until
// the calling container ends.
func startUpstream() *upstream {
	issuer, err := oidc.NewProvider(oidc.ClientContext(ctx, provider.HTTPClient()), provider.Issuer)
	Expect(err).NotTo(HaveOccurred())
	u := &upstream{URL: upstreamURL, verifier: issuer.Verifier(&oidc.Config{ClientID: upstreamURL}), sessions: map[string]string{}}

	s := server.NewMCPServer("identity-upstream", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool(whoamiTool, mcp.WithDescription("Says whom the token of this call names")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sub, _ := ctx.Value(subjectKey{}).(string)
			if sub == "" {
				return mcp.NewToolResultError("the call's context names no subject"), nil
			}
			return mcp.NewToolResultText(sub), nil
		})
	// A session-oriented revision only: the server binds each session to
	// the subject that opened it, as servers holding per-user state do,
	// so the catalog must keep one session per caller.
	streamable := server.NewStreamableHTTPServer(s, server.WithEndpointPath(upstreamPath), server.WithStateful(true),
		server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			return context.WithValue(ctx, subjectKey{}, r.Context().Value(subjectKey{}))
		}))
	mux := http.NewServeMux()
	mux.Handle(upstreamPath, u.authenticate(streamable))
	srv := &httptest.Server{Listener: upstreamLn, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	srv.Start()
	DeferCleanup(func() {
		// The catalogs' sessions hold listening streams open.
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

// authenticate lets through only requests with a valid token for u.
func (u *upstream) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "bearer") || raw == "" {
			u.refuse(w, r, "no bearer token")
			return
		}
		used.add(raw)
		tok, err := u.verifier.Verify(r.Context(), raw)
		if err != nil {
			u.refuse(w, r, "invalid token: "+err.Error())
			return
		}
		var claims struct {
			Act struct {
				Sub string `json:"sub"`
			} `json:"act"`
		}
		if err := tok.Claims(&claims); err != nil {
			u.refuse(w, r, "unreadable claims: "+err.Error())
			return
		}
		req := upstreamRequest{Method: r.Method, Session: r.Header.Get("Mcp-Session-Id"), Sub: tok.Subject, Act: claims.Act.Sub}
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, "reading the body failed", http.StatusBadRequest)
				return
			}
			var rpc struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &rpc)
			req.RPC = rpc.Method
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if !u.accept(req, raw) {
			http.Error(w, "this session belongs to another user", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), subjectKey{}, tok.Subject)))
	})
}

// accept records req, made with token raw; false when its session is
// another subject's.
func (u *upstream) accept(req upstreamRequest, raw string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.tokens, raw) {
		u.tokens = append(u.tokens, raw)
	}
	if req.Session != "" {
		owner, known := u.sessions[req.Session]
		switch {
		case !known:
			u.sessions[req.Session] = req.Sub
		case owner != req.Sub:
			u.crossed = append(u.crossed, req.Sub+" used the session of "+owner)
			return false
		}
	}
	u.accepted = append(u.accepted, req)
	return true
}

func (u *upstream) refuse(w http.ResponseWriter, r *http.Request, why string) {
	u.mu.Lock()
	u.refused = append(u.refused, r.Method+": "+why)
	u.mu.Unlock()
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	http.Error(w, why, http.StatusUnauthorized)
}

// log writes what the upstream accepted to the spec's output.
func (u *upstream) log() {
	GinkgoWriter.Printf("the upstream accepted:\n")
	for i, r := range u.requests() {
		GinkgoWriter.Printf("  %2d. %s %s session=%q sub=%q act=%q\n", i+1, r.Method, r.RPC, r.Session, r.Sub, r.Act)
	}
}

// requests are the requests the upstream accepted, in order.
func (u *upstream) requests() []upstreamRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.accepted)
}

// toolCalls counts the tools/call requests accepted so far.
func (u *upstream) toolCalls() int { return len(u.toolCallsSince(0)) }

// toolCallsSince are the tools/call requests accepted after the first n.
func (u *upstream) toolCallsSince(n int) []upstreamRequest {
	var calls []upstreamRequest
	for _, r := range u.requests() {
		if r.RPC == "tools/call" {
			calls = append(calls, r)
		}
	}
	return calls[min(n, len(calls)):]
}

// sessionsOf are the sessions sub used.
func (u *upstream) sessionsOf(sub string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var ids []string
	for id, owner := range u.sessions {
		if owner == sub {
			ids = append(ids, id)
		}
	}
	return ids
}

// crossedSessions are the requests refused for using another subject's
// session.
func (u *upstream) crossedSessions() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.crossed)
}

// refusals say why each refused request was refused.
func (u *upstream) refusals() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.refused)
}

// presented are the distinct valid tokens the upstream was sent.
func (u *upstream) presented() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.tokens)
}

// createOAuthFixtures creates the client secrets' Secrets and the
// provider's CA bundle, deleted when the container ends.
func createOAuthFixtures(wrongSecret string) {
	objects := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: exchangerSecretName},
			StringData: map[string]string{secretKey: secrets[exchangerID]}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: serviceSecretName},
			StringData: map[string]string{secretKey: secrets[serviceID]}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: wrongSecretName},
			StringData: map[string]string{secretKey: wrongSecret}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: caConfigMapName},
			Data: map[string]string{caKey: string(provider.CAPEM)}},
	}
	for _, obj := range objects {
		Expect(env.Client.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, obj))).To(Succeed()) })
	}
}

// createUpstreamCollection creates the collection of the servers
// authServer makes.
func createUpstreamCollection() {
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: upstreamCollection},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{upstreamLabel: "true"}}}}}
	Expect(env.Client.Create(ctx, tc)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, tc))).To(Succeed()) })
}

// authServer creates an MCPServer for the upstream with auth, in the
// upstream collection.
func authServer(name string, auth *mcpv1alpha1.UpstreamAuth, mutate ...func(*mcpv1alpha1.MCPServer)) *mcpv1alpha1.MCPServer {
	return env.CreateServer(ns, name, upstreamURL, append([]func(*mcpv1alpha1.MCPServer){func(s *mcpv1alpha1.MCPServer) {
		s.Labels = map[string]string{upstreamLabel: "true"}
		s.Spec.Auth = auth
	}}, mutate...)...)
}

// oauthClient is a client of the provider's token endpoint, its secret in
// secretName, the provider's CA from the ConfigMap.
func oauthClient(id, secretName string) mcpv1alpha1.OAuth2Client {
	return mcpv1alpha1.OAuth2Client{
		TokenURL:        provider.TokenURL,
		ClientID:        id,
		ClientSecretRef: mcpv1alpha1.KeyReference{Name: secretName, Key: secretKey},
		TLS:             &mcpv1alpha1.TLSSpec{CAConfigMapRef: &mcpv1alpha1.KeyReference{Name: caConfigMapName, Key: caKey}},
	}
}

// exchangeAuth exchanges callers' tokens with the exchanger for audience.
func exchangeAuth(audience string) *mcpv1alpha1.UpstreamAuth {
	c := oauthClient(exchangerID, exchangerSecretName)
	c.Audience = audience
	return &mcpv1alpha1.UpstreamAuth{TokenExchange: &mcpv1alpha1.TokenExchange{OAuth2Client: c}}
}

// clientCredentialsAuth is tools-service's own identity, its secret in
// secretName, for resource (RFC 8707, which the provider honours).
func clientCredentialsAuth(secretName, resource string) *mcpv1alpha1.UpstreamAuth {
	c := oauthClient(serviceID, secretName)
	c.Audience = resource
	c.Resource = resource
	return &mcpv1alpha1.UpstreamAuth{OAuth2ClientCredentials: &c}
}

// readyMessage is the Ready message of srv, for failure messages.
func readyMessage(srv *mcpv1alpha1.MCPServer) func() string {
	return func() string {
		var got mcpv1alpha1.MCPServer
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(srv), &got); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
			return "MCPServer " + srv.Name + ": " + c.Reason + ": " + c.Message
		}
		return "MCPServer " + srv.Name + ": no Ready condition"
	}
}

func toolOf(server string) string { return "mcp_" + server + "_" + whoamiTool }

func upstreamCollectionPath() string {
	return "/v1/namespaces/" + ns + "/toolcollections/" + upstreamCollection
}

// waitServed waits until the catalog at base lists server's tool in the
// upstream collection for bearer: reading a menu exchanges no token.
func waitServed(base, bearer, server string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		menu := call(base, http.MethodGet, upstreamCollectionPath()+"/tools", bearer, "")
		g.Expect(menu.Code).To(Equal(http.StatusOK), menu.Body)
		g.Expect(menu.Body).To(ContainSubstring(`"` + toolOf(server) + `"`))
	}).Should(Succeed())
}

// executeTool calls server's whoami over REST.
func executeTool(base, bearer, server string) answer {
	return call(base, http.MethodPost, upstreamCollectionPath()+"/execute", bearer, `{"name":"`+toolOf(server)+`","arguments":{}}`)
}

// outputOf is the output of a REST call's envelope.
func outputOf(a answer) string {
	var envelope struct {
		Output string `json:"output"`
	}
	Expect(json.Unmarshal([]byte(a.Body), &envelope)).To(Succeed(), a.Body)
	return envelope.Output
}

// toolResult is a tools/call result as an MCP client read it.
type toolResult struct {
	IsError bool
	Text    string
}

// mcpSession is a stock MCP client (mcp-go), initialized with 2025-11-25
// at endpoint, bearer (if any) as its Authorization, and the context its
// requests go under; done closes it.
func mcpSession(endpoint, bearer string) (*mcpgoclient.Client, context.Context, func()) {
	GinkgoHelper()
	headers := map[string]string{}
	if bearer != "" {
		headers["Authorization"] = "Bearer " + bearer
	}
	c, err := mcpgoclient.NewStreamableHttpClient(endpoint, transport.WithHTTPHeaders(headers), transport.WithHTTPTimeout(60*time.Second))
	Expect(err).NotTo(HaveOccurred())
	callCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	Expect(c.Start(callCtx)).To(Succeed())
	hello := mcp.InitializeRequest{}
	hello.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	hello.Params.ClientInfo = mcp.Implementation{Name: "identity-test", Version: "1"}
	_, err = c.Initialize(callCtx, hello)
	Expect(err).NotTo(HaveOccurred())
	return c, callCtx, func() { _ = c.Close(); cancel() }
}

// mcpToolCall calls tool over the upstream collection's MCP endpoint with
// a stock MCP client (mcp-go), bearer as its Authorization.
func mcpToolCall(base, bearer, tool string) toolResult {
	GinkgoHelper()
	c, callCtx, done := mcpSession(base+upstreamCollectionPath()+"/mcp", bearer)
	defer done()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = map[string]any{}
	result, err := c.CallTool(callCtx, req)
	Expect(err).NotTo(HaveOccurred())
	var texts []string
	for _, content := range result.Content {
		if text, ok := mcp.AsTextContent(content); ok {
			texts = append(texts, text.Text)
		}
	}
	return toolResult{IsError: result.IsError, Text: strings.Join(texts, "\n")}
}

// jwtLike is token material of any JWT.
var jwtLike = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)

// expectNoSecrets fails when text holds a client secret of the suite,
// one of more, or anything like a JWT.
func expectNoSecrets(text string, more ...string) {
	GinkgoHelper()
	for _, secret := range append([]string{secrets[exchangerID], secrets[serviceID]}, more...) {
		Expect(text).NotTo(ContainSubstring(secret))
	}
	Expect(jwtLike.FindString(text)).To(BeEmpty(), "token material")
}

// expectCallerSafe fails when an answer to a caller holds a secret, the
// caller's token, or the token endpoint (which callers are not told).
func expectCallerSafe(text, callerToken string) {
	GinkgoHelper()
	expectNoSecrets(text, callerToken)
	Expect(text).NotTo(ContainSubstring(provider.Issuer), "the token endpoint is for the server's operators")
}
