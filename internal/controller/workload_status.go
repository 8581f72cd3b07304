package controller

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// availability is the WorkloadAvailable condition a Deployment calls for.
type availability struct {
	status          metav1.ConditionStatus
	reason, message string
}

func (a availability) available() bool { return a.status == metav1.ConditionTrue }

// workloadAvailability reads the Deployment's conditions (and, when it is
// not available, its pods) into WorkloadAvailable. Availability wins: a
// Deployment whose rollout is stuck while its old pods still serve is
// available, and the message says what is stuck, so that a bad update
// does not take a working server's tools out of the menus.
func workloadAvailability(d *appsv1.Deployment, pods []corev1.Pod) availability {
	if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
		return availability{metav1.ConditionFalse, mcpv1alpha1.ReasonScaledToZero,
			"The Deployment is scaled to 0 replicas, so no pod runs the server"}
	}
	var trouble *availability
	if c := deploymentCondition(d, appsv1.DeploymentReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
		trouble = &availability{metav1.ConditionFalse, mcpv1alpha1.ReasonReplicaFailure, c.Message}
	} else if c := deploymentCondition(d, appsv1.DeploymentProgressing); c != nil && c.Status == corev1.ConditionFalse {
		trouble = &availability{metav1.ConditionFalse, mcpv1alpha1.ReasonProgressDeadlineExceeded, c.Message}
	}
	available := deploymentCondition(d, appsv1.DeploymentAvailable)
	switch {
	case available != nil && available.Status == corev1.ConditionTrue:
		a := availability{metav1.ConditionTrue, mcpv1alpha1.ReasonDeploymentAvailable, available.Message}
		if trouble != nil {
			a.message += " Its rollout is stuck: " + trouble.message
		}
		return a
	case trouble != nil:
		return *trouble
	}
	if problem := podProblem(pods); problem != "" {
		return availability{metav1.ConditionFalse, mcpv1alpha1.ReasonPodFailing, problem}
	}
	if available != nil {
		return availability{metav1.ConditionFalse, mcpv1alpha1.ReasonDeploymentUnavailable, available.Message}
	}
	return availability{metav1.ConditionFalse, mcpv1alpha1.ReasonDeploymentPending,
		"The Deployment controller has not reported on the Deployment yet"}
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// startingUp are the waiting reasons of a container on its way up; any
// other (ImagePullBackOff, ErrImagePull, CrashLoopBackOff,
// CreateContainerConfigError, ...) is a failure a person should see.
var startingUp = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// maxPodMessage bounds the kubelet's text in a condition message.
const maxPodMessage = 256

// podProblem describes the first failure among pods (by name): a pod the
// scheduler cannot place, or a container (the bridge's installer
// included) waiting for a reason other than starting up. "" when none.
func podProblem(pods []corev1.Pod) string {
	sorted := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			sorted = append(sorted, &pods[i])
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return fmt.Sprintf("Pod %s cannot be scheduled: %s", p.Name, clip(c.Message, maxPodMessage))
			}
		}
		statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, s := range statuses {
			if w := s.State.Waiting; w != nil && w.Reason != "" && !startingUp[w.Reason] {
				problem := fmt.Sprintf("Pod %s: container %s is waiting: %s", p.Name, s.Name, w.Reason)
				switch t := s.LastTerminationState.Terminated; {
				case t != nil:
					// A crash loop: how it ended says more than the
					// kubelet's back-off, which changes on every restart.
					problem += fmt.Sprintf(": it exited with code %d (%s); `kubectl logs %s -c %s --previous` shows why",
						t.ExitCode, t.Reason, p.Name, s.Name)
				case w.Message != "":
					problem += ": " + clip(w.Message, maxPodMessage)
				}
				return problem
			}
		}
	}
	return ""
}
