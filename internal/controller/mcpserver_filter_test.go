package controller

import (
	"reflect"
	"testing"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

func TestWithdrawFiltered(t *testing.T) {
	tools := []mcpv1alpha1.Tool{{Name: "mcp_s_read", OriginalName: "read"}, {Name: "mcp_s_delete_all", OriginalName: "delete_all"}}
	for _, tc := range []struct {
		name   string
		filter *mcpv1alpha1.ToolFilter
		want   []string
	}{
		{"no filter", nil, []string{"mcp_s_read", "mcp_s_delete_all"}},
		{"an exclude, by the original name", &mcpv1alpha1.ToolFilter{Exclude: []string{"delete_*"}}, []string{"mcp_s_read"}},
		{"an include", &mcpv1alpha1.ToolFilter{Include: []string{"delete_all"}}, []string{"mcp_s_delete_all"}},
		{"the exposed name does not count", &mcpv1alpha1.ToolFilter{Exclude: []string{"mcp_s_*"}}, []string{"mcp_s_read", "mcp_s_delete_all"}},
		{"a filter that is not valid lets nothing through", &mcpv1alpha1.ToolFilter{Exclude: []string{"[read"}}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &mcpv1alpha1.MCPServer{Spec: mcpv1alpha1.MCPServerSpec{ToolFilter: tc.filter}}
			srv.Status.Tools = append([]mcpv1alpha1.Tool(nil), tools...)
			srv.Status.ToolCount, srv.Status.ToolsHash = 2, toolsHash(tools)
			withdrawFiltered(srv)
			got := []string{}
			for _, tool := range srv.Status.Tools {
				got = append(got, tool.Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tools %v, want %v", got, tc.want)
			}
			if int(srv.Status.ToolCount) != len(tc.want) || srv.Status.ToolsHash != toolsHash(srv.Status.Tools) {
				t.Errorf("toolCount %d and toolsHash do not follow the tools", srv.Status.ToolCount)
			}
		})
	}
}
