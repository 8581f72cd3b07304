package toolcatalog

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// BenchmarkCallPath is the catalog's own work per tool call, in one
// process: the handler called directly (no listener in front), the
// upstream a real mcp-go server on loopback. test/bench measures the same
// path from outside, against a bare proxy; this one is for profiles
// (-cpuprofile, -memprofile) that name the catalog's functions, and its
// proxy sub-benchmark, a bare httputil.ReverseProxy called the same way
// with the same call, is the floor: mcp-stateless minus proxy is what
// the catalog adds to a call.
func BenchmarkCallPath(b *testing.B) {
	upstream, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(upstream.Stop)
	const schema = `{"type":"object","properties":{"message":{"type":"string"}}}`
	upstream.AddTool("echo", "Echoes.", schema)
	srv := readyCalc(mcpv1alpha1.Tool{Name: "mcp_calc_echo", OriginalName: "echo", Hash: "h1",
		InputSchema: k8sruntime.RawExtension{Raw: []byte(schema)}})
	srv.UID, srv.Spec = "u1", mcpv1alpha1.MCPServerSpec{URL: upstream.URL(), Transport: "StreamableHTTP"}
	srv.Namespace = "default"
	all := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "all"},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{srv.Name}}}}
	guarded := all.DeepCopy()
	guarded.Name, guarded.Spec.Policy = "guarded", callPathPolicy()
	reader := fake.NewClientBuilder().WithScheme(apiScheme(b)).WithObjects(srv, all, guarded).Build()
	c, err := New(reader, Options{Log: logr.Discard(), Audit: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	c.observeServer(srv, false)
	h := c.Handler()

	post := func(b *testing.B, path, body string, header http.Header) {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader([]byte(body)))
		req.Header = header.Clone()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte("echo {")) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	mcpHeader := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	// statelessCall is the header of a 2026-07-28 call of tool.
	statelessCall := func(tool string) http.Header {
		header := mcpHeader.Clone()
		header.Set("MCP-Protocol-Version", "2026-07-28")
		header.Set("Mcp-Method", "tools/call")
		header.Set("Mcp-Name", tool)
		return header
	}
	b.Run("proxy", func(b *testing.B) {
		target, err := url.Parse(upstream.URL())
		if err != nil {
			b.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
		header := statelessCall("echo")
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, target.Path, bytes.NewReader(body))
			req.Header, req.Host = header.Clone(), target.Host
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte("echo {")) {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
	})
	b.Run("rest", func(b *testing.B) {
		header := http.Header{"Content-Type": {"application/json"}}
		b.ReportAllocs()
		for b.Loop() {
			post(b, "/v1/execute", `{"name":"mcp_calc_echo","arguments":{"message":"hi"}}`, header)
		}
	})
	// The same call through a collection, and through one whose policy
	// of 20 rules decides it (the 17th allows it): what a policy adds.
	for _, collection := range []string{"all", "guarded"} {
		b.Run("rest-"+collection, func(b *testing.B) {
			header := http.Header{"Content-Type": {"application/json"}}
			b.ReportAllocs()
			for b.Loop() {
				post(b, "/v1/namespaces/default/toolcollections/"+collection+"/execute", `{"name":"mcp_calc_echo","arguments":{"message":"hi"}}`, header)
			}
		})
	}
	b.Run("mcp-stateless", func(b *testing.B) {
		header := statelessCall("mcp_calc_echo")
		b.ReportAllocs()
		for b.Loop() {
			post(b, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_calc_echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, header)
		}
	})
	// The same call of a 2026-07-28 caller that declares elicitation: it
	// runs apart from its request, to be parked should its server ask
	// (mcp_park.go).
	b.Run("mcp-stateless-asks", func(b *testing.B) {
		header := statelessCall("mcp_calc_echo")
		b.ReportAllocs()
		for b.Loop() {
			post(b, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_calc_echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`, header)
		}
	})
	// The same call in a 2025-11-25 session the catalog issued: what a
	// session caller costs beyond a stateless one.
	b.Run("mcp-session", func(b *testing.B) {
		init := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)))
		init.Header = mcpHeader.Clone()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, init)
		session := rec.Header().Get("Mcp-Session-Id")
		if rec.Code != http.StatusOK || session == "" {
			b.Fatalf("initialize: %d %s", rec.Code, rec.Body)
		}
		header := mcpHeader.Clone()
		header.Set("MCP-Protocol-Version", "2025-11-25")
		header.Set("Mcp-Session-Id", session)
		b.ReportAllocs()
		for b.Loop() {
			post(b, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_calc_echo","arguments":{"message":"hi"}}}`, header)
		}
	})
	// A 2025-11-25 session from its initialize to its DELETE, with a
	// listing and a call, as test/bench's churn opens them: what an agent
	// that comes and goes costs.
	b.Run("mcp-session-lifecycle", func(b *testing.B) {
		send := func(method, body string, header http.Header, want int) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, "/mcp", bytes.NewReader([]byte(body)))
			req.Header = header
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				b.Fatalf("%s %s: %d %s", method, body, rec.Code, rec.Body)
			}
			return rec
		}
		b.ReportAllocs()
		for b.Loop() {
			rec := send(http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`,
				mcpHeader.Clone(), http.StatusOK)
			header := mcpHeader.Clone()
			header.Set("MCP-Protocol-Version", "2025-11-25")
			header.Set("Mcp-Session-Id", rec.Header().Get("Mcp-Session-Id"))
			send(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, header, http.StatusAccepted)
			send(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, header, http.StatusOK)
			if rec := send(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_calc_echo","arguments":{"message":"hi"}}}`,
				header, http.StatusOK); !bytes.Contains(rec.Body.Bytes(), []byte("echo {")) {
				b.Fatalf("the call: %s", rec.Body)
			}
			send(http.MethodDelete, "", header, http.StatusOK)
		}
	})
}

