package toolcatalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/policy"
	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// The tools of the policy specs' upstream, as a collection exposes them:
// one read-only, one destructive, and two that give no annotations, which
// a policy reads with MCP's defaults (destructive, not read-only).
const (
	opsReadLogs     = "mcp_ops_read_logs"
	opsDropTable    = "mcp_ops_drop_table"
	opsUpdateTicket = "mcp_ops_update_ticket"
	opsRestart      = "mcp_ops_restart"
)

// The messages of opsPolicy's denials, as callers are told them.
const (
	deniedTicket      = "denied by policy rule ticket-owner: a ticket is updated by its owner only"
	deniedDestructive = "denied by policy rule destructive-for-alice: destructive tools are for alice"
	deniedInvalid     = "denied by policy: the collection's spec.policy does not compile and no earlier policy did; see its PolicyInvalid condition"
)

// opsUpstream is a real MCP server with the four tools, counting the
// calls that reach each.
type opsUpstream struct {
	*testmcp.Server
	calls map[string]*atomic.Int64
}

func startOpsUpstream() *opsUpstream {
	srv := testenv.StartMCP(testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
	up := &opsUpstream{Server: srv, calls: map[string]*atomic.Int64{}}
	add := func(name, description, schema string, hints mcp.ToolAnnotation) {
		n := &atomic.Int64{}
		up.calls[name] = n
		tool := mcp.Tool{Name: name, Description: description, RawInputSchema: json.RawMessage(schema), Annotations: hints}
		srv.MCP.AddTool(tool, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n.Add(1)
			args, _ := json.Marshal(req.GetArguments())
			return mcp.NewToolResultText(name + " " + string(args)), nil
		})
	}
	add("read_logs", "Reads the last lines of the service's logs.", `{"type":"object","properties":{"lines":{"type":"integer"}}}`,
		mcp.ToolAnnotation{ReadOnlyHint: ptr.To(true)})
	add("drop_table", "Drops a database table and every row in it.", `{"type":"object","properties":{"table":{"type":"string"}}}`,
		mcp.ToolAnnotation{ReadOnlyHint: ptr.To(false), DestructiveHint: ptr.To(true)})
	add("update_ticket", "Updates the status of a support ticket.",
		`{"type":"object","properties":{"ticket":{"type":"string"},"owner":{"type":"string"},"status":{"type":"string"}}}`, mcp.ToolAnnotation{})
	add("restart", "Restarts the service's pods.", `{"type":"object"}`, mcp.ToolAnnotation{})
	return up
}

// reached is how many calls of a tool (its name upstream) reached the
// server.
func (u *opsUpstream) reached(tool string) int64 { return u.calls[tool].Load() }

// opsPolicy lets everyone read, each caller update only the tickets they
// own (decided per call, from the arguments), the ServiceAccounts of
// namespace ops restart, and only alice of namespace ns anything else
// destructive.
func opsPolicy(ns, ops string) *mcpv1alpha1.ToolPolicy {
	return &mcpv1alpha1.ToolPolicy{Rules: []mcpv1alpha1.PolicyRule{
		{Name: "read-only-for-all", Effect: mcpv1alpha1.PolicyAllow,
			Match: &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{ReadOnlyHint: ptr.To(true)}}},
		{Name: "ticket-owner", Effect: mcpv1alpha1.PolicyDeny, Match: &mcpv1alpha1.PolicyMatch{Tools: []string{opsUpdateTicket}},
			Expression: "arguments.owner != caller.name", Message: "a ticket is updated by its owner only"},
		{Name: "tickets-for-all", Effect: mcpv1alpha1.PolicyAllow, Match: &mcpv1alpha1.PolicyMatch{Tools: []string{"mcp_ops_update_*"}}},
		{Name: "ops-restart", Effect: mcpv1alpha1.PolicyAllow, Match: &mcpv1alpha1.PolicyMatch{Tools: []string{opsRestart}, Servers: []string{"ops"}},
			Expression: `"system:serviceaccounts:` + ops + `" in caller.groups`},
		{Name: "destructive-for-alice", Effect: mcpv1alpha1.PolicyDeny,
			Match:      &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{DestructiveHint: ptr.To(true)}},
			Expression: `caller.name != "system:serviceaccount:` + ns + `:alice"`, Message: "destructive tools are for alice"},
	}}
}

// policyCaller is a ServiceAccount calling the catalog with its token.
type policyCaller struct {
	// name is the user the catalog authenticates, as a policy reads it.
	name, token string
}

func (p policyCaller) bearer() []string { return []string{"Authorization", "Bearer " + p.token} }
func (p policyCaller) headers() map[string]string {
	return map[string]string{"Authorization": "Bearer " + p.token}
}

// policyMenu is a collection's REST menu as a caller was served it.
type policyMenu struct {
	code           int
	etag, revision string
	names          []string
}

// menuAt reads a collection's REST menu (base is the collection's path)
// from the catalog at url.
func menuAt(url, base string, who policyCaller, headers ...string) policyMenu {
	r := doAt(url, http.MethodGet, base+"/tools", "", append(who.bearer(), headers...)...)
	m := policyMenu{code: r.code, etag: r.header.Get("ETag")}
	if r.code == http.StatusOK {
		var body struct {
			Revision string            `json:"revision"`
			Tools    []json.RawMessage `json:"tools"`
		}
		Expect(json.Unmarshal(r.body, &body)).To(Succeed(), string(r.body))
		m.revision, m.names = body.Revision, searchAnswer{Tools: body.Tools}.names()
	}
	return m
}

