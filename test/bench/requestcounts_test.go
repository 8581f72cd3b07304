package bench

import "testing"

// TestResourceOf checks how the counting proxy names what a request
// touches, which decides whether a write counts.
func TestResourceOf(t *testing.T) {
	for _, tc := range []struct{ name, path, want string }{
		{"status of a custom resource", "/apis/mcp.toolmesh.io/v1alpha1/namespaces/ns/mcpservers/s0001/status", "mcpservers/status"},
		{"a custom resource", "/apis/mcp.toolmesh.io/v1alpha1/namespaces/ns/mcpservers/s0001", "mcpservers"},
		{"a collection of custom resources", "/apis/mcp.toolmesh.io/v1alpha1/mcpservers", "mcpservers"},
		{"a core Event", "/api/v1/namespaces/ns/events", "events"},
		{"an events.k8s.io Event", "/apis/events.k8s.io/v1/namespaces/ns/events/e1", "events"},
		{"a Lease", "/apis/coordination.k8s.io/v1/namespaces/default/leases/mcp-operator.mcp.toolmesh.io", "leases"},
		{"the namespaces", "/api/v1/namespaces", "namespaces"},
		{"one namespace", "/api/v1/namespaces/ns", "namespaces"},
		{"discovery", "/api", "/api"},
		{"group discovery", "/apis/mcp.toolmesh.io", "/apis/mcp.toolmesh.io"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resourceOf(tc.path); got != tc.want {
				t.Errorf("resourceOf(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
