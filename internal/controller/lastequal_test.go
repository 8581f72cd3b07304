package controller

import (
	"testing"
	"time"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

func TestDiscoveryInputs(t *testing.T) {
	byURL := &mcpv1alpha1.MCPServer{Spec: mcpv1alpha1.MCPServerSpec{URL: "http://tools.example/mcp"}}
	base := mcpclient.ToolList{Digest: [32]byte{1}}
	info := mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}
	want, ok := discoveryInputs(byURL, discovery{tools: base, info: info})
	if !ok {
		t.Fatal("a server reached by URL has no inputs")
	}
	tests := []struct {
		name string
		list mcpclient.ToolList
		info mcpclient.ServerInfo
		// other is set on the discovery's other listings.
		other func(*discovery)
		same  bool
	}{
		{"the same discovery", base, info, nil, true},
		{"another TTL", mcpclient.ToolList{Digest: base.Digest, TTL: time.Hour}, info, nil, true},
		{"other tools", mcpclient.ToolList{Digest: [32]byte{2}}, info, nil, false},
		{"cut at a limit", mcpclient.ToolList{Digest: base.Digest, Truncated: true}, info, nil, false},
		{"another name", base, mcpclient.ServerInfo{Name: "other", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}, nil, false},
		{"another version", base, mcpclient.ServerInfo{Name: "srv", Version: "1.1", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}, nil, false},
		{"another revision", base, mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2026-07-28", Transport: mcpclient.TransportStreamableHTTP}, nil, false},
		{"another transport", base, mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportSSE}, nil, false},
		{"list changes announced", base, mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP, ListChanged: true}, nil, false},
		{"prompts offered", base, info, func(d *discovery) { d.prompts = &mcpclient.SurfaceList{Digest: [32]byte{3}} }, false},
		{"resources cut at a limit", base, info, func(d *discovery) { d.resources = &mcpclient.SurfaceList{Truncated: true} }, false},
		{"templates offered", base, info, func(d *discovery) { d.templates = &mcpclient.SurfaceList{} }, false},
		{"a byte moved between fields", base, mcpclient.ServerInfo{Name: "srv1", Version: ".0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := discovery{tools: tt.list, info: tt.info}
			if tt.other != nil {
				tt.other(&d)
			}
			got, ok := discoveryInputs(byURL, d)
			if !ok || (got == want) != tt.same {
				t.Errorf("same inputs: got %v (ok %v), want %v", got == want, ok, tt.same)
			}
		})
	}
	t.Run("a workload", func(t *testing.T) {
		workload := &mcpv1alpha1.MCPServer{Spec: mcpv1alpha1.MCPServerSpec{Workload: &mcpv1alpha1.WorkloadSpec{Image: "tools:1"}}}
		if _, ok := discoveryInputs(workload, discovery{tools: base, info: info}); ok {
			t.Error("a workload's conditions follow its Deployment, yet its discovery has inputs to remember")
		}
	})
}

func TestLastEqualStatuses(t *testing.T) {
	var s lastEqualStatuses
	inputs := [32]byte{7}
	if s.matches("ns/a", "10", inputs) {
		t.Fatal("an empty memory matches")
	}
	s.remember("ns/a", "10", inputs)
	for _, tt := range []struct {
		key, resourceVersion string
		inputs               [32]byte
		want                 bool
	}{
		{"ns/a", "10", inputs, true},
		{"ns/a", "11", inputs, false},
		{"ns/a", "10", [32]byte{8}, false},
		{"ns/b", "10", inputs, false},
	} {
		if got := s.matches(tt.key, tt.resourceVersion, tt.inputs); got != tt.want {
			t.Errorf("matches(%s, %s, %x): got %v, want %v", tt.key, tt.resourceVersion, tt.inputs[:1], got, tt.want)
		}
	}
	s.remember("ns/a", "12", inputs)
	if s.matches("ns/a", "10", inputs) || !s.matches("ns/a", "12", inputs) {
		t.Error("a new entry does not replace the last")
	}
	s.forget("ns/a")
	if s.matches("ns/a", "12", inputs) || s.at("ns/a") != "" {
		t.Error("a forgotten server is still remembered")
	}
}

// at is the resourceVersion remembered for key, "" for none.
func (s *lastEqualStatuses) at(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byServer[key].resourceVersion
}
