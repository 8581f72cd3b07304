package reach

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
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
		{"a stdio workload is its Service's address, at the bridge's /mcp", mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{
			Image: "node:22", Command: []string{"node"}, Transport: mcpv1alpha1.WorkloadStdio, Port: 8080}}, "http://x.agents.svc:8080/mcp"},
		{"a workload without defaults applied listens on 8080 and is stdio", mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{
			Image: "node:22", Command: []string{"node"}}}, "http://x.agents.svc:8080/mcp"},
		{"a Streamable HTTP workload defaults to /mcp on its port", mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{
			Image: "srv:1", Transport: mcpv1alpha1.WorkloadStreamableHTTP, Port: 3001}}, "http://x.agents.svc:3001/mcp"},
		{"an SSE workload defaults to /sse", mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{
			Image: "srv:1", Transport: mcpv1alpha1.WorkloadSSE, Port: 3001}}, "http://x.agents.svc:3001/sse"},
		{"an HTTP workload's own path wins", mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{
			Image: "srv:1", Transport: mcpv1alpha1.WorkloadSSE, Port: 80, Path: "/v1/events"}}, "http://x.agents.svc:80/v1/events"},
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

// A workload's client transport follows what the server in the image
// speaks: the bridge in front of a stdio server speaks Streamable HTTP.
func TestReadTransport(t *testing.T) {
	tests := []struct {
		name string
		spec mcpv1alpha1.MCPServerSpec
		want mcpclient.Transport
	}{
		{"a URL keeps spec.transport", mcpv1alpha1.MCPServerSpec{URL: "http://h/sse", Transport: mcpv1alpha1.TransportSSE}, mcpclient.TransportSSE},
		{"a stdio workload is reached over Streamable HTTP", mcpv1alpha1.MCPServerSpec{Transport: mcpv1alpha1.TransportAuto,
			Workload: &mcpv1alpha1.WorkloadSpec{Image: "i", Command: []string{"c"}, Transport: mcpv1alpha1.WorkloadStdio}}, mcpclient.TransportStreamableHTTP},
		{"a Streamable HTTP workload is reached over Streamable HTTP", mcpv1alpha1.MCPServerSpec{Transport: mcpv1alpha1.TransportAuto,
			Workload: &mcpv1alpha1.WorkloadSpec{Image: "i", Transport: mcpv1alpha1.WorkloadStreamableHTTP}}, mcpclient.TransportStreamableHTTP},
		{"an SSE workload is reached over SSE", mcpv1alpha1.MCPServerSpec{Transport: mcpv1alpha1.TransportAuto,
			Workload: &mcpv1alpha1.WorkloadSpec{Image: "i", Transport: mcpv1alpha1.WorkloadSSE}}, mcpclient.TransportSSE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "x"}, Spec: tt.spec}
			// No headers or TLS: nothing is read from the API server.
			target, err := Read(context.Background(), nil, srv, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if target.Transport != tt.want {
				t.Errorf("transport %q, want %q", target.Transport, tt.want)
			}
		})
	}
}