// ticketCall is an execute request updating a ticket as owner.
func ticketCall(ticket, owner string) string {
	return fmt.Sprintf(`{"name":%q,"arguments":{"ticket":%q,"owner":%q}}`, opsUpdateTicket, ticket, owner)
}

// ticketOutput is what the upstream answers a ticket update.
func ticketOutput(ticket, owner string) string {
	return fmt.Sprintf(`update_ticket {"owner":%q,"ticket":%q}`, owner, ticket)
}

// policyAuditLines reads an audit trail's lines so far.
func policyAuditLines(trail *testenv.LockedBuffer) func(Gomega) []AuditRecord {
	return func(g Gomega) []AuditRecord {
		var lines []AuditRecord
		for _, l := range strings.Split(strings.TrimSpace(trail.String()), "\n") {
			if l == "" {
				continue
			}
			var rec AuditRecord
			g.Expect(json.Unmarshal([]byte(l), &rec)).To(Succeed(), l)
			lines = append(lines, rec)
		}
		return lines
	}
}

// decidedBy matches an audit line whose policy decision is the one given.
func decidedBy(decision, rule, mode string) OmegaMatcher {
	return WithTransform(func(r AuditRecord) *AuditPolicy { return r.Policy },
		Equal(&AuditPolicy{Decision: decision, Rule: rule, Mode: mode}))
}

// plainCall sends a request to the catalog without Gomega, for
// goroutines; headers come as name, value pairs.
func plainCall(url, method, path, body, token string, headers ...string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw, err
}

