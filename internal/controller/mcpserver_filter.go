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

// withdrawFiltered takes out of status the tools spec.toolFilter no longer
// lets through. Ready and the other tools stay as they were until the new
// generation is discovered, which a rollout can hold back for as long as
// it takes: a filter narrowed to hide a tool must hide it now. A filter
// that is not valid lets nothing through, since what it means to hide is
// unknown. It reports whether it took any tool out.
func withdrawFiltered(srv *mcpv1alpha1.MCPServer) bool {
	filter := srv.Spec.ToolFilter
	valid := validateToolFilter(filter) == nil
	kept := make([]mcpv1alpha1.Tool, 0, len(srv.Status.Tools))
	for _, t := range srv.Status.Tools {
		if valid && passesFilter(t.OriginalName, filter) {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(srv.Status.Tools) {
		return false
	}
	srv.Status.Tools = kept
	srv.Status.ToolCount = int32(len(kept))
	srv.Status.ToolsHash = toolsHash(kept)
	return true
}
