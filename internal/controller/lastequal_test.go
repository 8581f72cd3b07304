package controller

import (
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

func TestDiscoveryInputs(t *testing.T) {
	base := mcpclient.ToolList{Digest: [32]byte{1}}
	info := mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}
	want := discoveryInputs(base, info)
	tests := []struct {
		name string
		list mcpclient.ToolList
		info mcpclient.ServerInfo
		same bool
	}{
		{"the same discovery", base, info, true},
		{"another TTL", mcpclient.ToolList{Digest: base.Digest, TTL: time.Hour}, info, true},
		{"other tools", mcpclient.ToolList{Digest: [32]byte{2}}, info, false},
		{"cut at a limit", mcpclient.ToolList{Digest: base.Digest, Truncated: true}, info, false},
		{"another name", base, mcpclient.ServerInfo{Name: "other", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}, false},
		{"another version", base, mcpclient.ServerInfo{Name: "srv", Version: "1.1", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}, false},
		{"another revision", base, mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2026-07-28", Transport: mcpclient.TransportStreamableHTTP}, false},
		{"another transport", base, mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportSSE}, false},
		{"list changes announced", base, mcpclient.ServerInfo{Name: "srv", Version: "1.0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP, ListChanged: true}, false},
		// Fields are length-prefixed: moving a byte from one to the next is
		// another input.
		{"a byte moved between fields", base, mcpclient.ServerInfo{Name: "srv1", Version: ".0", ProtocolVersion: "2025-11-25", Transport: mcpclient.TransportStreamableHTTP}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := discoveryInputs(tt.list, tt.info) == want; got != tt.same {
				t.Errorf("same inputs: got %v, want %v", got, tt.same)
			}
		})
	}
}

func TestSettledServers(t *testing.T) {
	var s settledServers
	inputs := [32]byte{7}
	if s.holds("ns/a", "10", inputs) {
		t.Fatal("an empty memory holds")
	}
	s.record("ns/a", "10", inputs)
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
		if got := s.holds(tt.key, tt.resourceVersion, tt.inputs); got != tt.want {
			t.Errorf("holds(%s, %s, %x): got %v, want %v", tt.key, tt.resourceVersion, tt.inputs[:1], got, tt.want)
		}
	}
	s.record("ns/a", "12", inputs)
	if s.holds("ns/a", "10", inputs) || !s.holds("ns/a", "12", inputs) {
		t.Error("a new record does not replace the last")
	}
	s.forget("ns/a")
	if s.holds("ns/a", "12", inputs) || len(s.byServer) != 0 {
		t.Error("a forgotten server is still held")
	}
}
