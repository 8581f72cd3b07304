package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestMemoryLimit(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		wantLimit int64
		wantErr   bool
	}{
		{"neither variable: no limit", nil, 0, false},
		{"the container's limit: 90% of it", map[string]string{"MCP_MEMORY_LIMIT": "536870912"}, 483183821, false},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "400MiB", "MCP_MEMORY_LIMIT": "536870912"}, 0, false},
		{"GOMEMLIMIT=off wins too", map[string]string{"GOMEMLIMIT": "off", "MCP_MEMORY_LIMIT": "536870912"}, 0, false},
		{"GOMEMLIMIT wins over an invalid value", map[string]string{"GOMEMLIMIT": "400MiB", "MCP_MEMORY_LIMIT": "abc"}, 0, false},
		{"the largest value does not overflow", map[string]string{"MCP_MEMORY_LIMIT": "9223372036854775807"}, 8301034833169298227, false},
		{"not a number", map[string]string{"MCP_MEMORY_LIMIT": "abc"}, 0, true},
		{"a quantity, not bytes", map[string]string{"MCP_MEMORY_LIMIT": "512Mi"}, 0, true},
		{"zero", map[string]string{"MCP_MEMORY_LIMIT": "0"}, 0, true},
		{"negative", map[string]string{"MCP_MEMORY_LIMIT": "-5"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit, err := memoryLimit(func(key string) string { return tt.env[key] })
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "MCP_MEMORY_LIMIT") {
					t.Fatalf("memoryLimit() error = %v, want one naming MCP_MEMORY_LIMIT", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("memoryLimit() error = %v", err)
			}
			if limit != tt.wantLimit {
				t.Errorf("memoryLimit() = %d, want %d", limit, tt.wantLimit)
			}
		})
	}
}

func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})

	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("MCP_MEMORY_LIMIT", "abc")
	applyMemoryLimit(log)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("an invalid MCP_MEMORY_LIMIT changed the limit from %d to %d", before, got)
	}

	t.Setenv("MCP_MEMORY_LIMIT", "536870912")
	logged = nil
	applyMemoryLimit(log)
	if got := debug.SetMemoryLimit(-1); got != 483183821 {
		t.Errorf("limit = %d, want 483183821", got)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], `"limit"=483183821`) {
		t.Errorf("logged %q, want one line with the limit", logged)
	}
}
