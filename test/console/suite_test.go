// Package console_test drives the catalog's console (internal/console,
// served under /ui/) in a real browser: headless Chromium from Debian's
// packages (hack/chromium.sh finds or installs it), driven through the
// DevTools protocol by chromedp. Behind it run a real control plane
// (kube-apiserver and etcd), the operator's controllers, a catalog with
// Kubernetes authentication and the console on, and real MCP servers
// (mcp-go over Streamable HTTP on 127.0.0.1). The viewers are
// ServiceAccounts whose tokens are pasted into the page as a person
// would: one bound to catalog-caller, one to catalog-reader, one bound to
// nothing.
//
// Every page a spec opens is checked when the spec ends: it threw no
// exception, broke no rule of its Content-Security-Policy, and holds no
// element a tool description smuggled in. A screenshot of each page goes
// to $CONSOLE_SCREENSHOTS when set.
package console_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
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

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/controller"
	"github.com/toolmesh/mcp-operator/internal/testbrowser"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

const (
	// ns holds every object of the suite: a fixed name, so that the
	// screenshots read like a real cluster's.
	ns = "tools"
	// kit selects the demo servers by label; clash selects echo and
	// echo-mirror, which publish the same name, and pins one tool to a
	// hash it does not have.
	kit   = "kit"
	clash = "clash"
	// demoLabel marks the servers kit selects.
	demoLabel = "console.toolmesh.io/demo"

	// The catalog's names of the upstreams' tools.
	configureTool = "mcp_echo_configure"
	forecastTool  = "mcp_echo_forecast"
	greetTool     = "mcp_echo_greet"
	snapshotTool  = "mcp_media_snapshot"
	explodeTool   = "mcp_media_explode"
	nestTool      = "mcp_media_nest"
	holdTool      = "mcp_media_hold"
	trapTool      = "mcp_shady_trap"

	// configureDescription is configure's description, shown as text.
	configureDescription = "Applies settings to a deployment & reports them back <exactly> as received."
	// configureSchema exercises every kind of field the try-it form
	// generates: strings, an integer, a number, an enum, a boolean, an
	// array of strings and a nested object.
	configureSchema = `{"type":"object","properties":{
		"name":{"type":"string","description":"Who the settings are for"},
		"count":{"type":"integer","description":"How many replicas"},
		"ratio":{"type":"number","description":"Share of the traffic"},
		"mode":{"type":"string","enum":["fast","safe","slow"],"description":"How careful to be"},
		"verbose":{"type":"boolean","description":"Log every step"},
		"tags":{"type":"array","items":{"type":"string"},"description":"Labels to attach"},
		"target":{"type":"object","description":"Where to apply them","properties":{
			"host":{"type":"string","description":"Host name"},
			"port":{"type":"integer","description":"TCP port"}},"required":["host"]}},
		"required":["name","mode"]}`
	forecastDescription = "Forecasts the weather for a city: temperature, rain and wind for the next days."
	// nestSchema holds itself: v is a string or an array of v (through
	// anyOf), node's child is a node, list is an array of lists; and a
	// property has a name JavaScript objects treat apart.
	nestSchema = `{"type":"object",
		"$defs":{
			"j":{"anyOf":[{"type":"string"},{"type":"array","items":{"$ref":"#/$defs/j"}}]},
			"node":{"type":"object","properties":{
				"label":{"type":"string","description":"What the node is called"},
				"child":{"$ref":"#/$defs/node"}},"required":["label"]},
			"list":{"type":"array","items":{"$ref":"#/$defs/list"}}},
		"properties":{
			"v":{"$ref":"#/$defs/j","description":"A string, or a list of such values"},
			"node":{"$ref":"#/$defs/node","description":"A tree of nodes"},
			"list":{"$ref":"#/$defs/list","description":"Lists of lists"},
			"__proto__":{"type":"string","description":"A property named __proto__"}},
		"required":["node"]}`
	// xssDescription is a tool description a hostile server sends.
	xssDescription = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`
	// explodeMessage is the text of explode's isError result.
	explodeMessage = "the reactor is offline"
	// pngWidth and pngHeight are the size of snapshot's image.
	pngWidth, pngHeight = 4, 3
)

var (
	ctx context.Context
	env *testenv.Env
	// catalogURL is the catalog's base URL (http://127.0.0.1:port); its
	// audit trail is audit. noTryURL is a second catalog's over the same
	// manager, with try-it off (--console-try-it=false).
	catalogURL, noTryURL string
	audit                testenv.LockedBuffer
	// The viewers' tokens: caller is bound to catalog-caller in ns,
	// reader to catalog-reader, stranger to nothing.
	callerToken, readerToken, strangerToken string
	// snapshotPNG is the base64 PNG snapshot returns.
	snapshotPNG string
	// The collections' names of their tools, sorted, as their status has
	// them once the suite is ready.
	kitTools []string
)

func TestConsole(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Console in a real browser")
}

var _ = BeforeSuite(func() {
	chromium := testbrowser.Chromium()
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	started := time.Now()
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)

	By("starting Chromium")
	chrome = testbrowser.Start(chromium, testbrowser.Options{TempScreenshots: true})
	GinkgoWriter.Printf("timing: browser up in %s\n", time.Since(started).Round(time.Millisecond))

	By("starting the upstreams")
	snapshotPNG = tinyPNG()
	echo := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	// configure has the hints mcp.NewTool gives every tool (not read-only,
	// destructive); forecast says it is read-only, and keeps the others.
	configure := mcp.NewToolWithRawSchema("configure", configureDescription, json.RawMessage(configureSchema))
	configure.Annotations = mcp.NewTool("").Annotations
	echo.MCP.AddTool(configure, echoArguments)
	forecast := mcp.NewToolWithRawSchema("forecast", forecastDescription,
		json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}`))
	forecast.Annotations = mcp.NewTool("", mcp.WithReadOnlyHintAnnotation(true)).Annotations
	echo.MCP.AddTool(forecast, echoArguments)
	echo.AddToolFunc("greet", "Greets someone by name.",
		`{"type":"object","properties":{"who":{"type":"string"}}}`, echoArguments)
	// mirror publishes greet under echo's prefix: a conflict in clash.
	mirror := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	mirror.AddToolFunc("greet", "Greets someone by name, from the mirror.",
		`{"type":"object","properties":{"who":{"type":"string"}}}`, echoArguments)
	media := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	media.AddToolFunc("snapshot", "Takes a snapshot of the dashboard as a PNG image.", `{"type":"object","properties":{}}`,
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultImage("the dashboard", snapshotPNG, "image/png"), nil
		})
	media.AddToolFunc("explode", "Always fails, with a tool error.", `{"type":"object","properties":{}}`,
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError(explodeMessage), nil
		})
	media.AddToolFunc("nest", "Takes values whose schemas hold themselves.", nestSchema, echoArguments)
	media.AddToolFunc("hold", "Answers once the test releases its key.",
		`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`, holdUntilReleased)
	shady := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
	shady.AddToolFunc("trap", xssDescription, `{"type":"object","properties":{"q":{"type":"string","description":"<b>bold</b>"}}}`,
		echoArguments)

	By("starting the control plane, the controllers and a catalog with Kubernetes authentication and the console")
	var err error
	env, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	GinkgoWriter.Printf("timing: control plane up in %s\n", time.Since(started).Round(time.Millisecond))
	mgr, err := env.NewManager()
	Expect(err).NotTo(HaveOccurred())
	Expect(controller.SetupWithManager(ctx, mgr, controller.Options{})).To(Succeed())
	catalogURL = serveCatalog(mgr, true)
	noTryURL = serveCatalog(mgr, false)
	testenv.RunManager(ctx, mgr)

	By("the viewers: ServiceAccounts bound to catalog-caller, to catalog-reader, and to nothing")
	Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	env.InstallCatalogRoles()
	callerToken = viewer("caller", "catalog-caller")
	readerToken = viewer("reader", "catalog-reader")
	strangerToken = viewer("stranger", "")

	By("the servers and the collections")
	demo := func(s *mcpv1alpha1.MCPServer) { s.Labels = map[string]string{demoLabel: "true"} }
	servers := []*mcpv1alpha1.MCPServer{
		env.CreateServer(ns, "echo", echo.URL(), demo),
		env.CreateServer(ns, "media", media.URL(), demo),
		env.CreateServer(ns, "shady", shady.URL(), demo),
		env.CreateServer(ns, "echo-mirror", mirror.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.ToolPrefix = "echo" }),
	}
	for _, s := range servers {
		Eventually(env.ReadyOf(s)).Should(Equal("True/ToolsDiscovered"), s.Name)
	}
	createCollection(&mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kit},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{demoLabel: "true"}}}}})
	createCollection(&mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clash},
		Spec: mcpv1alpha1.ToolCollectionSpec{
			Servers: mcpv1alpha1.ServerSelection{Names: []string{"echo", "echo-mirror"}},
			Pinning: &mcpv1alpha1.ToolPinning{Mode: mcpv1alpha1.PinningWarn,
				Approved: map[string]string{greetTool: strings.Repeat("0", 64)}}}})

	By("waiting for the collections' status and for the catalog to serve kit's menu")
	kitTools = []string{configureTool, explodeTool, forecastTool, greetTool, trapTool, snapshotTool, nestTool, holdTool}
	slices.Sort(kitTools)
	Eventually(func(g Gomega) {
		tc := collection(kit)
		var names []string
		for _, t := range tc.Status.Tools {
			names = append(names, t.Name)
		}
		g.Expect(names).To(ConsistOf(kitTools))
		c := collection(clash)
		g.Expect(c.Status.Conflicts).To(ContainElement(HaveField("Name", greetTool)))
		g.Expect(c.Status.UnapprovedTools).To(ContainElement(HaveField("Name", greetTool)))
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		code, _, body := get(kitPath+"/tools", callerToken)
		g.Expect(code).To(Equal(http.StatusOK), string(body))
		g.Expect(menuNames(body)).To(ConsistOf(kitTools))
	}).Should(Succeed())
	GinkgoWriter.Printf("timing: suite ready in %s\n", time.Since(started).Round(time.Millisecond))
})

