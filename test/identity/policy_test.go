package identity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

// The policy specs' collection, its server and the server's tools as the
// collection exposes them: one read-only, one destructive that only the
// provider's on-call group may call, and one, not destructive, that
// writes a note for the owner its arguments name, which only that owner
// may do.
const (
	guardedCollection = "guarded"
	guardedServer     = "ops"
	statusTool        = "mcp_ops_read_status"
	restartTool       = "mcp_ops_restart"
	noteTool          = "mcp_ops_write_note"

	// The rules' names and what a caller they deny is told.
	restartRule   = "restart-for-oncall"
	noteRule      = "note-owner"
	deniedRestart = "denied by policy rule " + restartRule + ": restarts are for the provider's on-call group"
	deniedNote    = "denied by policy rule " + noteRule + ": a note is written by its owner only"

	// oncallScope is the scope alice asks for; the policy catalog maps
	// the token's scope claim to a group, oncallGroup.
	oncallScope  = "oncall"
	groupsPrefix = "oidc:"
	oncallGroup  = groupsPrefix + oncallScope
	// robotName is a ServiceAccount that calls through the TokenReview
	// catalog.
	robotName = "policy-robot"
)

// A collection's spec.policy (docs/policy.md) decides with the identity
// the catalog authenticated: caller.issuer, caller.name and caller.groups
// of a JWT of the suite's provider, mapped by a catalog that checks the
// JWTs itself, against a TokenReview caller, whose issuer is empty.
var _ = Describe("A collection's policy with callers of an OpenID provider", Ordered, ContinueOnFailure, func() {
	var (
		// policyCatalog checks the provider's JWTs itself, like
		// oidcCatalog, and maps their scope claim to groups (the provider
		// puts no other list in its tokens).
		policyCatalog *served
		reached       map[string]*atomic.Int64
		// alice's token carries the oncall scope, bob's none; both are
		// meant for either catalog. robot is a ServiceAccount's token.
		alice, bob, robot     string
		aliceUser, bobUser    string
		robotUser, aliceKube  string
		guardedPath, mcpGuard string
	)

	BeforeAll(func() {
		started := time.Now()
		aliceUser, bobUser = provider.Issuer+"#alice", provider.Issuer+"#bob"
		aliceKube = "idp:alice" // alice's JWT as the API server maps it
		robotUser = "system:serviceaccount:" + ns + ":" + robotName
		guardedPath = "/v1/namespaces/" + ns + "/toolcollections/" + guardedCollection
		mcpGuard = guardedPath + "/mcp"

		By("a third catalog, behind the OIDC catalog's public URL, mapping the scope claim to groups")
		ln, _ := listen()
		policyCatalog = serve(ln, "oidc-policy", toolcatalog.Options{Auth: toolcatalog.AuthOIDC, PublicURL: oidcCatalog.URL,
			OIDC: &toolcatalog.OIDCOptions{IssuerURL: provider.Issuer, HTTPClient: provider.HTTPClient(),
				GroupsClaim: "scope", GroupsPrefix: groupsPrefix}})

		By("an upstream with three tools, and a collection of it with a policy over the callers' identity")
		up := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		reached = map[string]*atomic.Int64{}
		addTool := func(name, schema string, hints mcp.ToolAnnotation) {
			n := &atomic.Int64{}
			reached[name] = n
			up.MCP.AddTool(mcp.Tool{Name: name, Description: "The ops tool " + name + ".", RawInputSchema: json.RawMessage(schema), Annotations: hints},
				func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					n.Add(1)
					args, _ := json.Marshal(req.GetArguments())
					return mcp.NewToolResultText(name + " " + string(args)), nil
				})
		}
		addTool("read_status", `{"type":"object"}`, mcp.ToolAnnotation{ReadOnlyHint: ptr.To(true)})
		addTool("restart", `{"type":"object"}`, mcp.ToolAnnotation{ReadOnlyHint: ptr.To(false), DestructiveHint: ptr.To(true)})
		addTool("write_note", `{"type":"object","properties":{"owner":{"type":"string"},"text":{"type":"string"}},"required":["owner"]}`,
			mcp.ToolAnnotation{ReadOnlyHint: ptr.To(false), DestructiveHint: ptr.To(false)})
		srv := env.CreateServer(ns, guardedServer, up.URL())
		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: guardedCollection},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{guardedServer}},
				Policy: &mcpv1alpha1.ToolPolicy{Mode: mcpv1alpha1.PolicyEnforce, Default: mcpv1alpha1.PolicyAllow,
					Rules: []mcpv1alpha1.PolicyRule{
						{Name: restartRule, Effect: mcpv1alpha1.PolicyDeny,
							Match: &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{DestructiveHint: ptr.To(true)},
								Servers: []string{guardedServer}},
							Expression: fmt.Sprintf(`!(caller.issuer == %q && %q in caller.groups)`, provider.Issuer, oncallGroup),
							Message:    "restarts are for the provider's on-call group"},
						{Name: noteRule, Effect: mcpv1alpha1.PolicyDeny, Match: &mcpv1alpha1.PolicyMatch{Tools: []string{"mcp_ops_write_*"}},
							Expression: "arguments.owner != caller.name", Message: "a note is written by its owner only"},
					}}}}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, tc))).To(Succeed()) })

		By("the callers: two clients of the provider, and a ServiceAccount, all bound to catalog-caller")
		alice = tokenWithScope("agent-a", oncallScope)
		bob = token("agent-b")
		robot = serviceAccountToken(robotName)
		bindUser("policy-alice", aliceUser)
		bindUser("policy-bob", bobUser)
		bindUser("policy-alice-kube", aliceKube)
		bindServiceAccount("policy-robot", robotName)

		// alice may call every tool: once she is listed them all, the
		// collection is served and her binding reached the authorizer.
		Eventually(func() []string { return menuNames(policyCatalog.URL, guardedPath, alice) }).
			Should(ConsistOf(statusTool, restartTool, noteTool))
		Eventually(func() int { return call(policyCatalog.URL, http.MethodGet, guardedPath+"/tools", bob, "").Code }).
			Should(Equal(http.StatusOK))
		for _, bearer := range []string{alice, robot} {
			Eventually(func() int { return call(kubeCatalog.URL, http.MethodGet, guardedPath+"/tools", bearer, "").Code }).
				Should(Equal(http.StatusOK))
		}
		GinkgoWriter.Printf("timing: the policy collection served in %s\n", time.Since(started).Round(time.Millisecond))
	})

	It("lists each caller only the tools its identity may call, over REST and MCP", func() {
		By("alice, of the provider's on-call group, is listed every tool")
		Expect(menuNames(policyCatalog.URL, guardedPath, alice)).To(ConsistOf(statusTool, restartTool, noteTool))
		By("bob, of no group, is not listed the restart; the note, decided by its arguments, is listed to all")
		Expect(menuNames(policyCatalog.URL, guardedPath, bob)).To(ConsistOf(statusTool, noteTool))
		By("over a TokenReview the same JWT names idp:alice with no issuer and no provider group: no restart")
		Expect(menuNames(kubeCatalog.URL, guardedPath, alice)).To(ConsistOf(statusTool, noteTool))
		By("nor for a ServiceAccount")
		Expect(menuNames(kubeCatalog.URL, guardedPath, robot)).To(ConsistOf(statusTool, noteTool))

		By("a stock MCP client is listed the same tools")
		Expect(guardedMCP(policyCatalog.URL+mcpGuard, alice, "", nil).Tools).To(ConsistOf(statusTool, restartTool, noteTool))
		Expect(guardedMCP(policyCatalog.URL+mcpGuard, bob, "", nil).Tools).To(ConsistOf(statusTool, noteTool))
		Expect(guardedMCP(kubeCatalog.URL+mcpGuard, robot, "", nil).Tools).To(ConsistOf(statusTool, noteTool))
	})

	It("refuses bob's restart over REST with 403 and the rule's message, and over MCP with an isError result", func() {
		before := reached["restart"].Load()

		denied := call(policyCatalog.URL, http.MethodPost, guardedPath+"/execute", bob, `{"name":"`+restartTool+`","arguments":{}}`)
		Expect(denied.Code).To(Equal(http.StatusForbidden), denied.Body)
		Expect(denied.Error).To(Equal(deniedRestart))

		over := guardedMCP(policyCatalog.URL+mcpGuard, bob, restartTool, map[string]any{})
		Expect(over.Call.IsError).To(BeTrue())
		Expect(over.Call.Text).To(Equal(deniedRestart))

		By("the same JWT over a TokenReview, and a ServiceAccount, are refused alike: no issuer, no provider group")
		for _, bearer := range []string{alice, robot} {
			denied := call(kubeCatalog.URL, http.MethodPost, guardedPath+"/execute", bearer, `{"name":"`+restartTool+`","arguments":{}}`)
			Expect(denied.Code).To(Equal(http.StatusForbidden), denied.Body)
			Expect(denied.Error).To(Equal(deniedRestart))
		}
		Expect(reached["restart"].Load()).To(Equal(before), "no denied call reached the server")
	})

	It("lets alice restart over REST and MCP, and the calls reach the server", func() {
		before := reached["restart"].Load()
		executed := call(policyCatalog.URL, http.MethodPost, guardedPath+"/execute", alice, `{"name":"`+restartTool+`","arguments":{}}`)
		Expect(executed.Code).To(Equal(http.StatusOK), executed.Body)
		Expect(outputOf(executed)).To(Equal("restart {}"))

		over := guardedMCP(policyCatalog.URL+mcpGuard, alice, restartTool, map[string]any{})
		Expect(over.Call.IsError).To(BeFalse(), over.Call.Text)
		Expect(over.Call.Text).To(Equal("restart {}"))
		Expect(reached["restart"].Load()).To(Equal(before + 2))
	})

	It("decides the note by its arguments against the caller's mapped name", func() {
		before := reached["write_note"].Load()
		note := func(owner string) string {
			return fmt.Sprintf(`{"name":%q,"arguments":{"owner":%q,"text":"hello"}}`, noteTool, owner)
		}

		By("bob writing alice's note is refused, over REST and MCP")
		denied := call(policyCatalog.URL, http.MethodPost, guardedPath+"/execute", bob, note(aliceUser))
		Expect(denied.Code).To(Equal(http.StatusForbidden), denied.Body)
		Expect(denied.Error).To(Equal(deniedNote))
		over := guardedMCP(policyCatalog.URL+mcpGuard, bob, noteTool, map[string]any{"owner": aliceUser, "text": "hello"})
		Expect(over.Call.IsError).To(BeTrue())
		Expect(over.Call.Text).To(Equal(deniedNote))
		By("the bare subject is not the mapped name: the provider's users are named with its issuer")
		denied = call(policyCatalog.URL, http.MethodPost, guardedPath+"/execute", bob, note("bob"))
		Expect(denied.Code).To(Equal(http.StatusForbidden), denied.Body)
		Expect(denied.Error).To(Equal(deniedNote))
		Expect(reached["write_note"].Load()).To(Equal(before))

		By("each caller writing its own note is let through, whatever its issuer")
		executed := call(policyCatalog.URL, http.MethodPost, guardedPath+"/execute", bob, note(bobUser))
		Expect(executed.Code).To(Equal(http.StatusOK), executed.Body)
		Expect(outputOf(executed)).To(Equal(fmt.Sprintf(`write_note {"owner":%q,"text":"hello"}`, bobUser)))
		over = guardedMCP(policyCatalog.URL+mcpGuard, alice, noteTool, map[string]any{"owner": aliceUser, "text": "hello"})
		Expect(over.Call.IsError).To(BeFalse(), over.Call.Text)
		executed = call(kubeCatalog.URL, http.MethodPost, guardedPath+"/execute", robot, note(robotUser))
		Expect(executed.Code).To(Equal(http.StatusOK), executed.Body)
		Expect(reached["write_note"].Load()).To(Equal(before + 3))
	})

	It("audits each denial with the user, the issuer and the deciding rule, and no token", func() {
		denial := func(via, tool, rule string) OmegaMatcher {
			return And(HaveKeyWithValue("via", via), HaveKeyWithValue("tool", tool),
				HaveKeyWithValue("collection", ns+"/"+guardedCollection),
				HaveKeyWithValue("outcome", "policy_denied"),
				HaveKeyWithValue("policy", map[string]any{"decision": "deny", "rule": rule, "mode": "Enforce"}))
		}
		// The trail is flushed a moment after each call.
		lines := func(trail *testenv.LockedBuffer, user string) func() []map[string]any {
			return func() []map[string]any { return auditLines(trail, user) }
		}
		Eventually(lines(policyCatalog.Audit, bobUser)).Should(And(
			ContainElement(And(denial("rest", restartTool, restartRule),
				HaveKeyWithValue("issuer", provider.Issuer), HaveKeyWithValue("status", BeNumerically("==", http.StatusForbidden)))),
			ContainElement(And(denial("mcp", restartTool, restartRule), HaveKeyWithValue("issuer", provider.Issuer))),
			ContainElement(And(denial("rest", noteTool, noteRule), HaveKeyWithValue("issuer", provider.Issuer))),
			ContainElement(And(denial("mcp", noteTool, noteRule), HaveKeyWithValue("issuer", provider.Issuer))),
		))

		By("alice's allowed restart: no rule applied, the default decided")
		Eventually(lines(policyCatalog.Audit, aliceUser)).Should(ContainElement(And(
			HaveKeyWithValue("tool", restartTool), HaveKeyWithValue("outcome", "success"),
			HaveKeyWithValue("issuer", provider.Issuer), HaveKeyWithValue("groups", ConsistOf(oncallGroup)),
			HaveKeyWithValue("policy", map[string]any{"decision": "allow", "mode": "Enforce"}))))

		By("TokenReview callers' denials carry no issuer")
		for _, user := range []string{aliceKube, robotUser} {
			Eventually(lines(kubeCatalog.Audit, user)).Should(ContainElement(And(denial("rest", restartTool, restartRule), Not(HaveKey("issuer")))), user)
		}

		By("no token in the audit trails")
		for name, trail := range map[string]string{"oidc-policy": policyCatalog.Audit.String(), "kubernetes": kubeCatalog.Audit.String()} {
			for _, t := range []string{alice, bob, robot} {
				Expect(strings.Contains(trail, t)).To(BeFalse(), "a token (%.10s…) in the %s audit trail", t, name)
			}
			Expect(jwtLike.FindString(trail)).To(BeEmpty(), "token material in the %s audit trail", name)
		}
	})
})

