package bridge

import "testing"

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name, requested, child, want string
	}{
		{"the same revision", "2025-11-25", "2025-11-25", "2025-11-25"},
		{"an older client gets its own", "2024-11-05", "2025-11-25", "2024-11-05"},
		{"2025-03-26 too", "2025-03-26", "2025-11-25", "2025-03-26"},
		{"2025-06-18 too", "2025-06-18", "2025-11-25", "2025-06-18"},
		{"a client newer than the child gets the child's", "2025-11-25", "2025-03-26", "2025-03-26"},
		{"the stateless revision gets the child's", "2026-07-28", "2025-11-25", "2025-11-25"},
		{"an unknown revision gets the child's", "2099-01-01", "2025-06-18", "2025-06-18"},
		{"garbage gets the child's", "latest", "2025-11-25", "2025-11-25"},
		{"no revision gets the child's", "", "2025-11-25", "2025-11-25"},
		{"a child older than every client revision", "2024-11-05", "2024-10-07", "2024-10-07"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := negotiate(tt.requested, tt.child); got != tt.want {
				t.Errorf("negotiate(%q, %q) = %q, want %q", tt.requested, tt.child, got, tt.want)
			}
		})
	}
}

func TestAcceptedRevision(t *testing.T) {
	tests := []struct {
		header, negotiated string
		want               bool
	}{
		{"", "2025-11-25", true},
		{"2025-06-18", "2025-06-18", true},
		{"2024-11-05", "2025-11-25", true},
		{"2024-10-07", "2024-10-07", true},
		{"2026-07-28", "2025-11-25", false},
		{"nonsense", "2025-11-25", false},
	}
	for _, tt := range tests {
		if got := acceptedRevision(tt.header, tt.negotiated); got != tt.want {
			t.Errorf("acceptedRevision(%q, %q) = %v, want %v", tt.header, tt.negotiated, got, tt.want)
		}
	}
}