// serveCatalog builds a catalog with Kubernetes authentication and the
// console over the suite's manager, serves it on 127.0.0.1 until the
// suite ends, and returns its URL.
func serveCatalog(mgr ctrl.Manager, tryIt bool) string {
	opts := toolcatalog.Options{
		Auth:         toolcatalog.AuthKubernetes,
		Reviewer:     mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Console:      toolcatalog.ConsoleOptions{Enabled: true, TryIt: tryIt},
		AuthCacheTTL: time.Second,
		Log:          ctrl.Log.WithName(fmt.Sprintf("catalog-try-%t", tryIt)),
	}
	if tryIt {
		opts.Audit = &audit
	}
	catalog, err := toolcatalog.New(mgr.GetClient(), opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(catalog.WatchChanges(ctx, mgr.GetCache())).To(Succeed())
	// httptest listens on 127.0.0.1.
	server := httptest.NewUnstartedServer(catalog.Handler())
	server.Config.ReadHeaderTimeout = 10 * time.Second
	server.Start()
	DeferCleanup(server.Close)
	Expect(server.URL).To(HavePrefix("http://127.0.0.1:"))
	return server.URL
}

// echoArguments answers with the arguments it got, as JSON and nothing
// else, so that a spec can compare them with what it typed.
func echoArguments(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := json.Marshal(req.GetArguments())
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(args)), nil
}

