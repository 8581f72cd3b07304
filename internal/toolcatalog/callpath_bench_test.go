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
	reader := fake.NewClientBuilder().WithScheme(apiScheme(b)).WithObjects(srv).Build()
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
	b.Run("proxy", func(b *testing.B) {
		target, err := url.Parse(upstream.URL())
		if err != nil {
			b.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
		header := mcpHeader.Clone()
		header.Set("MCP-Protocol-Version", "2026-07-28")
		header.Set("Mcp-Method", "tools/call")
		header.Set("Mcp-Name", "echo")
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
	b.Run("mcp-stateless", func(b *testing.B) {
		header := mcpHeader.Clone()
		header.Set("MCP-Protocol-Version", "2026-07-28")
		header.Set("Mcp-Method", "tools/call")
		header.Set("Mcp-Name", "mcp_calc_echo")
		b.ReportAllocs()
		for b.Loop() {
			post(b, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_calc_echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, header)
		}
	})
}
