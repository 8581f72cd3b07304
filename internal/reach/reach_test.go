package reach

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name string
		spec mcpv1alpha1.MCPServerSpec
		want string
	}{
		{"a URL is used as given", mcpv1alpha1.MCPServerSpec{URL: "https://tools.example.com/mcp"}, "https://tools.example.com/mcp"},
		{"a Service becomes its in-cluster address", mcpv1alpha1.MCPServerSpec{Service: &mcpv1alpha1.ServiceReference{
			Name: "gh", Port: 8080, Path: "/mcp", Scheme: "https"}}, "https://gh.agents.svc:8080/mcp"},
		{"scheme and path default to http and /", mcpv1alpha1.MCPServerSpec{Service: &mcpv1alpha1.ServiceReference{
			Name: "gh", Port: 80}}, "http://gh.agents.svc:80/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "x"}, Spec: tt.spec}
			if got := URL(srv); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
