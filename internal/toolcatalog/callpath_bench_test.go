package toolcatalog

import (
	"bytes"
	"net/http"
	"net/http/httptest"
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
// (-cpuprofile, -memprofile) that name the catalog's functions.
func BenchmarkCallPath(b *testing.B) {
	upstream, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(upstream.Stop)
	const schema = `{"type":"object","properties":{"message":{"type":"string"}}}`
	upstream.AddTool("echo", "Echoes.", schema)
	srv := &mcpv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "echo", Generation: 1, UID: "u1"},
		Spec:       mcpv1alpha1.MCPServerSpec{URL: upstream.URL(), Transport: "StreamableHTTP"},
		Status: mcpv1alpha1.MCPServerStatus{
			Conditions: []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
				ObservedGeneration: 1, Reason: "ToolsDiscovered", LastTransitionTime: metav1.Now()}},
			Tools: []mcpv1alpha1.Tool{{Name: "mcp_echo_echo", OriginalName: "echo", Hash: "h1",
				InputSchema: k8sruntime.RawExtension{Raw: []byte(schema)}}},
		},
	}
	scheme := k8sruntime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(srv).Build()
	c, err := New(reader, Options{Log: logr.Discard(), Audit: discardWriter{}})
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
	b.Run("rest", func(b *testing.B) {
		header := http.Header{"Content-Type": {"application/json"}}
		b.ReportAllocs()
		for b.Loop() {
			post(b, "/v1/execute", `{"name":"mcp_echo_echo","arguments":{"message":"hi"}}`, header)
		}
	})
	b.Run("mcp-2026-07-28", func(b *testing.B) {
		header := mcpHeader.Clone()
		header.Set("MCP-Protocol-Version", "2026-07-28")
		header.Set("Mcp-Method", "tools/call")
		header.Set("Mcp-Name", "mcp_echo_echo")
		b.ReportAllocs()
		for b.Loop() {
			post(b, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_echo_echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, header)
		}
	})
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