var _ = Describe("A collection's policy", func() {
	var (
		ns, ops           string
		up                *opsUpstream
		alice, bob, carol policyCaller
		trail             *testenv.LockedBuffer
		cat               *Catalog
		url               string
		all               []string
	)

	BeforeEach(func() {
		env.InstallCatalogRoles()
		ns, ops = env.Namespace(), env.Namespace()
		up = startOpsUpstream()
		readyServer(ns, "ops", up.URL(), func(s *mcpv1alpha1.MCPServer) { s.Spec.MaxConcurrentCalls = ptr.To[int32](100) })
		alice = policyCaller{name: "system:serviceaccount:" + ns + ":alice", token: serviceAccountToken(ns, "alice")}
		bind(ns, "alice", "catalog-caller", "alice")
		bob = policyCaller{name: "system:serviceaccount:" + ns + ":bob", token: serviceAccountToken(ns, "bob")}
		bind(ns, "bob", "catalog-caller", "bob")
		// carol is a ServiceAccount of namespace ops, allowed the collection
		// in ns: the policy tells her apart by her group.
		carol = policyCaller{name: "system:serviceaccount:" + ops + ":carol", token: serviceAccountToken(ops, "carol")}
		Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carol"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "catalog-caller"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ops, Name: "carol"}}})).To(Succeed())
		trail = &testenv.LockedBuffer{}
		var srv *httptest.Server
		cat, srv = newCatalog(Options{Auth: AuthKubernetes, Audit: trail})
		url = srv.URL
		all = []string{opsDropTable, opsReadLogs, opsRestart, opsUpdateTicket}
	})

	// createCollection creates a collection of the ops server with a
	// policy, and returns its path.
	createCollection := func(name string, exposure mcpv1alpha1.Exposure, alwaysInclude []string, p *mcpv1alpha1.ToolPolicy) string {
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"ops"}},
				Exposure: exposure, AlwaysInclude: alwaysInclude, Policy: p}}
		Expect(env.Client.Create(ctx, tc)).To(Succeed())
		return "/v1/namespaces/" + ns + "/toolcollections/" + name
	}
	// collectionOf creates one and waits until alice, who may call every
	// tool, is served them all.
	collectionOf := func(name string, exposure mcpv1alpha1.Exposure, alwaysInclude []string, p *mcpv1alpha1.ToolPolicy) string {
		base := createCollection(name, exposure, alwaysInclude, p)
		Eventually(func() []string { return menuAt(url, base, alice).names }).Should(ConsistOf(all), "alice's menu of %s", name)
		return base
	}
	menuOf := func(base string, who policyCaller, headers ...string) policyMenu {
		return menuAt(url, base, who, headers...)
	}
	execute := func(base string, who policyCaller, body string) response {
		return callTo(url, base+"/execute", body, who.bearer()...)
	}
	// editCollection changes a collection's spec with a merge patch: the
	// controller writes its status meanwhile.
	editCollection := func(name string, edit func(*mcpv1alpha1.ToolCollectionSpec)) {
		var tc mcpv1alpha1.ToolCollection
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &tc)).To(Succeed())
		before := tc.DeepCopy()
		edit(&tc.Spec)
		Expect(env.Client.Patch(ctx, &tc, client.MergeFrom(before))).To(Succeed())
	}
	fetchCollection := func(name string) *mcpv1alpha1.ToolCollection {
		var tc mcpv1alpha1.ToolCollection
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &tc)).To(Succeed())
		return &tc
	}
	decisions := func(collection, rule, decision, mode string) float64 {
		return testutil.ToFloat64(policyDecisions.WithLabelValues(ns+"/"+collection, rule, decision, mode))
	}

	It("holds an agent bound to catalog-collection-caller to the policy: the global and server menus give it nothing", func() {
		base := collectionOf("kit", "", nil, opsPolicy(ns, ops))
		dave := policyCaller{name: "system:serviceaccount:" + ns + ":dave", token: serviceAccountToken(ns, "dave")}
		bind(ns, "dave", "catalog-collection-caller", "dave")
		dropCall := `{"name":"` + opsDropTable + `","arguments":{"table":"t"}}`

		By("through the collection, the policy decides")
		Eventually(func() []string { return menuOf(base, dave).names }).Should(ConsistOf(opsReadLogs, opsUpdateTicket))
		r := execute(base, dave, dropCall)
		Expect(r.code).To(Equal(http.StatusForbidden))
		Expect(r.json()["error"]).To(Equal(deniedDestructive))

		By("around it, nothing: no server to list, no server to call")
		global := doAt(url, http.MethodGet, "/v1/tools?namespace="+ns, "", dave.bearer()...)
		Expect(global.code).To(Equal(http.StatusOK))
		Expect(global.json()["tools"]).To(BeEmpty())
		Expect(doAt(url, http.MethodGet, "/v1/namespaces/"+ns+"/mcpservers/ops/tools", "", dave.bearer()...).code).To(Equal(http.StatusForbidden))
		direct := callTo(url, "/v1/execute", dropCall, dave.bearer()...)
		Expect(direct.code).To(Equal(http.StatusForbidden))
		Expect(direct.json()["error"]).To(ContainSubstring("lacks execute on mcpservers/ops"))
		Expect(up.reached("drop_table")).To(BeZero())

		By("catalog-caller, which grants servers too, calls around the policy: bind it to operators, not to agents")
		Expect(callTo(url, "/v1/execute", dropCall, bob.bearer()...).code).To(Equal(http.StatusOK))
		Expect(up.reached("drop_table")).To(BeEquivalentTo(1))
	})

	It("lists each caller only the tools it may call, over REST and MCP, each menu with an ETag of its own", func() {
		base := collectionOf("kit", "", nil, opsPolicy(ns, ops))
		want := map[policyCaller][]string{
			alice: all,
			bob:   {opsReadLogs, opsUpdateTicket},
			carol: {opsReadLogs, opsRestart, opsUpdateTicket},
		}
		callers := []policyCaller{alice, bob, carol}
		menus := map[policyCaller]policyMenu{}
		for _, who := range callers {
			m := menuOf(base, who)
			Expect(m.code).To(Equal(http.StatusOK))
			Expect(m.names).To(ConsistOf(want[who]), who.name)
			Expect(m.etag).To(MatchRegexp(`^"[0-9a-f]{64}"$`))
			Expect(m.etag).To(Equal(`"`+m.revision+`"`), "the body's revision is the ETag")
			menus[who] = m
		}
		Expect(menus[alice].etag).NotTo(Equal(menus[bob].etag))
		Expect(menus[alice].etag).NotTo(Equal(menus[carol].etag))
		Expect(menus[bob].etag).NotTo(Equal(menus[carol].etag))

		By("each caller's ETag answers 304 to that caller only")
		for _, who := range callers {
			again := doAt(url, http.MethodGet, base+"/tools", "", append(who.bearer(), "If-None-Match", menus[who].etag)...)
			Expect(again.code).To(Equal(http.StatusNotModified), who.name)
			Expect(again.body).To(BeEmpty())
			for _, other := range callers {
				if other == who {
					continue
				}
				m := menuOf(base, who, "If-None-Match", menus[other].etag)
				Expect(m.code).To(Equal(http.StatusOK), "%s with %s's ETag", who.name, other.name)
				Expect(m.names).To(ConsistOf(want[who]))
				Expect(m.etag).To(Equal(menus[who].etag))
			}
		}

		By("a caller's own menu gzipped is the same body")
		plain := doAt(url, http.MethodGet, base+"/tools", "", bob.bearer()...)
		zipped := doAt(url, http.MethodGet, base+"/tools", "", append(bob.bearer(), "Accept-Encoding", "gzip")...)
		Expect(zipped.code).To(Equal(http.StatusOK))
		Expect(zipped.header.Get("Content-Encoding")).To(Equal("gzip"))
		Expect(zipped.header.Get("ETag")).To(Equal(menus[bob].etag))
		zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
		Expect(err).NotTo(HaveOccurred())
		unzipped, err := io.ReadAll(zr)
		Expect(err).NotTo(HaveOccurred())
		Expect(unzipped).To(Equal(plain.body))

		By("a catalog that authenticates nobody serves the anonymous caller's menu: no name, no groups, as bob's")
		anonymous := get(base + "/tools")
		Expect(anonymous.code).To(Equal(http.StatusOK))
		Expect(searchAnswer{Tools: anonymousTools(anonymous)}.names()).To(ConsistOf(opsReadLogs, opsUpdateTicket))
		Expect(anonymous.header.Get("ETag")).To(Equal(menus[bob].etag), "a replica decides as every other one")

		By("the MCP endpoint lists each caller the same tools, and keeps no page one caller could be served another's")
		for _, who := range append(callers, alice) {
			s := connectMCP(url+base+"/mcp", who.headers(), nil)
			Expect(listedNames(s)).To(ConsistOf(want[who]), who.name)
		}
		h := cat.mcp.handlerFor(viewKey{kind: collectionView, namespace: ns, name: "kit"})
		h.mu.Lock()
		Expect(h.listed.pages).To(BeEmpty())
		h.mu.Unlock()
	})

	It("never finds a caller a tool hidden from it, over REST search or find_tools", func() {
		p := opsPolicy(ns, ops)
		base := collectionOf("kit", "", nil, p)
		finder := collectionOf("finder", mcpv1alpha1.ExposureSearch, []string{opsReadLogs, opsDropTable}, p)
		search := func(base string, who policyCaller, query string) searchAnswer {
			return searchOf(doAt(url, http.MethodGet, base+"/tools/search?q="+q(query), "", who.bearer()...))
		}

		By("REST search")
		for _, path := range []string{base, finder} {
			Expect(search(path, alice, "drop a database table").names()[0]).To(Equal(opsDropTable), path)
			for _, who := range []policyCaller{bob, carol} {
				found := search(path, who, "drop a database table")
				Expect(found.names()).NotTo(ContainElement(opsDropTable), who.name)
				Expect(found.Revision).To(Equal(menuOf(path, who).revision), "the revision of the menu %s is served", who.name)
			}
			Expect(search(path, carol, "restart the service's pods").names()[0]).To(Equal(opsRestart))
			Expect(search(path, bob, "restart the service's pods").names()).NotTo(ContainElement(opsRestart))
			Expect(search(path, bob, "read the logs").names()).To(HaveExactElements(opsReadLogs), "bob's own tools are found")
		}

		By("MCP, exposure Search: tools/list, find_tools")
		sessions := map[policyCaller]*mcpclient.Session{}
		for _, who := range []policyCaller{alice, bob, carol} {
			sessions[who] = connectMCP(url+finder+"/mcp", who.headers(), nil)
		}
		Expect(listedNames(sessions[alice])).To(ConsistOf("find_tools", "call_tool", opsReadLogs, opsDropTable))
		Expect(listedNames(sessions[bob])).To(ConsistOf("find_tools", "call_tool", opsReadLogs), "alwaysInclude keeps only bob's tools")
		Expect(listedNames(sessions[carol])).To(ConsistOf("find_tools", "call_tool", opsReadLogs))
		find := func(who policyCaller, query string) searchAnswer {
			found, err := sessions[who].CallTool(ctx, "find_tools", json.RawMessage(fmt.Sprintf(`{"query":%q}`, query)), mcpclient.CallOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(found.IsError).To(BeFalse(), string(found.StructuredContent))
			var answer searchAnswer
			Expect(json.Unmarshal(found.StructuredContent, &answer)).To(Succeed())
			return answer
		}
		Expect(find(alice, "drop a database table").names()[0]).To(Equal(opsDropTable))
		for _, who := range []policyCaller{bob, carol} {
			found := find(who, "drop a database table")
			Expect(found.names()).NotTo(ContainElement(opsDropTable), who.name)
			Expect(found.Revision).To(Equal(menuOf(finder, who).revision), who.name)
		}
		Expect(find(carol, "restart the service's pods").names()[0]).To(Equal(opsRestart))
		Expect(find(bob, "restart the service's pods").names()).NotTo(ContainElement(opsRestart))
	})

	It("decides a rule on the arguments at each call, over REST, tools/call and call_tool, and keeps the tool listed", func() {
		p := opsPolicy(ns, ops)
		base := collectionOf("kit", "", nil, p)
		finder := collectionOf("finder", mcpv1alpha1.ExposureSearch, nil, p)
		for _, who := range []policyCaller{alice, bob, carol} {
			Expect(menuOf(base, who).names).To(ContainElement(opsUpdateTicket), who.name)
		}
		reached := func() int64 { return up.reached("update_ticket") }

		By("REST execute")
		r := execute(base, bob, ticketCall("T-1", bob.name))
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["output"]).To(Equal(ticketOutput("T-1", bob.name)))
		Expect(reached()).To(BeEquivalentTo(1))
		openAI := fmt.Sprintf(`{"id":"call_1","type":"function","function":{"name":%q,"arguments":%q}}`,
			opsUpdateTicket, fmt.Sprintf(`{"ticket":"T-2","owner":%q}`, carol.name))
		r = execute(base, carol, openAI)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["message"]).To(Equal(map[string]any{"role": "tool", "tool_call_id": "call_1", "content": ticketOutput("T-2", carol.name)}))
		Expect(reached()).To(BeEquivalentTo(2))

		r = execute(base, bob, ticketCall("T-3", alice.name))
		Expect(r.code).To(Equal(http.StatusForbidden), string(r.body))
		Expect(r.json()).To(Equal(map[string]any{"error": deniedTicket}))
		r = execute(base, bob, `{"name":"`+opsUpdateTicket+`","arguments":{"ticket":"T-4"}}`)
		Expect(r.code).To(Equal(http.StatusForbidden), string(r.body))
		Expect(r.json()["error"]).To(HavePrefix(deniedTicket+" (its expression could not be evaluated: "), "no owner counts against the caller")
		Expect(reached()).To(BeEquivalentTo(2), "no denied call reached the server")
		r = execute(base, bob, `{"name":"`+opsDropTable+`","arguments":{"table":"users"}}`)
		Expect(r.code).To(Equal(http.StatusForbidden), string(r.body))
		Expect(r.json()).To(Equal(map[string]any{"error": deniedDestructive}), "a tool hidden from bob is refused by the rule that hides it")
		Expect(up.reached("drop_table")).To(BeZero())

		By("MCP tools/call")
		s := connectMCP(url+base+"/mcp", bob.headers(), nil)
		result, err := s.CallTool(ctx, opsUpdateTicket, json.RawMessage(fmt.Sprintf(`{"ticket":"T-5","owner":%q}`, bob.name)), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse())
		Expect(textPart(result)).To(Equal(ticketOutput("T-5", bob.name)))
		Expect(reached()).To(BeEquivalentTo(3))
		result, err = s.CallTool(ctx, opsUpdateTicket, json.RawMessage(fmt.Sprintf(`{"ticket":"T-6","owner":%q}`, carol.name)), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred(), "a denial is a tool result the model reads")
		Expect(result.IsError).To(BeTrue())
		Expect(textPart(result)).To(Equal(deniedTicket))
		result, err = s.CallTool(ctx, opsDropTable, json.RawMessage(`{"table":"users"}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeTrue())
		Expect(textPart(result)).To(Equal(deniedDestructive))
		Expect(reached()).To(BeEquivalentTo(3))
		Expect(up.reached("drop_table")).To(BeZero())

		By("call_tool, exposure Search")
		s = connectMCP(url+finder+"/mcp", carol.headers(), nil)
		callTool := func(ticket, owner string) mcpclient.CallResult {
			result, err := s.CallTool(ctx, "call_tool", json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":{"ticket":%q,"owner":%q}}`,
				opsUpdateTicket, ticket, owner)), mcpclient.CallOptions{})
			Expect(err).NotTo(HaveOccurred())
			return result
		}
		result = callTool("T-7", carol.name)
		Expect(result.IsError).To(BeFalse())
		Expect(textPart(result)).To(Equal(ticketOutput("T-7", carol.name)))
		Expect(reached()).To(BeEquivalentTo(4))
		result = callTool("T-8", bob.name)
		Expect(result.IsError).To(BeTrue())
		Expect(textPart(result)).To(Equal(deniedTicket))
		Expect(reached()).To(BeEquivalentTo(4))

		By("each decision is counted and audited")
		Expect(decisions("kit", "tickets-for-all", "allow", "Enforce")).To(BeEquivalentTo(3))
		Expect(decisions("kit", "ticket-owner", "deny", "Enforce")).To(BeEquivalentTo(3))
		Expect(decisions("kit", "destructive-for-alice", "deny", "Enforce")).To(BeEquivalentTo(2))
		Expect(decisions("finder", "tickets-for-all", "allow", "Enforce")).To(BeEquivalentTo(1))
		Expect(decisions("finder", "ticket-owner", "deny", "Enforce")).To(BeEquivalentTo(1))
		Eventually(policyAuditLines(trail)).Should(HaveLen(10))
		lines := policyAuditLines(trail)(Default)
		Expect(lines[0]).To(And(MatchFields(bob.name, "", "rest", opsUpdateTicket, "success", 200), decidedBy("allow", "tickets-for-all", "Enforce")))
		Expect(lines[2]).To(And(MatchFields(bob.name, "", "rest", opsUpdateTicket, "policy_denied", 403), decidedBy("deny", "ticket-owner", "Enforce")))
		Expect(lines[2].Collection).To(Equal(ns + "/kit"))
		Expect(lines[2].Server).To(Equal(ns + "/ops"))
		Expect(lines[4]).To(And(MatchFields(bob.name, "", "rest", opsDropTable, "policy_denied", 403), decidedBy("deny", "destructive-for-alice", "Enforce")))
		Expect(lines[6].Via).To(Equal("mcp"))
		Expect(lines[6]).To(And(WithTransform(func(r AuditRecord) string { return r.Outcome }, Equal("policy_denied")), decidedBy("deny", "ticket-owner", "Enforce")))
		Expect(lines[9]).To(And(WithTransform(func(r AuditRecord) string { return r.Outcome }, Equal("policy_denied")), decidedBy("deny", "ticket-owner", "Enforce")))
		Expect(lines[9].Collection).To(Equal(ns + "/finder"))
		Expect(lines[9].Tool).To(Equal(opsUpdateTicket))
	})

	It("in mode Audit lists every tool, refuses nothing and records what it would deny; in mode Enforce refuses it", func() {
		p := opsPolicy(ns, ops)
		p.Mode = mcpv1alpha1.PolicyAudit
		base := collectionOf("audited", "", nil, p)
		aliceMenu := menuOf(base, alice)
		for _, who := range []policyCaller{bob, carol} {
			m := menuOf(base, who)
			Expect(m.names).To(ConsistOf(all), who.name)
			Expect(m.etag).To(Equal(aliceMenu.etag), "one menu for everyone")
		}
		s := connectMCP(url+base+"/mcp", bob.headers(), nil)
		Expect(listedNames(s)).To(ConsistOf(all))
		h := cat.mcp.handlerFor(viewKey{kind: collectionView, namespace: ns, name: "audited"})
		h.mu.Lock()
		Expect(h.listed.pages).NotTo(BeEmpty(), "one listing for everyone, kept")
		h.mu.Unlock()

		r := execute(base, bob, ticketCall("T-1", alice.name))
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(r.json()["output"]).To(Equal(ticketOutput("T-1", alice.name)))
		Expect(up.reached("update_ticket")).To(BeEquivalentTo(1))
		result, err := s.CallTool(ctx, opsDropTable, json.RawMessage(`{"table":"users"}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse())
		Expect(textPart(result)).To(Equal(`drop_table {"table":"users"}`))
		Expect(up.reached("drop_table")).To(BeEquivalentTo(1))
		r = execute(base, alice, `{"name":"`+opsReadLogs+`"}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))

		Expect(decisions("audited", "ticket-owner", "deny", "Audit")).To(BeEquivalentTo(1))
		Expect(decisions("audited", "destructive-for-alice", "deny", "Audit")).To(BeEquivalentTo(1))
		Expect(decisions("audited", "read-only-for-all", "allow", "Audit")).To(BeEquivalentTo(1))
		Expect(decisions("audited", "ticket-owner", "deny", "Enforce")).To(BeZero())
		Eventually(policyAuditLines(trail)).Should(HaveLen(3))
		lines := policyAuditLines(trail)(Default)
		Expect(lines[0]).To(And(MatchFields(bob.name, "", "rest", opsUpdateTicket, "success", 200), decidedBy("deny", "ticket-owner", "Audit")))
		Expect(lines[1].Via).To(Equal("mcp"))
		Expect(lines[1]).To(And(WithTransform(func(r AuditRecord) string { return r.Outcome }, Equal("success")), decidedBy("deny", "destructive-for-alice", "Audit")))
		Expect(lines[2]).To(And(MatchFields(alice.name, "", "rest", opsReadLogs, "success", 200), decidedBy("allow", "read-only-for-all", "Audit")))

		By("mode Enforce")
		editCollection("audited", func(spec *mcpv1alpha1.ToolCollectionSpec) { spec.Policy.Mode = mcpv1alpha1.PolicyEnforce })
		Eventually(func() []string { return menuOf(base, bob).names }).Should(ConsistOf(opsReadLogs, opsUpdateTicket))
		Expect(menuOf(base, alice).etag).NotTo(Equal(aliceMenu.etag), "the mode is part of the policy, and of the revision")
		r = execute(base, bob, ticketCall("T-2", alice.name))
		Expect(r.code).To(Equal(http.StatusForbidden), string(r.body))
		Expect(r.json()).To(Equal(map[string]any{"error": deniedTicket}))
		Expect(up.reached("update_ticket")).To(BeEquivalentTo(1))
		Expect(decisions("audited", "ticket-owner", "deny", "Enforce")).To(BeEquivalentTo(1))
		Expect(decisions("audited", "ticket-owner", "deny", "Audit")).To(BeEquivalentTo(1))
		Eventually(policyAuditLines(trail)).Should(HaveLen(4))
		Expect(policyAuditLines(trail)(Default)[3]).To(And(MatchFields(bob.name, "", "rest", opsUpdateTicket, "policy_denied", 403),
			decidedBy("deny", "ticket-owner", "Enforce")))
	})

	It("follows a change of the policy: new ETags, new menus, and MCP clients hear of it", func() {
		base := collectionOf("kit", "", nil, opsPolicy(ns, ops))
		before := map[policyCaller]policyMenu{alice: menuOf(base, alice), bob: menuOf(base, bob), carol: menuOf(base, carol)}
		Expect(before[bob].names).To(ConsistOf(opsReadLogs, opsUpdateTicket))
		changed := make(chan struct{}, 10)
		s := connectMCP(url+base+"/mcp", bob.headers(), func() { changed <- struct{}{} })
		Expect(s.Info().ListChanged).To(BeTrue())
		Eventually(s.Listening).Should(BeTrue(), "bob's listening stream is open")
		Expect(listedNames(s)).To(ConsistOf(opsReadLogs, opsUpdateTicket))
		heardGreeting(changed)

		editCollection("kit", func(spec *mcpv1alpha1.ToolCollectionSpec) {
			spec.Policy.Rules[4].Expression = fmt.Sprintf(`!(caller.name in [%q, %q])`, alice.name, bob.name)
			spec.Policy.Rules[4].Message = "destructive tools are for alice and bob"
		})
		Eventually(func() []string { return menuOf(base, bob).names }).Should(ConsistOf(all))
		after := map[policyCaller]policyMenu{alice: menuOf(base, alice), bob: menuOf(base, bob), carol: menuOf(base, carol)}
		for _, who := range []policyCaller{alice, bob, carol} {
			Expect(after[who].etag).NotTo(Equal(before[who].etag), who.name)
		}
		Expect(after[bob].etag).To(Equal(after[alice].etag), "bob now sees alice's menu")
		Expect(after[carol].names).To(ConsistOf(before[carol].names), "carol's tools are as they were")
		Expect(menuOf(base, bob, "If-None-Match", before[bob].etag).code).To(Equal(http.StatusOK), "bob's old ETag is stale")

		Eventually(changed).Should(Receive(), "bob's MCP client heard notifications/tools/list_changed")
		Eventually(func() []string { return listedNames(s) }).Should(ConsistOf(all))
		result, err := s.CallTool(ctx, opsDropTable, json.RawMessage(`{"table":"users"}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeFalse(), "bob may drop tables now")
		Expect(up.reached("drop_table")).To(BeEquivalentTo(1))
		r := execute(base, carol, `{"name":"`+opsDropTable+`","arguments":{"table":"users"}}`)
		Expect(r.json()).To(Equal(map[string]any{"error": "denied by policy rule destructive-for-alice: destructive tools are for alice and bob"}))
	})

	It("denies every call and lists no tool while spec.policy never compiled, and enforces status.appliedPolicy once it is there", func() {
		bad := opsPolicy(ns, ops)
		bad.Rules[4].Expression = `caller.nmae == "x"`
		base := createCollection("broken", "", nil, bad)
		Eventually(func() int { return menuOf(base, alice).code }).Should(Equal(http.StatusOK))
		Eventually(func() string {
			c := meta.FindStatusCondition(fetchCollection("broken").Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid)
			if c == nil {
				return ""
			}
			return string(c.Status) + ": " + c.Message
		}).Should(And(HavePrefix("True: spec.policy.rules[4] (destructive-for-alice): expression line 1, column "),
			HaveSuffix("no earlier policy compiled, so the catalog denies every call of this collection until it is fixed")))
		Expect(fetchCollection("broken").Status.AppliedPolicy).To(BeNil())

		for _, who := range []policyCaller{alice, bob, carol} {
			m := menuOf(base, who)
			Expect(m.code).To(Equal(http.StatusOK))
			Expect(m.names).To(BeEmpty(), who.name)
			for _, call := range []string{`{"name":"` + opsReadLogs + `"}`, ticketCall("T-1", who.name), `{"name":"` + opsDropTable + `"}`} {
				r := execute(base, who, call)
				Expect(r.code).To(Equal(http.StatusForbidden), string(r.body))
				Expect(r.json()).To(Equal(map[string]any{"error": deniedInvalid}))
			}
		}
		s := connectMCP(url+base+"/mcp", alice.headers(), nil)
		Expect(listedNames(s)).To(BeEmpty())
		result, err := s.CallTool(ctx, opsReadLogs, json.RawMessage(`{}`), mcpclient.CallOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.IsError).To(BeTrue())
		Expect(textPart(result)).To(Equal(deniedInvalid))
		for name := range up.calls {
			Expect(up.reached(name)).To(BeZero(), name)
		}
		Expect(decisions("broken", policy.InvalidPolicyRule, "deny", "Enforce")).To(BeEquivalentTo(10))

		By("a policy in status.appliedPolicy")
		Eventually(func() error {
			tc := fetchCollection("broken")
			tc.Status.AppliedPolicy = &mcpv1alpha1.AppliedPolicy{Generation: tc.Generation, Policy: *opsPolicy(ns, ops)}
			return env.Client.Status().Update(ctx, tc)
		}).Should(Succeed())
		Eventually(func() []string { return menuOf(base, alice).names }).Should(ConsistOf(all))
		Expect(menuOf(base, bob).names).To(ConsistOf(opsReadLogs, opsUpdateTicket))
		Expect(menuOf(base, carol).names).To(ConsistOf(opsReadLogs, opsRestart, opsUpdateTicket))
		r := execute(base, alice, `{"name":"`+opsDropTable+`","arguments":{"table":"users"}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(up.reached("drop_table")).To(BeEquivalentTo(1))
		r = execute(base, bob, `{"name":"`+opsDropTable+`","arguments":{"table":"users"}}`)
		Expect(r.json()).To(Equal(map[string]any{"error": deniedDestructive}))
		Expect(up.reached("drop_table")).To(BeEquivalentTo(1))
	})

	It("enforces the last policy that compiled while spec.policy does not", func() {
		good := opsPolicy(ns, ops)
		base := collectionOf("kit", "", nil, good)
		Eventually(func() *mcpv1alpha1.AppliedPolicy { return fetchCollection("kit").Status.AppliedPolicy }).ShouldNot(BeNil())
		applied := fetchCollection("kit").Status.AppliedPolicy
		Expect(applied.Generation).To(BeEquivalentTo(1))
		bobBefore := menuOf(base, bob)

		// The same edit leaves out the restart tool: the menu changing is
		// how the catalog is seen to serve the new generation.
		editCollection("kit", func(spec *mcpv1alpha1.ToolCollectionSpec) {
			spec.Policy.Rules[4].Expression = `caller.nmae == "x"`
			spec.Tools = &mcpv1alpha1.ToolSelection{Exclude: []string{opsRestart}}
		})
		Eventually(func() string {
			c := meta.FindStatusCondition(fetchCollection("kit").Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid)
			if c == nil {
				return ""
			}
			return string(c.Status) + ": " + c.Message
		}).Should(And(HavePrefix("True: spec.policy.rules[4] (destructive-for-alice): "),
			HaveSuffix("the catalog enforces the policy of generation 1 (status.appliedPolicy) until it is fixed")))
		Expect(fetchCollection("kit").Status.AppliedPolicy).To(Equal(applied), "appliedPolicy is left as it was")

		Eventually(func() []string { return menuOf(base, alice).names }).Should(ConsistOf(opsDropTable, opsReadLogs, opsUpdateTicket))
		bobAfter := menuOf(base, bob)
		Expect(bobAfter.names).To(ConsistOf(opsReadLogs, opsUpdateTicket))
		Expect(bobAfter.etag).NotTo(Equal(bobBefore.etag), "a tool less")
		Expect(menuOf(base, carol).names).To(ConsistOf(opsReadLogs, opsUpdateTicket))
		r := execute(base, alice, `{"name":"`+opsDropTable+`","arguments":{"table":"users"}}`)
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(up.reached("drop_table")).To(BeEquivalentTo(1))
		r = execute(base, bob, `{"name":"`+opsDropTable+`","arguments":{"table":"users"}}`)
		Expect(r.code).To(Equal(http.StatusForbidden))
		Expect(r.json()).To(Equal(map[string]any{"error": deniedDestructive}))
		r = execute(base, bob, ticketCall("T-1", bob.name))
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		r = execute(base, bob, ticketCall("T-2", alice.name))
		Expect(r.json()).To(Equal(map[string]any{"error": deniedTicket}))
		Expect(up.reached("drop_table")).To(BeEquivalentTo(1))
		Expect(up.reached("update_ticket")).To(BeEquivalentTo(1))

		By("a fixed policy is enforced, and applied")
		editCollection("kit", func(spec *mcpv1alpha1.ToolCollectionSpec) {
			spec.Policy.Rules[4].Expression = fmt.Sprintf(`!(caller.name in [%q, %q])`, alice.name, bob.name)
		})
		Eventually(func() []string { return menuOf(base, bob).names }).Should(ConsistOf(opsDropTable, opsReadLogs, opsUpdateTicket))
		Eventually(func() int64 {
			tc := fetchCollection("kit")
			if tc.Status.AppliedPolicy == nil {
				return 0
			}
			return tc.Status.AppliedPolicy.Generation
		}).Should(Equal(fetchCollection("kit").Generation))
		Expect(meta.FindStatusCondition(fetchCollection("kit").Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid)).To(BeNil())
	})

	It("answers many callers at once, each with its own menu and its own decisions", func() {
		base := collectionOf("kit", "", nil, opsPolicy(ns, ops))
		want := map[policyCaller][]string{
			alice: all,
			bob:   {opsReadLogs, opsUpdateTicket},
			carol: {opsReadLogs, opsRestart, opsUpdateTicket},
		}
		etags := map[policyCaller]string{}
		for who := range want {
			etags[who] = menuOf(base, who).etag
			slices.Sort(want[who])
		}
		sessions := map[policyCaller]*mcpclient.Session{}
		for who := range want {
			sessions[who] = connectMCP(url+base+"/mcp", who.headers(), nil)
		}
		const perCaller = 20
		start := make(chan struct{})
		var wg sync.WaitGroup
		problems := make(chan string, 3*perCaller*5)
		for _, who := range []policyCaller{alice, bob, carol} {
			for i := range perCaller {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					problem := policyRound(url, base, who, i, want[who], etags[who], who == alice)
					if problem == "" {
						problem = listedRound(sessions[who], want[who])
					}
					if problem != "" {
						problems <- who.name + " " + fmt.Sprint(i) + ": " + problem
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		close(problems)
		var failures []string
		for p := range problems {
			failures = append(failures, p)
		}
		Expect(failures).To(BeEmpty())
		Expect(up.reached("update_ticket")).To(BeEquivalentTo(3*perCaller), "every owner's own update")
		Expect(up.reached("drop_table")).To(BeEquivalentTo(perCaller), "alice's drops only")
		Expect(decisions("kit", "tickets-for-all", "allow", "Enforce")).To(BeEquivalentTo(3 * perCaller))
		Expect(decisions("kit", "ticket-owner", "deny", "Enforce")).To(BeEquivalentTo(3 * perCaller))
		Expect(decisions("kit", "destructive-for-alice", "deny", "Enforce")).To(BeEquivalentTo(2 * perCaller))
		Expect(decisions("kit", "(default)", "allow", "Enforce")).To(BeEquivalentTo(perCaller), "alice's drops: no rule applies")
	})
})

// anonymousTools are the tools of a menu served to nobody in particular.
func anonymousTools(r response) []json.RawMessage {
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	Expect(json.Unmarshal(r.body, &body)).To(Succeed())
	return body.Tools
}

// listedRound lists a session's tools without Gomega, and says how they
// differ from want (sorted), or "".
func listedRound(s *mcpclient.Session, want []string) string {
	listed, err := s.ListTools(ctx, mcpclient.DefaultLimits)
	if err != nil {
		return "tools/list: " + err.Error()
	}
	var names []string
	for _, t := range listed.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		return fmt.Sprintf("tools/list: %v, want %v", names, want)
	}
	return ""
}

// policyRound is one caller's round against a collection under opsPolicy,
// without Gomega: its menu (whole, then 304), its own ticket, a drop
// (alice's goes through, the others' are denied) and someone else's
// ticket. It says what went wrong, or "".
func policyRound(url, base string, who policyCaller, i int, want []string, etag string, mayDrop bool) string {
	code, header, body, err := plainCall(url, http.MethodGet, base+"/tools", "", who.token)
	if err != nil || code != http.StatusOK {
		return fmt.Sprintf("menu: %d %v %s", code, err, body)
	}
	var menu struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &menu); err != nil {
		return "menu: " + err.Error()
	}
	var names []string
	for _, t := range menu.Tools {
		names = append(names, t.Function.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) || header.Get("ETag") != etag {
		return fmt.Sprintf("menu: %v with ETag %s, want %v with %s", names, header.Get("ETag"), want, etag)
	}
	if code, _, body, err := plainCall(url, http.MethodGet, base+"/tools", "", who.token, "If-None-Match", etag); err != nil || code != http.StatusNotModified {
		return fmt.Sprintf("menu with its ETag: %d %v %s", code, err, body)
	}

	output := func(body []byte) (string, string) {
		var answer struct {
			Output string `json:"output"`
			Error  string `json:"error"`
		}
		_ = json.Unmarshal(body, &answer)
		return answer.Output, answer.Error
	}
	ticket := fmt.Sprintf("T-%d", i)
	code, _, body, err = plainCall(url, http.MethodPost, base+"/execute", ticketCall(ticket, who.name), who.token)
	if out, _ := output(body); err != nil || code != http.StatusOK || out != ticketOutput(ticket, who.name) {
		return fmt.Sprintf("own ticket: %d %v %s", code, err, body)
	}
	table := fmt.Sprintf("t%d", i)
	code, _, body, err = plainCall(url, http.MethodPost, base+"/execute", `{"name":"`+opsDropTable+`","arguments":{"table":"`+table+`"}}`, who.token)
	out, denied := output(body)
	switch {
	case err != nil:
		return "drop: " + err.Error()
	case mayDrop && (code != http.StatusOK || out != `drop_table {"table":"`+table+`"}`):
		return fmt.Sprintf("drop: %d %s", code, body)
	case !mayDrop && (code != http.StatusForbidden || denied != deniedDestructive):
		return fmt.Sprintf("drop: %d %s", code, body)
	}
	code, _, body, err = plainCall(url, http.MethodPost, base+"/execute", ticketCall(ticket, "system:serviceaccount:elsewhere:mallory"), who.token)
	if _, denied := output(body); err != nil || code != http.StatusForbidden || denied != deniedTicket {
		return fmt.Sprintf("someone else's ticket: %d %v %s", code, err, body)
	}
	return ""
}