// callPathPolicy is 20 rules, of which an anonymous caller's call of
// mcp_calc_echo is checked against 16 (5 expressions evaluated) before
// the 17th allows it, as test/bench's policy is for its caller.
func callPathPolicy() *mcpv1alpha1.ToolPolicy {
	yes := true
	rule := func(name string, effect mcpv1alpha1.PolicyEffect, match *mcpv1alpha1.PolicyMatch, expression string) mcpv1alpha1.PolicyRule {
		return mcpv1alpha1.PolicyRule{Name: name, Effect: effect, Match: match, Expression: expression}
	}
	servers := func(names ...string) *mcpv1alpha1.PolicyMatch { return &mcpv1alpha1.PolicyMatch{Servers: names} }
	tools := func(globs ...string) *mcpv1alpha1.PolicyMatch { return &mcpv1alpha1.PolicyMatch{Tools: globs} }
	allow, deny := mcpv1alpha1.PolicyAllow, mcpv1alpha1.PolicyDeny
	return &mcpv1alpha1.ToolPolicy{Default: deny, Rules: []mcpv1alpha1.PolicyRule{
		rule("no-deletes", deny, tools("*_delete_*", "*_drop_*"), ""),
		rule("read-only", allow, &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{ReadOnlyHint: &yes}}, ""),
		rule("team-a", allow, servers("github"), `"team-a" in caller.groups`),
		rule("team-b", allow, servers("jira"), `"team-b" in caller.groups`),
		rule("team-c", allow, servers("slack"), `"team-c" in caller.groups`),
		rule("team-d", allow, servers("postgres"), `"team-d" in caller.groups`),
		rule("team-e", allow, servers("s3"), `"team-e" in caller.groups`),
		rule("team-f", allow, servers("vault"), `"team-f" in caller.groups`),
		rule("team-g", allow, servers("k8s"), `"team-g" in caller.groups`),
		rule("team-h", allow, servers("grafana"), `"team-h" in caller.groups`),
		rule("destructive-for-oncall", allow, &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{DestructiveHint: &yes}}, `"oncall" in caller.groups`),
		rule("no-admin-tools", deny, tools("*_admin_*"), ""),
		rule("named-by-issuer", deny, nil, `caller.issuer != "" && !caller.name.startsWith(caller.issuer)`),
		rule("admin-scope", allow, nil, `"scope" in caller.extra && caller.extra["scope"].exists(s, s == "admin")`),
		rule("own-messages", deny, tools("*_echo"), `has(arguments.owner) && arguments.owner != caller.name`),
		rule("short-messages", deny, tools("*_echo"), `has(arguments.message) && size(arguments.message) > 4096`),
		rule("echo-callers", allow, nil, `tool.name.startsWith("mcp_") && tool.server.matches("^[a-z]+$")`),
		rule("no-open-world", deny, &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{OpenWorldHint: &yes}}, ""),
		rule("interns-read", allow, nil, `"interns" in caller.groups && tool.annotations.readOnlyHint`),
		rule("everyone-else", deny, nil, ""),
	}}
}
