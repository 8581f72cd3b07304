package controller

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// collectionStatus renders a resolved menu as status, conditions included.
// policyProblem is collectionPolicy's verdict: when spec.policy does not
// compile, the menu is still served (under the last policy that did), but
// Ready and Stalled say the spec cannot work as written.
func collectionStatus(tc *mcpv1alpha1.ToolCollection, m menu.Menu, policyProblem string) {
	st := &tc.Status
	st.Servers = make([]mcpv1alpha1.CollectionServer, len(m.Servers))
	var notReady []string
	for i, s := range m.Servers {
		st.Servers[i] = mcpv1alpha1.CollectionServer{Name: s.Name, Ready: s.Ready, ToolCount: int32(s.ToolCount)}
		if !s.Ready {
			notReady = append(notReady, s.Name)
		}
	}
	st.Tools = make([]mcpv1alpha1.CollectionTool, len(m.Tools))
	for i, t := range m.Tools {
		st.Tools[i] = mcpv1alpha1.CollectionTool{Name: t.Name, Server: t.Server, OriginalName: t.Tool.OriginalName}
	}
	st.Conflicts = nil
	var contested []string
	for _, c := range m.Conflicts {
		st.Conflicts = append(st.Conflicts, mcpv1alpha1.ToolConflict{Name: c.Name, Servers: c.Servers})
		contested = append(contested, fmt.Sprintf("%s (%s; %s wins)", c.Name, strings.Join(c.Servers, ", "), c.Servers[0]))
	}
	st.UnapprovedTools = nil
	var unapproved []string
	for _, u := range m.Unapproved {
		st.UnapprovedTools = append(st.UnapprovedTools, mcpv1alpha1.UnapprovedTool{Name: u.Name, Server: u.Server,
			ApprovedHash: u.ApprovedHash, CurrentHash: u.CurrentHash})
		unapproved = append(unapproved, u.Name)
	}
	st.ServerCount = int32(len(st.Servers))
	st.ToolCount = int32(len(st.Tools))
	st.ConflictCount = int32(len(st.Conflicts))
	st.MenuHash = m.Hash()
	exposure := menu.ExposureOf(&tc.Spec, &m)
	st.Exposure = exposure.Mode()

	set := func(condType string, on bool, reason, message string) {
		if !on {
			meta.RemoveStatusCondition(&st.Conditions, condType)
			return
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: condType, Status: metav1.ConditionTrue,
			Reason: reason, Message: message, ObservedGeneration: tc.Generation})
	}
	set(mcpv1alpha1.ConditionDegraded, len(notReady) > 0, mcpv1alpha1.ReasonServersNotReady,
		fmt.Sprintf("MCPServers not Ready, their tools left out until they recover: %s", abbreviate(notReady, 20)))
	set(mcpv1alpha1.ConditionConflicts, len(contested) > 0, mcpv1alpha1.ReasonNameConflicts,
		fmt.Sprintf("Names offered more than once: %s; rename one with spec.tools.overrides", abbreviate(contested, 10)))
	set(mcpv1alpha1.ConditionUnmatchedOverrides, len(m.UnmatchedOverrides) > 0, mcpv1alpha1.ReasonOverrideTargetMissing,
		fmt.Sprintf("spec.tools.overrides names tools no selected, Ready server offers: %s", abbreviate(m.UnmatchedOverrides, 20)))
	if tc.Spec.Pinning != nil && tc.Spec.Pinning.Mode == mcpv1alpha1.PinningWarn {
		set(mcpv1alpha1.ConditionUnapprovedTools, len(unapproved) > 0, mcpv1alpha1.ReasonToolsNotApproved,
			fmt.Sprintf("Served although their definition is not approved in spec.pinning: %s; compare the hashes in status.unapprovedTools", abbreviate(unapproved, 20)))
	} else {
		set(mcpv1alpha1.ConditionUnapprovedTools, len(unapproved) > 0, mcpv1alpha1.ReasonToolsWithheld,
			fmt.Sprintf("Withheld until their definition is approved in spec.pinning: %s; compare the hashes in status.unapprovedTools", abbreviate(unapproved, 20)))
	}
	var refused []string
	for _, e := range m.Refused {
		refused = append(refused, e.Name)
	}
	set(mcpv1alpha1.ConditionToolsRefused, len(refused) > 0, mcpv1alpha1.ReasonInvalidForMCP,
		fmt.Sprintf("Served over REST but left out of the MCP endpoint, because MCP clients cannot be offered their definition: %s; see status.tools[].warnings of their MCPServer", abbreviate(refused, 20)))
	set(mcpv1alpha1.ConditionUnmatchedAlwaysInclude, len(exposure.UnmatchedAlwaysInclude) > 0, mcpv1alpha1.ReasonAlwaysIncludeTargetMissing,
		fmt.Sprintf("spec.alwaysInclude names tools the menu does not offer, so the MCP endpoint cannot list them: %s", abbreviate(exposure.UnmatchedAlwaysInclude, 20)))
	switch {
	case m.LeftOut > 0:
		set(mcpv1alpha1.ConditionTooManyTools, true, mcpv1alpha1.ReasonMaxToolsExceeded,
			fmt.Sprintf("%d tools past spec.maxTools=%d are left out", m.LeftOut, *tc.Spec.MaxTools))
	case len(m.Tools) > menu.FunctionCallingLimit && !exposure.Search:
		set(mcpv1alpha1.ConditionTooManyTools, true, mcpv1alpha1.ReasonOverFunctionCallingLimit,
			fmt.Sprintf("The menu has %d tools; many function-calling APIs accept at most %d per request. Narrow spec.tools, set spec.maxTools, or set spec.exposure: Search so that MCP clients search for the tools they need",
				len(m.Tools), menu.FunctionCallingLimit))
	default:
		set(mcpv1alpha1.ConditionTooManyTools, false, "", "")
	}

	// Ready and Stalled are decided once, here: set and then replaced,
	// they would get a new lastTransitionTime, and status a write, on
	// every reconcile.
	if policyProblem != "" {
		collectionStalled(tc, mcpv1alpha1.ReasonInvalidPolicy, policyProblem)
		return
	}
	ready := metav1.Condition{Type: mcpv1alpha1.ConditionReady, ObservedGeneration: tc.Generation}
	switch {
	case len(m.Servers) == 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, mcpv1alpha1.ReasonNoToolsServed, "The selection matches no MCPServer in this namespace"
	case len(m.Tools) == 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, mcpv1alpha1.ReasonNoToolsServed, "No selected MCPServer is Ready with tools that pass spec.tools"
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, mcpv1alpha1.ReasonMenuResolved,
			fmt.Sprintf("%d tools from %d of %d servers", len(m.Tools), len(m.Servers)-len(notReady), len(m.Servers))
		if exposure.Search {
			ready.Message += fmt.Sprintf("; the MCP endpoint offers them through find_tools and call_tool (exposure Search), with %d listed from spec.alwaysInclude", len(exposure.AlwaysInclude))
		}
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	meta.RemoveStatusCondition(&st.Conditions, mcpv1alpha1.ConditionStalled)
	meta.RemoveStatusCondition(&st.Conditions, mcpv1alpha1.ConditionReconciling)
	st.ObservedGeneration = tc.Generation
}

// collectionStalled records a spec that cannot work as written until it
// changes: InvalidSpec (the menu cannot be resolved) or InvalidPolicy.
func collectionStalled(tc *mcpv1alpha1.ToolCollection, reason, message string) {
	meta.SetStatusCondition(&tc.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionStalled, Status: metav1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: tc.Generation})
	meta.SetStatusCondition(&tc.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: reason, Message: message, ObservedGeneration: tc.Generation})
	meta.RemoveStatusCondition(&tc.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	tc.Status.ObservedGeneration = tc.Generation
}
