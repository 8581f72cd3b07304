// Package identity_test runs the catalog against a real identity provider
// end to end: a real OpenID provider (internal/testoidc, zitadel's OP over
// TLS), a real kube-apiserver that trusts it through a structured
// authentication configuration, the operator's controllers, and a stock MCP
// client (the TypeScript SDK) that finds its way to a token by itself.
package identity_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/mark3labs/mcp-go/mcp"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/testoidc"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

const (
	// ns, collectionName and serverName are fixed: the collection's MCP
	// endpoint is a resource the provider's clients are registered for
	// before anything else starts.
	ns             = "agents"
	collectionName = "kit"
	serverName     = "calc"
	// addTool is the catalog's name for the upstream's add tool.
	addTool = "mcp_calc_add"
	// elsewhere is a resource that is neither catalog.
	elsewhere = "https://other.example/mcp"
	// trustTimeout bounds how long the API server may take to trust the
	// provider (it reads the discovery document asynchronously).
	trustTimeout = 60 * time.Second
)

var (
	ctx      context.Context
	env      *testenv.Env
	mgr      ctrl.Manager
	provider *testoidc.Provider
	secrets  = map[string]string{}

	// kubeCatalog runs with Auth: AuthKubernetes (TokenReviews);
	// oidcCatalog with Auth: AuthOIDC. Both are recorded.
	kubeCatalog, oidcCatalog *served

	// logs is every log line of the suite (controllers and catalogs);
	// audits is every catalog's audit trail.
	logs   testenv.LockedBuffer
	audits = map[string]*testenv.LockedBuffer{}
	// authSources is the process's token cache for spec.auth, shared by
	// the controllers and every catalog as the manager shares it; callers'
	// tokens may be exchanged at the provider's token endpoint only.
	authSources *upstreamauth.Sources
	// used holds every token the suite got or saw, for the leak check.
	used tokenSet

	// upstreamLn and upstreamURL are the address of upstream_test.go's
	// MCP server, reserved before the provider starts: its clients are
	// registered for it.
	upstreamLn  net.Listener
	upstreamURL string
)

// served is a catalog behind a recording HTTP server.
type served struct {
	URL     string
	Catalog *toolcatalog.Catalog
	Rec     *recorder
	Audit   *testenv.LockedBuffer
}

func TestIdentity(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Identity Suite")
}

