package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// surfaceUpstream is an mcp-go server that offers prompts, resources,
// resource templates and completion, and counts the prompts/get,
// resources/read and completion/complete requests that reach it: what
// the catalog refuses must never get here.
type surfaceUpstream struct {
	// label is in every answer, to tell two servers' answers apart.
	label string
	mcp   *server.MCPServer
	url   string

	mu       sync.Mutex
	received map[mcp.MCPMethod]int
	// read is every URI a resources/read asked for, as it arrived.
	read []string
}

func startSurfaceUpstream(label string) *surfaceUpstream {
	u := &surfaceUpstream{label: label, received: map[mcp.MCPMethod]int{}}
	hooks := &server.Hooks{}
	hooks.AddBeforeGetPrompt(func(context.Context, any, *mcp.GetPromptRequest) { u.count(mcp.MethodPromptsGet, "") })
	hooks.AddBeforeReadResource(func(_ context.Context, _ any, r *mcp.ReadResourceRequest) {
		u.count(mcp.MethodResourcesRead, r.Params.URI)
	})
	hooks.AddBeforeComplete(func(context.Context, any, *mcp.CompleteRequest) { u.count(mcp.MethodCompletionComplete, "") })
	u.mcp = server.NewMCPServer("surface-"+label, "1.0.0",
		server.WithToolCapabilities(false),
		server.WithPromptCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(colourCompleter{}),
		server.WithHooks(hooks))
	// A tool, so that readyServer waits for the catalog to serve the server.
	u.mcp.AddTool(mcp.NewTool("ping", mcp.WithDescription("Answers pong.")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong"), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: server.NewStreamableHTTPServer(u.mcp, server.WithEndpointPath("/mcp")), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	// Close, not Shutdown: the catalog's pooled session may hold a stream.
	DeferCleanup(srv.Close)
	u.url = "http://" + ln.Addr().String() + "/mcp"
	return u
}

func (u *surfaceUpstream) count(method mcp.MCPMethod, uri string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.received[method]++
	if uri != "" {
		u.read = append(u.read, uri)
	}
}

// receivedOf counts the requests of a method that reached the server.
func (u *surfaceUpstream) receivedOf(method mcp.MCPMethod) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.received[method]
}

func (u *surfaceUpstream) readURIs() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.read...)
}

// addPrompt adds a prompt with the arguments name and colour (which the
// server completes); its answer greets name, from the server's label.
func (u *surfaceUpstream) addPrompt(name string) {
	u.mcp.AddPrompt(mcp.NewPrompt(name, mcp.WithPromptDescription(name+" from "+u.label),
		mcp.WithArgument("name"), mcp.WithArgument("colour")),
		func(_ context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult(name+" from "+u.label, []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(fmt.Sprintf("Hello %s, from %s", r.Params.Arguments["name"], u.label))),
			}), nil
		})
}

// addResource adds a resource whose text is text.
func (u *surfaceUpstream) addResource(uri, text string) {
	u.mcp.AddResource(mcp.NewResource(uri, uri, mcp.WithMIMEType("text/plain")),
		func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: text}}, nil
		})
}

// addTemplate adds a resource template whose reads answer the label and
// the URI read.
func (u *surfaceUpstream) addTemplate(template string) {
	u.mcp.AddResourceTemplate(mcp.NewResourceTemplate(template, template),
		func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain",
				Text: u.label + " read " + r.Params.URI}}, nil
		})
}

// colourCompleter completes any prompt's colour argument.
type colourCompleter struct{}

func (colourCompleter) CompletePromptArgument(_ context.Context, _ string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	values := []string{}
	if arg.Name == "colour" {
		for _, c := range []string{"red", "green", "blue"} {
			if strings.HasPrefix(c, arg.Value) {
				values = append(values, c)
			}
		}
	}
	return &mcp.Completion{Values: values}, nil
}

// connectAs connects the official Go SDK's client to a catalog endpoint,
// sending token as a bearer token with every request.
func connectAs(url, token string) (*sdk.ClientSession, error) {
	withToken := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := sdk.NewClient(&sdk.Implementation{Name: "access-test", Version: "1"}, nil)
	session, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: withToken}, nil)
	if err != nil {
		return nil, err
	}
	DeferCleanup(session.Close)
	return session, nil
}

