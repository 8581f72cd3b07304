package menu

import (
	"reflect"
	"testing"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

func TestExposureOf(t *testing.T) {
	servers := []mcpv1alpha1.MCPServer{server("alpha", true, nil, "mcp_alpha_read", "mcp_alpha_write", "mcp_alpha_zip")}
	tests := []struct {
		name      string
		exposure  mcpv1alpha1.Exposure
		always    []string
		wantMode  mcpv1alpha1.Exposure
		included  []string
		unmatched []string
	}{
		{name: "unset is All, as the API's default", wantMode: mcpv1alpha1.ExposureAll},
		{name: "All ignores alwaysInclude", exposure: mcpv1alpha1.ExposureAll, always: []string{"mcp_alpha_read", "nope"},
			wantMode: mcpv1alpha1.ExposureAll},
		{name: "Search with nothing always included", exposure: mcpv1alpha1.ExposureSearch, wantMode: mcpv1alpha1.ExposureSearch},
		{name: "Search keeps alwaysInclude's order and reports names the menu lacks", exposure: mcpv1alpha1.ExposureSearch,
			always:   []string{"mcp_alpha_zip", "missing", "mcp_alpha_read", "mcp_beta_read"},
			wantMode: mcpv1alpha1.ExposureSearch, included: []string{"mcp_alpha_zip", "mcp_alpha_read"}, unmatched: []string{"missing", "mcp_beta_read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"alpha"}},
				Exposure: tt.exposure, AlwaysInclude: tt.always}
			m := ForCollection(&spec, servers)
			e := ExposureOf(&spec, &m)
			if e.Mode() != tt.wantMode {
				t.Errorf("mode = %s, want %s", e.Mode(), tt.wantMode)
			}
			var included []string
			for _, entry := range e.AlwaysInclude {
				included = append(included, entry.Name)
				if entry.Server != "alpha" || entry.Tool == nil {
					t.Errorf("entry %s does not point into the menu: %+v", entry.Name, entry)
				}
			}
			if !reflect.DeepEqual(included, tt.included) {
				t.Errorf("alwaysInclude = %v, want %v", included, tt.included)
			}
			if !reflect.DeepEqual(e.UnmatchedAlwaysInclude, tt.unmatched) {
				t.Errorf("unmatched = %v, want %v", e.UnmatchedAlwaysInclude, tt.unmatched)
			}
		})
	}
}
