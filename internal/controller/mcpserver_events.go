package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// serverEvents are the Events an MCPServer's status transition calls for:
// what changed between before and after, never what merely holds still.
func serverEvents(before, after *mcpv1alpha1.MCPServer) []statusEvent {
	var list []statusEvent
	warn := func(reason, message string) {
		list = append(list, statusEvent{eventType: corev1.EventTypeWarning, reason: reason, action: "Discover", message: message})
	}
	if startedGeneration(before, after) && after.Spec.TLS != nil && after.Spec.TLS.InsecureSkipVerify {
		list = append(list, statusEvent{eventType: corev1.EventTypeWarning, reason: "InsecureSkipVerify", action: "Configure",
			message: "spec.tls.insecureSkipVerify is set: the server's certificate is not verified, so anyone on the path can read and change the traffic"})
	}
	stalled := conditionChanged(before.Status.Conditions, after.Status.Conditions, mcpv1alpha1.ConditionStalled)
	if stalled != nil {
		warn(stalled.Reason, stalled.Message)
	}
	// A Warning when Ready turns False, or stays False for another reason;
	// not on every retry for the same one.
	if ready := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionReady); stalled == nil && ready != nil && ready.Status == metav1.ConditionFalse {
		if old := meta.FindStatusCondition(before.Status.Conditions, mcpv1alpha1.ConditionReady); old == nil || old.Status != metav1.ConditionFalse || old.Reason != ready.Reason {
			warn(ready.Reason, ready.Message)
		}
	}
	if after.Status.LastChangeTime != nil {
		switch changes := diffTools(before.Status.Tools, after.Status.Tools); {
		case before.Status.LastChangeTime == nil:
			list = append(list, statusEvent{eventType: corev1.EventTypeNormal, reason: "ToolsDiscovered", action: "Discover",
				message: fmt.Sprintf("Discovered %d tools", len(after.Status.Tools))})
		case !changes.empty():
			list = append(list, statusEvent{eventType: corev1.EventTypeNormal, reason: "ToolsChanged", action: "Discover",
				message: "Tools changed: " + changes.String()})
		}
	}
	if truncated := conditionChanged(before.Status.Conditions, after.Status.Conditions, mcpv1alpha1.ConditionToolsTruncated); truncated != nil {
		warn(truncated.Reason, truncated.Message)
	}
	return list
}

// startedGeneration reports whether after begins work on a generation
// before had not begun.
func startedGeneration(before, after *mcpv1alpha1.MCPServer) bool {
	now := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	if now == nil || now.Status != metav1.ConditionTrue {
		return false
	}
	was := meta.FindStatusCondition(before.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	return was == nil || was.Status != metav1.ConditionTrue || was.ObservedGeneration != now.ObservedGeneration
}