// connectedAs is connectAs once the caller's access has reached the
// catalog.
func connectedAs(url, token string) *sdk.ClientSession {
	var session *sdk.ClientSession
	Eventually(func() (err error) {
		session, err = connectAs(url, token)
		return err
	}).Should(Succeed())
	return session
}

// promptNames and resourceURIs list a session's prompts and resources,
// for Eventually.
func promptNames(s *sdk.ClientSession) func() ([]string, error) {
	return listed(func() iter.Seq2[*sdk.Prompt, error] { return s.Prompts(ctx, nil) }, func(p *sdk.Prompt) string { return p.Name })
}

func resourceURIs(s *sdk.ClientSession) func() ([]string, error) {
	return listed(func() iter.Seq2[*sdk.Resource, error] { return s.Resources(ctx, nil) }, func(r *sdk.Resource) string { return r.URI })
}

func templateURIs(s *sdk.ClientSession) func() ([]string, error) {
	return listed(func() iter.Seq2[*sdk.ResourceTemplate, error] { return s.ResourceTemplates(ctx, nil) },
		func(t *sdk.ResourceTemplate) string { return t.URITemplate })
}

// listed is a listing's names, read again at each call.
func listed[T any](list func() iter.Seq2[T, error], name func(T) string) func() ([]string, error) {
	return func() ([]string, error) {
		items, err := all(list())
		if err != nil {
			return nil, err
		}
		var out []string
		for _, item := range items {
			out = append(out, name(item))
		}
		return out, nil
	}
}

// promptText is the text of a prompt's messages.
func promptText(r *sdk.GetPromptResult) string {
	var out []string
	for _, m := range r.Messages {
		if t, ok := m.Content.(*sdk.TextContent); ok {
			out = append(out, t.Text)
		}
	}
	return strings.Join(out, "\n")
}

// grant creates a Role in ns with verbs on resource of the catalog's API
// group (on the objects named, or all) and binds a ServiceAccount of ns
// to it.
func grant(ns, serviceAccount, resource string, names []string, verbs ...string) {
	name := serviceAccount + "-" + resource + "-" + strings.Join(verbs, "-")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{resource},
			ResourceNames: names, Verbs: verbs}}}
	Expect(env.Client.Create(ctx, role)).To(Succeed())
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: serviceAccount}}}
	Expect(env.Client.Create(ctx, rb)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, rb))).To(Succeed())
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, role))).To(Succeed())
	})
}

// allowedSoon waits until the API server allows a ServiceAccount a verb,
// so that the catalog's first question about it gets that answer.
func allowedSoon(saNamespace, serviceAccount, verb, resource, namespace, name string) {
	Eventually(func() (bool, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + saNamespace + ":" + serviceAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: mcpv1alpha1.GroupVersion.Group, Resource: resource,
				Verb: verb, Namespace: namespace, Name: name}}}
		if err := env.Client.Create(ctx, review); err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	}).Should(BeTrue(), "%s/%s may %s %s/%s in %s", saNamespace, serviceAccount, verb, resource, name, namespace)
}

// inspectorJSON is the JSON result the MCP Inspector CLI printed.
func inspectorJSON(out string) map[string]any {
	start := strings.Index(out, "{")
	Expect(start).To(BeNumerically(">=", 0), out)
	var v map[string]any
	Expect(json.NewDecoder(strings.NewReader(out[start:])).Decode(&v)).To(Succeed(), out)
	return v
}

const tokenTTL = 10 * time.Minute