var _ = BeforeSuite(func() {
	Expect(os.Getenv(testmcp.PeersEnv)).NotTo(BeEmpty(),
		"%s is not set: run `make test`, which installs the npm MCP peers (the TypeScript SDK among them)", testmcp.PeersEnv)
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, &logs)), zap.UseDevMode(true), zap.Level(zapcore.Level(-2))))
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)

	// The catalogs' addresses come first: the provider registers its
	// clients for them.
	kubeLn, kubeURL := listen()
	oidcLn, oidcURL := listen()
	endpoint := oidcURL + mcpPath()
	// So is the upstream's (upstream_test.go): tokens are minted for it.
	var upstreamBase string
	upstreamLn, upstreamBase = listen()
	upstreamURL = upstreamBase + upstreamPath

	started := time.Now()
	secrets = map[string]string{"agent-a": randomHex(), "agent-b": randomHex(), "agent-elsewhere": randomHex(),
		"agent-c": randomHex(), exchangerID: randomHex(), serviceID: randomHex()}
	// agent-a and agent-b may get tokens for either catalog and for the
	// collection's MCP endpoint (the resource the SDK asks for, RFC 8707).
	audience := []string{kubeURL, oidcURL, endpoint}
	var err error
	provider, err = testoidc.Start(testoidc.Options{Clients: []testoidc.Client{
		{ID: "agent-a", Secret: secrets["agent-a"], Subject: "alice", Audience: audience},
		{ID: "agent-b", Secret: secrets["agent-b"], Subject: "bob", Audience: audience},
		{ID: "agent-elsewhere", Secret: secrets["agent-elsewhere"], Audience: []string{elsewhere}},
		// upstream_test.go: a third caller, the catalog's exchanging
		// client and a server's own identity, both for the upstream only.
		{ID: "agent-c", Secret: secrets["agent-c"], Subject: "carol", Audience: audience},
		{ID: exchangerID, Secret: secrets[exchangerID], Audience: []string{upstreamURL}, ExchangeAudiences: []string{upstreamURL}},
		{ID: serviceID, Secret: secrets[serviceID], Audience: []string{upstreamURL}},
	}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(provider.Stop)

	By("starting kube-apiserver with a JWT authenticator for the provider")
	config := authenticationConfig(provider.Issuer, string(provider.CAPEM), kubeURL)
	dir, err := os.MkdirTemp("", "identity-suite-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	configPath := filepath.Join(dir, "authentication-config.yaml")
	Expect(os.WriteFile(configPath, config, 0o600)).To(Succeed())
	env, err = testenv.StartWith(ctx, testenv.Options{APIServerFlags: map[string]string{"authentication-config": configPath}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	GinkgoWriter.Printf("timing: provider and control plane up in %s\n", time.Since(started).Round(time.Millisecond))

	By("waiting for the API server to trust the provider: a TokenReview of its token authenticates")
	trustStart := time.Now()
	alice := token("agent-a")
	Eventually(func(g Gomega) {
		review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: alice}}
		g.Expect(env.Client.Create(ctx, review)).To(Succeed())
		g.Expect(review.Status.Authenticated).To(BeTrue(), "TokenReview error: %s", review.Status.Error)
		g.Expect(review.Status.User.Username).To(Equal("idp:alice"))
	}, trustTimeout, 250*time.Millisecond).Should(Succeed())
	GinkgoWriter.Printf("timing: API server trusted the issuer %s after control plane start\n", time.Since(trustStart).Round(time.Millisecond))

	By("running the controllers and two catalogs over one manager")
	mgr, err = env.NewManager()
	Expect(err).NotTo(HaveOccurred())
	authSources = upstreamauth.NewSources(provider.TokenURL)
	Expect(controller.SetupWithManager(ctx, mgr, controller.Options{AuthSources: authSources})).To(Succeed())
	kubeCatalog = serve(kubeLn, "kubernetes", toolcatalog.Options{Auth: toolcatalog.AuthKubernetes, PublicURL: kubeURL})
	oidcCatalog = serve(oidcLn, "oidc", toolcatalog.Options{Auth: toolcatalog.AuthOIDC, PublicURL: oidcURL,
		OIDC: &toolcatalog.OIDCOptions{IssuerURL: provider.Issuer, HTTPClient: provider.HTTPClient()}})
	testenv.RunManager(ctx, mgr)

	By("giving the catalogs a server and a collection of it")
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	env.InstallCatalogRoles()
	upstream := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	upstream.AddToolFunc("add", "Adds two numbers",
		`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`,
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.GetArguments()
			a, _ := args["a"].(float64)
			b, _ := args["b"].(float64)
			return mcp.NewToolResultText(fmt.Sprint(a + b)), nil
		})
	srv := env.CreateServer(ns, serverName, upstream.URL())
	Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: collectionName},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{serverName}}}}
	Expect(env.Client.Create(ctx, tc)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, tc))).To(Succeed()) })
	GinkgoWriter.Printf("timing: suite ready in %s\n", time.Since(started).Round(time.Millisecond))
})

// authenticationConfig is a structured authentication configuration with
// one JWT authenticator: the provider, trusted for tokens meant for
// audience, users named idp:<sub>.
func authenticationConfig(issuer, caPEM, audience string) []byte {
	config := map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "AuthenticationConfiguration",
		"jwt": []any{map[string]any{
			"issuer": map[string]any{
				"url":                  issuer,
				"certificateAuthority": caPEM,
				"audiences":            []string{audience},
			},
			"claimMappings": map[string]any{
				"username": map[string]any{"claim": "sub", "prefix": "idp:"},
			},
		}},
	}
	raw, err := yaml.Marshal(config)
	Expect(err).NotTo(HaveOccurred())
	return raw
}

// listen reserves a loopback address for a catalog, so that its URL is
// known before the catalog is built.
func listen() (net.Listener, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	return ln, "http://" + ln.Addr().String()
}

