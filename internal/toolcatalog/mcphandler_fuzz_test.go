package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// fuzzCatalog is a catalog whose one MCPServer (Ready, one echo tool) is
// a real MCP server on loopback. It reads the object from
// controller-runtime's in-memory client: a fuzz worker is a process of its
// own and cannot start a control plane for each; what is fuzzed is the
// JSON-RPC handling, which reads the menu once.
func fuzzCatalog(f *testing.F) http.Handler {
	upstream, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, Surfaces: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(upstream.Stop)
	upstream.AddTool("echo", "Echoes.", `{"type":"object","properties":{"message":{"type":"string"}}}`)
	upstream.MCP.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("name")), func(_ context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hi "+r.Params.Arguments["name"]))}), nil
	})
	upstream.MCP.AddResource(mcp.NewResource("test://static/a", "a"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "a"}}, nil
	})

	scheme := k8sruntime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	srv := &mcpv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fuzz", Name: "fz", Generation: 1},
		Spec:       mcpv1alpha1.MCPServerSpec{URL: upstream.URL(), Transport: "StreamableHTTP"},
		Status: mcpv1alpha1.MCPServerStatus{
			Conditions: []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
				ObservedGeneration: 1, Reason: "ToolsDiscovered", LastTransitionTime: metav1.Now()}},
			Tools: []mcpv1alpha1.Tool{{Name: "mcp_fz_echo", OriginalName: "echo", Hash: "h1",
				InputSchema: k8sruntime.RawExtension{Raw: []byte(`{"type":"object","properties":{"message":{"type":"string"}}}`)}}},
			Prompts:   &mcpv1alpha1.SurfaceSummary{Count: 1, Hash: "p1"},
			Resources: &mcpv1alpha1.SurfaceSummary{Count: 1, Hash: "r1"},
		},
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(srv).Build()
	c, err := New(reader, Options{Log: logr.Discard()})
	if err != nil {
		panic(err)
	}
	return c.Handler()
}

// mcpPost sends one body to /mcp, in a session when id is set.
func mcpPost(h http.Handler, session string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// FuzzMCPEndpoint: whatever a client sends to the catalog's MCP endpoint,
// in a session or not, the answer is a 4xx, an accepted notification, or
// JSON-RPC (a result or an error object); never a 5xx or a recovered
// panic.
func FuzzMCPEndpoint(f *testing.F) {
	h := fuzzCatalog(f)
	initialized := mcpPost(h, "", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	session := initialized.Header().Get("Mcp-Session-Id")
	if initialized.Code != http.StatusOK || session == "" {
		f.Fatalf("initialize: %d %s", initialized.Code, initialized.Body)
	}
	mcpPost(h, session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))

	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"bm9wZQ=="}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_fz_echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_fz_echo","arguments":{"message":7}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"mcp_fz_echo","arguments":[1,2]}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":"text"}`,
		`[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`,
		`{"jsonrpc":"1.0","id":9,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/list"}`, `{"jsonrpc":"2.0","id":11}`,
		`{"jsonrpc":"2.0","id":13,"method":"prompts/list","params":{"cursor":"MQ=="}}`,
		`{"jsonrpc":"2.0","id":14,"method":"prompts/get","params":{"name":"mcp_fz_greet","arguments":{"name":"x"}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"prompts/get","params":{"name":"mcp_fz_greet","arguments":{"name":7}}}`,
		`{"jsonrpc":"2.0","id":16,"method":"resources/read","params":{"uri":"test://fz.fuzz/static/a"}}`,
		`{"jsonrpc":"2.0","id":17,"method":"resources/read","params":{"uri":"test://static/a"}}`,
		`{"jsonrpc":"2.0","id":18,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"mcp_fz_greet"},"argument":{"name":"name","value":"a"}}}`,
		`{"jsonrpc":"2.0","id":19,"method":"resources/templates/list"}`, `{"jsonrpc":"2.0","id":12,"result":{}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `{`, `[]`, `null`, ``,
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, inSession bool) {
		id := ""
		if inSession {
			id = session
		}
		rec := mcpPost(h, id, body)
		answer := rec.Body.String()
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, body, answer)
		}
		if strings.Contains(strings.ToLower(answer), "panic") {
			t.Fatalf("a panic was recovered for %q: %s", body, answer)
		}
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			return
		}
		var one map[string]json.RawMessage
		var many []map[string]json.RawMessage
		if json.Unmarshal(rec.Body.Bytes(), &one) == nil {
			many = append(many, one)
		} else if err := json.Unmarshal(rec.Body.Bytes(), &many); err != nil {
			t.Fatalf("200 that is not JSON-RPC for %q: %s", body, answer)
		}
		for _, m := range many {
			_, result := m["result"]
			_, failure := m["error"]
			if string(m["jsonrpc"]) != `"2.0"` || result == failure {
				t.Fatalf("not a JSON-RPC response for %q: %s", body, answer)
			}
		}
	})
}
