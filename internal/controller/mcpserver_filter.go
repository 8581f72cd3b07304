package controller

import (
	"fmt"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/glob"
	"github.com/toolmesh/mcp-operator/internal/reach"
)

// validateToolFilter refuses glob patterns path.Match cannot use; the API
// server cannot check them.
func validateToolFilter(f *mcpv1alpha1.ToolFilter) error {
	if f == nil {
		return nil
	}
	if p, bad := glob.FirstInvalid(f.Include, f.Exclude); bad {
		return &reach.SpecError{Reason: mcpv1alpha1.ReasonInvalidSpec, Terminal: true,
			Message: fmt.Sprintf("spec.toolFilter pattern %q is not a valid glob; fix it to resume discovery", p)}
	}
	return nil
}

// passesFilter applies spec.toolFilter to a tool's original name. The
// patterns were validated before discovery.
func passesFilter(name string, filter *mcpv1alpha1.ToolFilter) bool {
	return filter == nil || glob.Keep(name, filter.Include, filter.Exclude)
}