// serve builds a catalog over the suite's manager and serves it, recorded,
// on ln; it stops when the suite (or the spec that asked) ends.
func serve(ln net.Listener, name string, opts toolcatalog.Options) *served {
	audit := &testenv.LockedBuffer{}
	audits[name] = audit
	opts.Reviewer = mgr.GetClient()
	if opts.AuthSources == nil {
		opts.AuthSources = authSources
	}
	opts.Log = ctrl.Log.WithName("catalog-" + name)
	opts.Audit = audit
	opts.AuthCacheTTL = time.Second
	c, err := toolcatalog.New(mgr.GetClient(), opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(c.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	rec := &recorder{}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: rec.wrap(c.Handler()), ReadHeaderTimeout: 10 * time.Second}}
	srv.Start()
	DeferCleanup(srv.Close)
	return &served{URL: srv.URL, Catalog: c, Rec: rec, Audit: audit}
}

// bindUser binds the shipped catalog-caller ClusterRole (get, list and
// execute on toolcollections and mcpservers) to a user in ns.
func bindUser(name, user string) {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "catalog-caller"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	Expect(env.Client.Create(ctx, rb)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, rb))).To(Succeed()) })
}

func mcpPath() string { return "/v1/namespaces/" + ns + "/toolcollections/" + collectionName + "/mcp" }
func menuPath() string {
	return "/v1/namespaces/" + ns + "/toolcollections/" + collectionName + "/tools"
}
func execPath() string {
	return "/v1/namespaces/" + ns + "/toolcollections/" + collectionName + "/execute"
}
func prmPath() string   { return "/.well-known/oauth-protected-resource" + mcpPath() }
func randomHex() string { b := make([]byte, 16); _, _ = rand.Read(b); return hex.EncodeToString(b) }

// token gets a client_credentials token of the suite's provider.
func token(clientID string) string {
	return tokenOf(provider, clientID, secrets[clientID])
}

func tokenOf(p *testoidc.Provider, clientID, secret string) string {
	t, err := p.ClientCredentialsToken(ctx, clientID, secret)
	Expect(err).NotTo(HaveOccurred())
	used.add(t)
	return t
}

// answer is a catalog's answer to a REST request.
type answer struct {
	Code      int
	Challenge string // WWW-Authenticate
	Error     string // the error message of an error answer
	Body      string
}

// call makes a REST request with a bearer token (none when empty).
func call(base, method, path, bearer, body string) answer {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	a := answer{Code: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate"), Body: string(raw)}
	var payload struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &payload) == nil {
		a.Error = payload.Error
	}
	return a
}

// tokenSet is every token the suite used.
type tokenSet struct {
	mu     sync.Mutex
	tokens []string
}

func (s *tokenSet) add(t string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, have := range s.tokens {
		if have == t {
			return
		}
	}
	s.tokens = append(s.tokens, t)
}

func (s *tokenSet) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

// exchange is one request a catalog answered, as the recorder saw it: the
// scheme of its Authorization header (never the credentials), the status
// and the challenge of the answer.
type exchange struct {
	Method, Path, Auth string
	Status             int
	Challenge          string
}

func (e exchange) String() string {
	s := fmt.Sprintf("%s %s auth=%q -> %d", e.Method, e.Path, e.Auth, e.Status)
	if e.Challenge != "" {
		s += " [" + e.Challenge + "]"
	}
	return s
}

// recorder wraps a catalog's handler and records what it answered. Bearer
// tokens it sees go to the suite's token set, for the leak check, and
// nowhere else.
type recorder struct {
	mu   sync.Mutex
	seen []exchange
}

func (r *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		scheme, credentials, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, "bearer") && credentials != "" {
			used.add(credentials)
		}
		rw := &recordingWriter{ResponseWriter: w, done: func(status int, header http.Header) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.seen = append(r.seen, exchange{Method: req.Method, Path: req.URL.Path, Auth: scheme, Status: status,
				Challenge: header.Get("WWW-Authenticate")})
		}}
		next.ServeHTTP(rw, req)
		rw.WriteHeader(http.StatusOK) // recorded only if nothing was written
	})
}

// reset forgets what was recorded.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = nil
}

// on lists the recorded exchanges whose path is one of paths, in the
// order their answers began.
func (r *recorder) on(paths ...string) []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []exchange
	for _, e := range r.seen {
		for _, p := range paths {
			if e.Path == p {
				out = append(out, e)
			}
		}
	}
	return out
}

