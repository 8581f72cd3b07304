package toolcatalog

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// benchView is a resolved menu of n tools with a realistic schema.
func benchView(n int) *view {
	m := menu.Menu{Tools: make([]menu.Entry, n)}
	for i := range m.Tools {
		tool := &mcpv1alpha1.Tool{
			Name: fmt.Sprintf("mcp_bench_tool%05d", i), OriginalName: fmt.Sprintf("tool%05d", i), Description: "Does one useful thing with its arguments.",
			InputSchema: runtime.RawExtension{Raw: []byte(`{"properties":{"path":{"description":"where","type":"string"},"limit":{"type":"integer"}},"required":["path"],"type":"object"}`)},
		}
		m.Tools[i] = menu.Entry{Name: tool.Name, Namespace: "ns", Server: "bench", Tool: tool, Description: tool.Description}
	}
	vw := &view{menu: m, revision: m.Hash(), byName: map[string]*menu.Entry{}}
	for i := range m.Tools {
		vw.byName[m.Tools[i].Name] = &m.Tools[i]
	}
	return vw
}

func BenchmarkRenderMenu(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		vw := benchView(n)
		b.Run(fmt.Sprintf("openai-%d-tools", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				render(vw, formatOpenAI)
			}
		})
	}
}

func BenchmarkNameLookup(b *testing.B) {
	vw := benchView(10000)
	b.ReportAllocs()
	for b.Loop() {
		if vw.byName["mcp_bench_tool04242"] == nil {
			b.Fatal("missing")
		}
	}
}

func BenchmarkEnvelope(b *testing.B) {
	result := mcpclient.CallResult{Content: []json.RawMessage{
		json.RawMessage(`{"type":"text","text":"first part of the answer"}`),
		json.RawMessage(`{"type":"image","data":"aW1hZ2U=","mimeType":"image/png"}`),
		json.RawMessage(`{"type":"text","text":"second part"}`),
	}}
	b.ReportAllocs()
	for b.Loop() {
		envelopeOf(result)
	}
}