var _ = Describe("Who may read a catalog's prompts and resources", func() {
	It("lets a reader of a collection list its prompts and resources, and only a caller get, read and complete them", func() {
		ns := env.Namespace()
		up := startSurfaceUpstream("docs")
		up.addPrompt("greet")
		up.addResource("test://notes/today", "buy milk")
		readyServer(ns, "docs", up.url)
		collection(ns, "kit", "docs")
		endpoint := authCatalog.URL + "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"
		exposedURI := "test://docs." + ns + "/notes/today"

		reader := env.ServiceAccountToken(ns, "reader", tokenTTL)
		grant(ns, "reader", "toolcollections", []string{"kit"}, "get")
		s := connectedAs(endpoint, reader)

		By("listing needs get, as tools/list does")
		Eventually(promptNames(s)).Should(Equal([]string{"mcp_docs_greet"}))
		Eventually(resourceURIs(s)).Should(Equal([]string{exposedURI}))

		By("prompts/get, resources/read and completion/complete need execute, and are refused before the server")
		forbidden := "forbidden: system:serviceaccount:" + ns + ":reader lacks execute on toolcollections/kit in namespace " + ns
		getGreet := func() (*sdk.GetPromptResult, error) {
			return s.GetPrompt(ctx, &sdk.GetPromptParams{Name: "mcp_docs_greet", Arguments: map[string]string{"name": "Ada"}})
		}
		readToday := func() (*sdk.ReadResourceResult, error) {
			return s.ReadResource(ctx, &sdk.ReadResourceParams{URI: exposedURI})
		}
		completeColour := func() (*sdk.CompleteResult, error) {
			return s.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "mcp_docs_greet"},
				Argument: sdk.CompleteParamsArgument{Name: "colour", Value: "r"}})
		}
		_, err := getGreet()
		Expect(err).To(MatchError(ContainSubstring(forbidden)))
		_, err = readToday()
		Expect(err).To(MatchError(ContainSubstring(forbidden)))
		_, err = completeColour()
		Expect(err).To(MatchError(ContainSubstring(forbidden)))
		for _, m := range []mcp.MCPMethod{mcp.MethodPromptsGet, mcp.MethodResourcesRead, mcp.MethodCompletionComplete} {
			Expect(up.receivedOf(m)).To(BeZero(), "%s reached the server", m)
		}

		By("with execute, the same requests get the server's answers")
		grant(ns, "reader", "toolcollections", []string{"kit"}, "get", "execute")
		// The catalog keeps its last answer for a second.
		Eventually(func() (string, error) {
			got, err := getGreet()
			if err != nil {
				return "", err
			}
			return got.Description + ": " + promptText(got), nil
		}).Should(Equal("greet from docs: Hello Ada, from docs"))
		read, err := readToday()
		Expect(err).NotTo(HaveOccurred())
		Expect(read.Contents).To(HaveLen(1))
		Expect(read.Contents[0].Text).To(Equal("buy milk"))
		Expect(read.Contents[0].URI).To(Equal(exposedURI), "the URI in the contents is exposed too")
		completed, err := completeColour()
		Expect(err).NotTo(HaveOccurred())
		Expect(completed.Completion.Values).To(Equal([]string{"red"}))
		Expect(up.receivedOf(mcp.MethodPromptsGet)).To(Equal(1), "only the allowed prompts/get reached the server")
		Expect(up.receivedOf(mcp.MethodResourcesRead)).To(Equal(1))
		Expect(up.receivedOf(mcp.MethodCompletionComplete)).To(Equal(1))
		Expect(up.readURIs()).To(Equal([]string{"test://notes/today"}), "the server is asked for its own URI")

		By("without get, the endpoint refuses everything, even with execute")
		stranger := env.ServiceAccountToken(ns, "stranger", tokenTTL)
		grant(ns, "stranger", "toolcollections", []string{"kit"}, "execute")
		allowedSoon(ns, "stranger", "execute", "toolcollections", ns, "kit")
		r := doAt(authCatalog.URL, http.MethodPost, "/v1/namespaces/"+ns+"/toolcollections/kit/mcp",
			`{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			"Authorization", "Bearer "+stranger, "Content-Type", "application/json", "Accept", "application/json, text/event-stream",
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "prompts/list")
		Expect(r.code).To(Equal(http.StatusForbidden), string(r.body))
		Expect(string(r.body)).To(ContainSubstring("forbidden: system:serviceaccount:" + ns + ":stranger lacks get on toolcollections/kit in namespace " + ns))
		Expect(string(r.body)).NotTo(ContainSubstring("greet"))
		_, err = connectAs(endpoint, stranger)
		Expect(err).To(MatchError(ContainSubstring("Forbidden")))
		Expect(up.receivedOf(mcp.MethodPromptsGet)).To(Equal(1))
	})

	It("narrows the global /mcp to the servers a caller may get, and gets a prompt only with execute on its server", func() {
		nsA, nsB := env.Namespace(), env.Namespace()
		a, b := startSurfaceUpstream("alpha"), startSurfaceUpstream("beta")
		a.addPrompt("hello")
		a.addResource("test://notes/a", "alpha's note")
		b.addPrompt("hello")
		b.addResource("test://notes/b", "beta's note")
		readyServer(nsA, "alpha", a.url)
		readyServer(nsB, "beta", b.url)

		token := env.ServiceAccountToken(nsA, "agent", tokenTTL)
		grant(nsA, "agent", "mcpservers", nil, "get")
		allowedSoon(nsA, "agent", "get", "mcpservers", nsA, "alpha")
		s := connectedAs(authCatalog.URL+"/mcp", token)

		By("the listings hold A's prompt and resource only")
		Eventually(promptNames(s)).Should(Equal([]string{"mcp_alpha_hello"}))
		Eventually(resourceURIs(s)).Should(Equal([]string{"test://alpha." + nsA + "/notes/a"}))

		By("B's prompt and resource, even by their exact names, are not there for this caller")
		getPrompt := func(name string) (string, error) {
			got, err := s.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: map[string]string{"name": "Bo"}})
			if err != nil {
				return "", err
			}
			return promptText(got), nil
		}
		_, err := getPrompt("mcp_beta_hello")
		Expect(err).To(MatchError(ContainSubstring("prompt mcp_beta_hello not found")))
		_, err = s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://beta." + nsB + "/notes/b"})
		Expect(err).To(MatchError(ContainSubstring("resource test://beta." + nsB + "/notes/b not found")))

		By("A's prompt needs execute on A's MCPServer")
		_, err = getPrompt("mcp_alpha_hello")
		Expect(err).To(MatchError(ContainSubstring("forbidden: system:serviceaccount:" + nsA + ":agent lacks execute on mcpservers/alpha in namespace " + nsA)))
		Expect(a.receivedOf(mcp.MethodPromptsGet)).To(BeZero())

		grant(nsA, "agent", "mcpservers", []string{"alpha"}, "execute")
		Eventually(func() (string, error) { return getPrompt("mcp_alpha_hello") }).Should(Equal("Hello Bo, from alpha"))
		Expect(a.receivedOf(mcp.MethodPromptsGet)).To(Equal(1))
		read, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://alpha." + nsA + "/notes/a"})
		Expect(err).NotTo(HaveOccurred())
		Expect(read.Contents).To(HaveLen(1))
		Expect(read.Contents[0].Text).To(Equal("alpha's note"))

		_, err = getPrompt("mcp_beta_hello")
		Expect(err).To(MatchError(ContainSubstring("prompt mcp_beta_hello not found")))
		_, err = s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://beta." + nsB + "/notes/b"})
		Expect(err).To(MatchError(ContainSubstring("not found")))
		Expect(b.receivedOf(mcp.MethodPromptsGet)).To(BeZero(), "B's server never heard of the caller")
		Expect(b.receivedOf(mcp.MethodResourcesRead)).To(BeZero())
		Expect(promptNames(s)()).To(Equal([]string{"mcp_alpha_hello"}))
	})

	It("audits each prompts/get and resources/read, without a URI's query, and a refused one as forbidden", func() {
		ns := env.Namespace()
		up := startSurfaceUpstream("docs")
		up.addPrompt("greet")
		up.addTemplate("test://files/{name}{?token}")
		readyServer(ns, "docs", up.url)
		collection(ns, "kit", "docs")
		trail := &testenv.LockedBuffer{}
		_, audited := newCatalog(Options{Auth: AuthKubernetes, AuthCacheTTL: time.Second, Audit: trail})
		endpoint := audited.URL + "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"

		callerToken := env.ServiceAccountToken(ns, "caller", tokenTTL)
		grant(ns, "caller", "toolcollections", []string{"kit"}, "get", "execute")
		readerToken := env.ServiceAccountToken(ns, "reader", tokenTTL)
		grant(ns, "reader", "toolcollections", []string{"kit"}, "get")
		// Allowed before the first audited request, so that each is
		// answered once: no refusal is kept for the caller.
		allowedSoon(ns, "caller", "execute", "toolcollections", ns, "kit")
		allowedSoon(ns, "reader", "get", "toolcollections", ns, "kit")
		caller := connectedAs(endpoint, callerToken)
		reader := connectedAs(endpoint, readerToken)
		// Listings are not audited; a request for what the catalog does not
		// list yet would be.
		Eventually(promptNames(caller)).Should(Equal([]string{"mcp_docs_greet"}))
		Eventually(templateURIs(caller)).Should(Equal([]string{"test://docs." + ns + "/files/{name}{?token}"}))
		forbiddenBefore := testutil.ToFloat64(surfaceRequests.WithLabelValues("prompts/get", "forbidden"))
		readsBefore := testutil.ToFloat64(surfaceRequests.WithLabelValues("resources/read", "success"))

		got, err := caller.GetPrompt(ctx, &sdk.GetPromptParams{Name: "mcp_docs_greet", Arguments: map[string]string{"name": "Ada"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(promptText(got)).To(Equal("Hello Ada, from docs"))
		read, err := caller.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://docs." + ns + "/files/readme?token=s3cret"})
		Expect(err).NotTo(HaveOccurred())
		Expect(read.Contents).To(HaveLen(1))
		Expect(read.Contents[0].Text).To(Equal("docs read test://files/readme?token=s3cret"), "the query reaches the server")
		_, err = reader.GetPrompt(ctx, &sdk.GetPromptParams{Name: "mcp_docs_greet"})
		Expect(err).To(MatchError(ContainSubstring("lacks execute on toolcollections/kit")))
		_, err = caller.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://elsewhere/x?token=s3cret"})
		Expect(err).To(MatchError(ContainSubstring("resource test://elsewhere/x not found")))

		type line struct{ user, method, name, original, server, collection, via, outcome string }
		lineOf := func(r AuditRecord) line {
			return line{r.User, r.Method, r.Prompt + r.Resource, r.OriginalName, r.Server, r.Collection, r.Via, r.Outcome}
		}
		sa := "system:serviceaccount:" + ns + ":"
		Eventually(func(g Gomega) []line {
			var lines []line
			for _, r := range policyAuditLines(trail)(g) {
				lines = append(lines, lineOf(r))
			}
			return lines
		}).Should(Equal([]line{
			{sa + "caller", "prompts/get", "mcp_docs_greet", "greet", ns + "/docs", ns + "/kit", "mcp", "success"},
			{sa + "caller", "resources/read", "test://docs." + ns + "/files/readme", "test://files/readme", ns + "/docs", ns + "/kit", "mcp", "success"},
			{sa + "reader", "prompts/get", "mcp_docs_greet", "greet", ns + "/docs", ns + "/kit", "mcp", "forbidden"},
			// What the caller named, though nothing was found.
			{sa + "caller", "resources/read", "test://elsewhere/x", "", "", ns + "/kit", "mcp", "invalid_request"},
		}))
		Expect(trail.String()).NotTo(ContainSubstring("s3cret"))
		Expect(trail.String()).NotTo(ContainSubstring("token="))
		Expect(testutil.ToFloat64(surfaceRequests.WithLabelValues("prompts/get", "forbidden"))).To(Equal(forbiddenBefore + 1))
		Expect(testutil.ToFloat64(surfaceRequests.WithLabelValues("resources/read", "success"))).To(Equal(readsBefore + 1))
	})

	It("serves a collection's prompts and resources to the MCP Inspector CLI", func() {
		ns := env.Namespace()
		up := startSurfaceUpstream("docs")
		up.addPrompt("greet")
		up.addResource("test://notes/today", "buy milk")
		readyServer(ns, "docs", up.url)
		collection(ns, "kit", "docs")
		Eventually(func() string { return string(get("/v1/namespaces/" + ns + "/toolcollections/kit/prompts").body) }).
			Should(ContainSubstring(`"name":"mcp_docs_greet"`))
		endpoint := catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"
		exposedURI := "test://docs." + ns + "/notes/today"
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()

		out, err := testmcp.Inspector(callCtx, endpoint, "--transport", "http", "--method", "prompts/list")
		Expect(err).NotTo(HaveOccurred(), out)
		var prompts []string
		for _, p := range inspectorJSON(out)["prompts"].([]any) {
			prompts = append(prompts, p.(map[string]any)["name"].(string))
		}
		Expect(prompts).To(Equal([]string{"mcp_docs_greet"}))

		out, err = testmcp.Inspector(callCtx, endpoint, "--transport", "http", "--method", "prompts/get",
			"--prompt-name", "mcp_docs_greet", "--prompt-args", "name=Ada")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(inspectorJSON(out)).To(HaveKeyWithValue("messages", ConsistOf(
			HaveKeyWithValue("content", HaveKeyWithValue("text", "Hello Ada, from docs")))))

		out, err = testmcp.Inspector(callCtx, endpoint, "--transport", "http", "--method", "resources/list")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(inspectorJSON(out)).To(HaveKeyWithValue("resources", ConsistOf(HaveKeyWithValue("uri", exposedURI))))

		out, err = testmcp.Inspector(callCtx, endpoint, "--transport", "http", "--method", "resources/read", "--uri", exposedURI)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(inspectorJSON(out)).To(HaveKeyWithValue("contents", ConsistOf(SatisfyAll(
			HaveKeyWithValue("uri", exposedURI), HaveKeyWithValue("text", "buy milk")))))
		Expect(up.readURIs()).To(Equal([]string{"test://notes/today"}))
	})

	It("offers resources as served: a URI two servers list from the first by name, a template's expansion from its server", func() {
		ns := env.Namespace()
		alpha, beta := startSurfaceUpstream("alpha"), startSurfaceUpstream("beta")
		alpha.addResource("test://shared/x", "alpha's x")
		beta.addResource("test://shared/x", "beta's x")
		beta.addTemplate("test://items/{id}")
		readyServer(ns, "alpha", alpha.url)
		readyServer(ns, "beta", beta.url)
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "served"},
			Spec: mcpv1alpha1.ToolCollectionSpec{
				// Listed out of name order: the name order decides.
				Servers:   mcpv1alpha1.ServerSelection{Names: []string{"beta", "alpha"}},
				Resources: &mcpv1alpha1.ResourceSelection{URIs: mcpv1alpha1.ResourceURIsAsServed},
			}}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())
		// The endpoint exists once the catalog's cache holds the collection.
		Eventually(func() int { return get("/v1/namespaces/" + ns + "/toolcollections/served/tools").code }).Should(Equal(http.StatusOK))
		s := callerOf(catalog.URL+"/v1/namespaces/"+ns+"/toolcollections/served/mcp", "").session

		By("resources/list lists the shared URI once, and the template as served")
		Eventually(resourceURIs(s)).Should(Equal([]string{"test://shared/x"}))
		Eventually(templateURIs(s)).Should(Equal([]string{"test://items/{id}"}))

		By("the REST listing names the server each comes from")
		r := get("/v1/namespaces/" + ns + "/toolcollections/served/resources")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		// The shared URI comes from alpha, and beta's is the conflict.
		Expect(r.json()["conflicts"]).To(Equal([]any{map[string]any{"name": "test://shared/x", "servers": []any{ns + "/alpha", ns + "/beta"}}}))
		Expect(r.json()["resources"]).To(ConsistOf(SatisfyAll(
			HaveKeyWithValue("server", ns+"/alpha"), HaveKeyWithValue("original", "test://shared/x"),
			HaveKeyWithValue("definition", HaveKeyWithValue("uri", "test://shared/x")))))
		Expect(r.json()["resourceTemplates"]).To(ConsistOf(SatisfyAll(
			HaveKeyWithValue("server", ns+"/beta"), HaveKeyWithValue("original", "test://items/{id}"),
			HaveKeyWithValue("definition", HaveKeyWithValue("uriTemplate", "test://items/{id}")))))

		By("reading the shared URI reaches the first server")
		read, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://shared/x"})
		Expect(err).NotTo(HaveOccurred())
		Expect(read.Contents).To(HaveLen(1))
		Expect(read.Contents[0].Text).To(Equal("alpha's x"))
		Expect(read.Contents[0].URI).To(Equal("test://shared/x"), "as served: not rewritten")

		By("reading a template's expansion reaches the template's server")
		read, err = s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://items/7"})
		Expect(err).NotTo(HaveOccurred())
		Expect(read.Contents).To(HaveLen(1))
		Expect(read.Contents[0].Text).To(Equal("beta read test://items/7"))
		Expect(read.Contents[0].URI).To(Equal("test://items/7"))

		Expect(alpha.readURIs()).To(Equal([]string{"test://shared/x"}))
		Expect(beta.readURIs()).To(Equal([]string{"test://items/7"}), "beta was never asked for the shared URI")

		By("an exposed URI means nothing here")
		_, err = s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://alpha." + ns + "/shared/x"})
		Expect(err).To(MatchError(ContainSubstring("not found")))
	})
})