// recordingWriter reports the status when the answer begins (a stream's
// headers go out long before it ends).
type recordingWriter struct {
	http.ResponseWriter
	once sync.Once
	done func(int, http.Header)
}

func (w *recordingWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.done(code, w.Header())
		w.ResponseWriter.WriteHeader(code)
	})
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sdkRequest is one HTTP request the SDK made, as the script reports it.
type sdkRequest struct {
	Method          string            `json:"method"`
	URL             string            `json:"url"`
	Authorization   string            `json:"authorization"`
	Form            map[string]string `json:"form"`
	RPC             string            `json:"rpc"`
	Status          int               `json:"status"`
	WWWAuthenticate string            `json:"wwwAuthenticate"`
	Error           string            `json:"error"`
}

func (r sdkRequest) String() string {
	s := fmt.Sprintf("%s %s", r.Method, r.URL)
	if r.RPC != "" {
		s += " (" + r.RPC + ")"
	}
	if r.Authorization != "" {
		s += " auth=" + r.Authorization
	}
	if len(r.Form) > 0 {
		form, _ := json.Marshal(r.Form)
		s += " form=" + string(form)
	}
	s += fmt.Sprintf(" -> %d", r.Status)
	if r.WWWAuthenticate != "" {
		s += " [" + r.WWWAuthenticate + "]"
	}
	if r.Error != "" {
		s += " error=" + r.Error
	}
	return s
}

// sdkRun is what the script printed.
type sdkRun struct {
	OK    bool     `json:"ok"`
	Tools []string `json:"tools"`
	Call  struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"call"`
	Error struct {
		Name      string `json:"name"`
		Message   string `json:"message"`
		Code      any    `json:"code"`
		ErrorCode string `json:"errorCode"`
	} `json:"error"`
	Requests []sdkRequest `json:"requests"`
	// Exit is the script's exit code; Stderr what it wrote there.
	Exit   int
	Stderr string
}

// runSDK runs testdata/sdk-client.mjs with Node against url with a
// client's credentials; extra are more environment variables.
func runSDK(url, clientID string, extra ...string) sdkRun {
	peers := os.Getenv(testmcp.PeersEnv)
	dir := GinkgoT().TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "sdk-client.mjs"))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "sdk-client.mjs"), script, 0o600)).To(Succeed())
	// ESM resolves packages from the script's folder up, never NODE_PATH.
	Expect(os.Symlink(filepath.Join(peers, "node_modules"), filepath.Join(dir, "node_modules"))).To(Succeed())
	caFile := filepath.Join(dir, "provider-ca.pem")
	Expect(os.WriteFile(caFile, provider.CAPEM, 0o600)).To(Succeed())

	runCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "node", "sdk-client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"NODE_EXTRA_CA_CERTS="+caFile,
		"MCP_URL="+url,
		"CLIENT_ID="+clientID,
		"CLIENT_SECRET="+secrets[clientID],
		"ISSUER="+provider.Issuer,
		"TOOL="+addTool,
		`TOOL_ARGS={"a":20,"b":22}`,
	)
	cmd.Env = append(cmd.Env, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	runErr := cmd.Run()
	GinkgoWriter.Printf("timing: the SDK client (%s) ran %s\n", clientID, time.Since(started).Round(time.Millisecond))
	var run sdkRun
	if exit, ok := runErr.(*exec.ExitError); ok { //nolint:errorlint // Run returns it unwrapped
		run.Exit = exit.ExitCode()
	} else {
		Expect(runErr).NotTo(HaveOccurred())
	}
	var last string
	lines := bufio.NewScanner(&stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "{") {
			last = lines.Text()
		}
	}
	Expect(last).NotTo(BeEmpty(), "the script printed no result; stderr: %s", stderr.String())
	Expect(json.Unmarshal([]byte(last), &run)).To(Succeed())
	run.Stderr = stderr.String()
	GinkgoWriter.Printf("the SDK (%s) made these requests:\n", clientID)
	for i, r := range run.Requests {
		GinkgoWriter.Printf("  %2d. %s\n", i+1, r)
	}
	return run
}