// tokenWithScope gets a client_credentials token with scopes.
func tokenWithScope(clientID string, scopes ...string) string {
	t, err := provider.ClientCredentialsToken(ctx, clientID, secrets[clientID], scopes...)
	Expect(err).NotTo(HaveOccurred())
	used.add(t)
	return t
}

// serviceAccountToken creates a ServiceAccount in ns, deleted when the
// container ends, and gets a token for it from the TokenRequest API, as
// a pod would.
func serviceAccountToken(name string) string {
	t := env.ServiceAccountToken(ns, name, 10*time.Minute)
	used.add(t)
	return t
}

// bindServiceAccount binds catalog-caller to a ServiceAccount of ns.
func bindServiceAccount(name, serviceAccount string) {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "catalog-caller"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: serviceAccount}}}
	Expect(env.Client.Create(ctx, rb)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, rb))).To(Succeed()) })
}

// menuNames are the names of the tools a collection's REST menu (base is
// the collection's path) lists bearer; nil unless it answers 200.
func menuNames(url, base, bearer string) []string {
	menu := call(url, http.MethodGet, base+"/tools", bearer, "")
	if menu.Code != http.StatusOK {
		GinkgoWriter.Printf("the menu of %s answered %d: %s\n", base, menu.Code, menu.Body)
		return nil
	}
	// The default format is OpenAI's: {"type":"function","function":{"name":…}}.
	var body struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	Expect(json.Unmarshal([]byte(menu.Body), &body)).To(Succeed(), menu.Body)
	names := []string{}
	for _, t := range body.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// guardedSession is what a stock MCP client was listed and, if it called
// a tool, the call's result.
type guardedSession struct {
	Tools []string
	Call  toolResult
}

// guardedMCP lists the tools of an MCP endpoint with a stock MCP client
// (mcp-go), bearer as its Authorization, and calls tool with arguments
// unless tool is empty.
func guardedMCP(endpoint, bearer, tool string, arguments map[string]any) guardedSession {
	GinkgoHelper()
	c, callCtx, done := mcpSession(endpoint, bearer)
	defer done()
	listed, err := c.ListTools(callCtx, mcp.ListToolsRequest{})
	Expect(err).NotTo(HaveOccurred())
	var s guardedSession
	for _, t := range listed.Tools {
		s.Tools = append(s.Tools, t.Name)
	}
	if tool == "" {
		return s
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = arguments
	result, err := c.CallTool(callCtx, req)
	Expect(err).NotTo(HaveOccurred())
	var texts []string
	for _, content := range result.Content {
		if text, ok := mcp.AsTextContent(content); ok {
			texts = append(texts, text.Text)
		}
	}
	s.Call = toolResult{IsError: result.IsError, Text: strings.Join(texts, "\n")}
	return s
}
