package mcpclient

import "github.com/mark3labs/mcp-go/mcp"

// mcpToolWithoutSchema is a tool whose inputSchema is sent as JSON null.
func mcpToolWithoutSchema(name string) mcp.Tool {
	return mcp.Tool{Name: name, RawInputSchema: []byte("null")}
}
