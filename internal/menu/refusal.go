package menu

import (
	"bytes"

	"github.com/mark3labs/mcp-go/mcp"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// Refusal says why MCP clients cannot be offered a tool, or "" when they
// can. The MCP library the catalog serves with refuses (by panicking) an
// input schema that puts x-mcp-header on a property that is not a string,
// integer or boolean; such a tool is left out of the catalog's MCP
// endpoints, still served over REST, and reported on its MCPServer and on
// every ToolCollection that offers it.
func Refusal(t *mcpv1alpha1.Tool) string {
	raw := t.InputSchema.Raw
	if !bytes.Contains(raw, []byte("x-mcp-header")) {
		return ""
	}
	if err := mcp.ValidateParamHeaderAnnotations(&mcp.Tool{Name: t.Name, RawInputSchema: raw}); err != nil {
		return "MCP clients are not offered this tool: " + err.Error()
	}
	return ""
}

// refused lists the entries MCP clients cannot be offered.
func refused(entries []Entry) []Entry {
	var out []Entry
	for _, e := range entries {
		if Refusal(e.Tool) != "" {
			out = append(out, e)
		}
	}
	return out
}
