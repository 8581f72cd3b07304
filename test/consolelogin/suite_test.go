// Package consolelogin_test signs a viewer in to the catalog's console
// through an OpenID provider, in a real browser: headless Chromium
// (hack/chromium.sh finds or installs it) driven by chromedp runs the
// page's authorization code flow with PKCE (internal/console/assets/
// login.js) against internal/testoidc, zitadel's OpenID Provider over TLS
// with a throw-away CA that the browser trusts by the serving key alone
// (--ignore-certificate-errors-spki-list). Behind the page run a real
// control plane, the operator's controllers, a real MCP server and a
// catalog that checks the provider's JWTs itself (Auth: AuthOIDC), where
// RBAC binds the provider's user, as the catalog maps it, to
// catalog-reader.
//
// The provider is real in what the page relies on: discovery, the
// authorization endpoint, the redirect back with code and state, the code
// exchange with the PKCE verifier, the signed JWT and CORS. Its login is
// configured: it signs in one user at once, without a page.
package consolelogin_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/testbrowser"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/testoidc"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

const (
	// ns holds the server the viewer may read.
	ns         = "tools"
	serverName = "echo"
	// clientID is the console's public client at the provider; user is
	// the subject the provider signs in.
	clientID = "mcp-console"
	user     = "dana"
)

var (
	ctx      context.Context
	env      *testenv.Env
	provider *testoidc.Provider
	// catalogURL is the catalog's public URL (http://127.0.0.1:port): the
	// audience of the provider's tokens, and the console's origin.
	catalogURL string
)

func TestConsoleLogin(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Console sign-in through an OpenID provider, in a real browser")
}

var _ = BeforeSuite(func() {
	chromium := testbrowser.Chromium()
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	started := time.Now()
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)

	By("reserving the catalog's address: the provider registers the console's redirect URI on it")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	catalogURL = "http://" + ln.Addr().String()

	By("starting the OpenID provider with the console as a public client")
	provider = testoidc.StartT(GinkgoT(), testoidc.Options{Clients: []testoidc.Client{{
		ID: clientID, Public: true, RedirectURIs: []string{catalogURL + "/ui/"},
		LoginSubject: user, Audience: []string{catalogURL},
	}}})

	By("starting Chromium, trusting the provider's serving key")
	startBrowser(chromium, provider.Certificate)
	GinkgoWriter.Printf("timing: provider and browser up in %s\n", time.Since(started).Round(time.Millisecond))

	By("starting the control plane, the controllers and a catalog that checks the provider's tokens, with the console")
	env, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	GinkgoWriter.Printf("timing: control plane up in %s\n", time.Since(started).Round(time.Millisecond))
	mgr, err := env.NewManager()
	Expect(err).NotTo(HaveOccurred())
	Expect(controller.SetupWithManager(ctx, mgr, controller.Options{})).To(Succeed())
	catalog, err := toolcatalog.New(mgr.GetClient(), toolcatalog.Options{
		Auth:      toolcatalog.AuthOIDC,
		OIDC:      &toolcatalog.OIDCOptions{IssuerURL: provider.Issuer, HTTPClient: provider.HTTPClient()},
		PublicURL: catalogURL,
		Reviewer:  mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Console: toolcatalog.ConsoleOptions{Enabled: true, TryIt: true,
			OIDCClientID: clientID, OIDCScopes: []string{"openid"}},
		AuthCacheTTL: time.Second,
		Log:          ctrl.Log.WithName("catalog"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(catalog.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	server := &httptest.Server{Listener: ln, Config: &http.Server{Handler: catalog.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	server.Start()
	DeferCleanup(server.Close)
	testenv.RunManager(ctx, mgr)

	By("binding the provider's user, as the catalog names it (issuer#sub), to catalog-reader in " + ns)
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	env.InstallCatalogRoles()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dana-reads"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "catalog-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: provider.Issuer + "#" + user}}}
	Expect(env.Client.Create(ctx, rb)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, rb))).To(Succeed()) })

	By("a server the viewer may read")
	echo := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	echo.AddToolFunc("greet", "Greets someone by name.", `{"type":"object","properties":{"who":{"type":"string"}}}`,
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprint("hello ", req.GetArguments()["who"])), nil
		})
	srv := env.CreateServer(ns, serverName, echo.URL())
	Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
	GinkgoWriter.Printf("timing: suite ready in %s\n", time.Since(started).Round(time.Millisecond))
})
