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
	if field, ok := insecureTokenEndpoint(after); ok && startedGeneration(before, after) {
		list = append(list, statusEvent{eventType: corev1.EventTypeWarning, reason: "InsecureSkipVerify", action: "Configure",
			message: field + ".insecureSkipVerify is set: the token endpoint's certificate is not verified, so anyone on the path can read the client secret and the tokens"})
	}
	stalled := stallChanged(before.Status.Conditions, after.Status.Conditions)
	if stalled != nil {
		warn(stalled.Reason, stalled.Message)
	}
	if wl := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionWorkloadAvailable); stalled == nil || wl == nil || wl.Reason != stalled.Reason {
		// A stuck rollout warns once, through Stalled.
		list = append(list, workloadEvents(before, after)...)
	}
	// A Warning when Ready turns False, or stays False for another reason;
	// not on every retry for the same one. A workload that is not
	// available speaks through workloadEvents instead.
	if ready := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionReady); stalled == nil && ready != nil &&
		ready.Status == metav1.ConditionFalse && ready.Reason != mcpv1alpha1.ReasonWorkloadUnavailable {
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

// insecureTokenEndpoint names the tls of spec.auth when it turns
// certificate verification off.
func insecureTokenEndpoint(srv *mcpv1alpha1.MCPServer) (string, bool) {
	switch auth := srv.Spec.Auth; {
	case auth == nil:
	case auth.OAuth2ClientCredentials != nil && auth.OAuth2ClientCredentials.TLS != nil && auth.OAuth2ClientCredentials.TLS.InsecureSkipVerify:
		return "spec.auth.oauth2ClientCredentials.tls", true
	case auth.TokenExchange != nil && auth.TokenExchange.TLS != nil && auth.TokenExchange.TLS.InsecureSkipVerify:
		return "spec.auth.tokenExchange.tls", true
	}
	return "", false
}

// stallChanged returns Stalled in after when it is news: it turned True,
// changed its reason, or says something else about another generation. A
// retry of the same generation that failed again for the same reason is
// not, even when its message differs (it can hold the server's own text,
// an HTTP body say): as with Ready, one Warning per failure, not one per
// retry.
func stallChanged(before, after []metav1.Condition) *metav1.Condition {
	now := conditionChanged(before, after, mcpv1alpha1.ConditionStalled)
	if was := meta.FindStatusCondition(before, mcpv1alpha1.ConditionStalled); now != nil && was != nil &&
		was.Status == now.Status && was.Reason == now.Reason && was.ObservedGeneration == now.ObservedGeneration {
		return nil
	}
	return now
}

// failingWorkload are the WorkloadAvailable reasons that need a person: a
// workload on its way up (pending, pods starting) is not one.
var failingWorkload = map[string]bool{
	mcpv1alpha1.ReasonPodFailing:               true,
	mcpv1alpha1.ReasonReplicaFailure:           true,
	mcpv1alpha1.ReasonProgressDeadlineExceeded: true,
}

// workloadEvents say when a workload became available, stopped being
// available, started failing for another reason, was scaled to zero or
// removed; not while it starts up, nor on every retry.
func workloadEvents(before, after *mcpv1alpha1.MCPServer) []statusEvent {
	was := meta.FindStatusCondition(before.Status.Conditions, mcpv1alpha1.ConditionWorkloadAvailable)
	now := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionWorkloadAvailable)
	wasAvailable := was != nil && was.Status == metav1.ConditionTrue
	switch {
	case now == nil && was != nil:
		return []statusEvent{{eventType: corev1.EventTypeNormal, reason: "WorkloadRemoved", action: "Deploy",
			message: "spec.workload was removed: its Deployment, Service and NetworkPolicy are deleted"}}
	case now == nil, now.Reason == mcpv1alpha1.ReasonRolloutInProgress:
		// A rollout is routine; it is said when it is done (available
		// again) or stuck (Stalled).
		return nil
	case now.Status == metav1.ConditionTrue && !wasAvailable:
		return []statusEvent{{eventType: corev1.EventTypeNormal, reason: mcpv1alpha1.ConditionWorkloadAvailable, action: "Deploy",
			message: "The workload is available: " + now.Message}}
	case now.Reason == mcpv1alpha1.ReasonScaledToZero:
		// Someone stopped it on purpose: worth a note, not a warning.
		if was == nil || was.Reason != now.Reason {
			return []statusEvent{{eventType: corev1.EventTypeNormal, reason: now.Reason, action: "Deploy", message: now.Message}}
		}
		return nil
	case now.Status != metav1.ConditionTrue && (wasAvailable || failingWorkload[now.Reason] && (was == nil || was.Reason != now.Reason)):
		message := now.Message
		if ready := meta.FindStatusCondition(after.Status.Conditions, mcpv1alpha1.ConditionReady); ready != nil && ready.Reason == mcpv1alpha1.ReasonWorkloadUnavailable {
			message = ready.Message
		}
		return []statusEvent{{eventType: corev1.EventTypeWarning, reason: mcpv1alpha1.ReasonWorkloadUnavailable, action: "Deploy", message: message}}
	}
	return nil
}

// startedGeneration reports whether after is the first status written for
// its generation: the in-progress one, or the finished one when the work
// ended before the in-progress one was due (see defaultProgressGrace).
func startedGeneration(before, after *mcpv1alpha1.MCPServer) bool {
	return startsGeneration(before) && !startsGeneration(after)
}
