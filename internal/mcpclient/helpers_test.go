package mcpclient

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// mcpToolWithoutSchema is a tool whose inputSchema is sent as JSON null.
func mcpToolWithoutSchema(name string) mcp.Tool {
	return mcp.Tool{Name: name, RawInputSchema: []byte("null")}
}

// waitFor polls cond until it holds, failing the test after 20 s: a real
// signal, not a fixed sleep.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
