package menu

import (
	"fmt"
	"testing"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// fleet is 5,000 Ready servers of 20 tools (100,000), as issue 17 sizes a
// cluster's catalog, each tool with its status hash, spread round-robin
// over the given number of namespaces: one namespace lists its tools in
// name order already, several interleave theirs.
func fleet(namespaces int) []mcpv1alpha1.MCPServer {
	servers := make([]mcpv1alpha1.MCPServer, 5000)
	for i := range servers {
		tools := make([]string, 20)
		for j := range tools {
			tools[j] = fmt.Sprintf("mcp_s%04d_tool%02d", i, j)
		}
		servers[i] = server(fmt.Sprintf("s%04d", i), true, nil, tools...)
		servers[i].Namespace = fmt.Sprintf("team-%02d", i%namespaces)
		for j := range servers[i].Status.Tools {
			servers[i].Status.Tools[j].Hash = fmt.Sprintf("%064d", i*20+j)
		}
	}
	return servers
}

// BenchmarkGlobal is the global menu of 100,000 tools resolved and hashed,
// which every change to any server costs the catalog.
func BenchmarkGlobal(b *testing.B) {
	for _, namespaces := range []int{1, 50} {
		b.Run(fmt.Sprintf("namespaces-%d", namespaces), func(b *testing.B) {
			servers := fleet(namespaces)
			b.ReportAllocs()
			for b.Loop() {
				_ = Global(servers).Hash()
			}
		})
	}
}
