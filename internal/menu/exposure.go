package menu

import (
	"slices"
	"strings"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// Exposure is how a collection's MCP endpoint offers its menu: every tool,
// or a search for them. It is resolved here, beside the menu, so that the
// controller reports and the catalog serves the same thing.
type Exposure struct {
	// Search is true for spec.exposure Search: the MCP endpoint lists
	// find_tools, call_tool and AlwaysInclude instead of every tool.
	Search bool
	// AlwaysInclude are the menu's entries spec.alwaysInclude names, in
	// the order given (Search only).
	AlwaysInclude []*Entry
	// UnmatchedAlwaysInclude are the names of spec.alwaysInclude the menu
	// does not offer (Search only).
	UnmatchedAlwaysInclude []string
}

// Mode is the exposure as the API names it.
func (e Exposure) Mode() mcpv1alpha1.Exposure {
	if e.Search {
		return mcpv1alpha1.ExposureSearch
	}
	return mcpv1alpha1.ExposureAll
}

// ExposureOf resolves spec.exposure and spec.alwaysInclude against a menu
// resolved from the same spec. An unset exposure is All, as the API's
// default says.
func ExposureOf(spec *mcpv1alpha1.ToolCollectionSpec, m *Menu) Exposure {
	if spec.Exposure != mcpv1alpha1.ExposureSearch {
		return Exposure{}
	}
	e := Exposure{Search: true}
	for _, name := range spec.AlwaysInclude {
		// Tools are sorted by name.
		i, found := slices.BinarySearchFunc(m.Tools, name, func(t Entry, name string) int { return strings.Compare(t.Name, name) })
		if found {
			e.AlwaysInclude = append(e.AlwaysInclude, &m.Tools[i])
		} else {
			e.UnmatchedAlwaysInclude = append(e.UnmatchedAlwaysInclude, name)
		}
	}
	return e
}