// holds are the calls of the hold tool, each waiting for its key to be
// released.
var holds = struct {
	sync.Mutex
	gates   map[string]chan struct{}
	arrived map[string]bool
}{gates: map[string]chan struct{}{}, arrived: map[string]bool{}}

func gate(key string) chan struct{} {
	holds.Lock()
	defer holds.Unlock()
	if holds.gates[key] == nil {
		holds.gates[key] = make(chan struct{})
	}
	return holds.gates[key]
}

// holdUntilReleased answers "released <key>" once release(key) is called.
func holdUntilReleased(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	key := req.GetString("key", "")
	wait := gate(key)
	holds.Lock()
	holds.arrived[key] = true
	holds.Unlock()
	select {
	case <-wait:
		return mcp.NewToolResultText("released " + key), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// holding is whether a call of hold with key has reached the upstream.
func holding(key string) bool {
	holds.Lock()
	defer holds.Unlock()
	return holds.arrived[key]
}

// release lets the calls of hold with key answer (and any later one).
func release(key string) {
	wait := gate(key)
	holds.Lock()
	defer holds.Unlock()
	select {
	case <-wait:
	default:
		close(wait)
	}
}

// tinyPNG is a pngWidth×pngHeight PNG, base64.
func tinyPNG() string {
	img := image.NewRGBA(image.Rect(0, 0, pngWidth, pngHeight))
	for x := range pngWidth {
		for y := range pngHeight {
			img.Set(x, y, color.RGBA{R: 200, G: uint8(60 * y), B: uint8(50 * x), A: 255})
		}
	}
	var buf bytes.Buffer
	Expect(png.Encode(&buf, img)).To(Succeed())
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// viewer creates a ServiceAccount in ns, binds role to it there (none
// when empty) and gets it a token from the TokenRequest API, as a pod
// would.
func viewer(name, role string) string {
	if role != "" {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
		Expect(env.Client.Create(ctx, rb)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, rb))).To(Succeed()) })
	}
	return env.ServiceAccountToken(ns, name, time.Hour)
}

func createCollection(tc *mcpv1alpha1.ToolCollection) {
	Expect(env.Client.Create(ctx, tc)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, tc))).To(Succeed()) })
}

// server and collection read an object as it is now.
func server(name string) *mcpv1alpha1.MCPServer {
	var s mcpv1alpha1.MCPServer
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)).To(Succeed())
	return &s
}

func collection(name string) *mcpv1alpha1.ToolCollection {
	var tc mcpv1alpha1.ToolCollection
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &tc)).To(Succeed())
	return &tc
}

// serverTool is a server's status entry for a tool.
func serverTool(srv, name string) mcpv1alpha1.Tool {
	for _, t := range server(srv).Status.Tools {
		if t.Name == name {
			return t
		}
	}
	Fail(fmt.Sprintf("MCPServer %s has no tool %s", srv, name))
	return mcpv1alpha1.Tool{}
}

// kitPath is the REST path of kit.
const kitPath = "/v1/namespaces/" + ns + "/toolcollections/" + kit

func serverPath(name string) string { return "/v1/namespaces/" + ns + "/mcpservers/" + name }

// get asks the catalog as the page does, with a bearer token (none when
// empty) and more headers (name, value, ...); it returns the status, the
// headers and the body.
func get(path, token string, header ...string) (int, http.Header, []byte) {
	GinkgoHelper()
	return getAt(catalogURL, path, token, header...)
}

// getAt is get from the catalog at base.
func getAt(base, path, token string, header ...string) (int, http.Header, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header, body
}

// noRedirects shows a redirect as it is.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// apiError is the message of an error answer ({"error": "..."}).
func apiError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	Expect(json.Unmarshal(body, &e)).To(Succeed(), string(body))
	Expect(e.Error).NotTo(BeEmpty(), string(body))
	return e.Error
}

// menuNames are the tool names of a menu in the openai format.
func menuNames(body []byte) []string {
	var menu struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	Expect(json.Unmarshal(body, &menu)).To(Succeed(), string(body))
	var names []string
	for _, t := range menu.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// eventReasons are the reasons of the Events about an object of ns.
func eventReasons(kind, name string) []string {
	var list corev1.EventList
	Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
