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
// serving says that pods of an earlier rollout still serve while the
// current one is not done.
type availability struct {
	status          metav1.ConditionStatus
	reason, message string
	serving         bool
}

func (a availability) available() bool { return a.status == metav1.ConditionTrue }

// workloadAvailability reads the Deployment's status (and, when it is not
// available, its pods) into WorkloadAvailable. True needs the current
// spec rolled out: a Deployment that is available from an earlier
// rollout only serves (serving), so that the MCPServer's generation is
// not finished on the old pods' word while the new ones may never start.
func workloadAvailability(d *appsv1.Deployment, pods []corev1.Pod) availability {
	if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
		return availability{status: metav1.ConditionFalse, reason: mcpv1alpha1.ReasonScaledToZero,
			message: "The Deployment is scaled to 0 replicas, so no pod runs the server"}
	}
	var trouble *availability
	if c := deploymentCondition(d, appsv1.DeploymentReplicaFailure); c != nil && c.Status == corev1.ConditionTrue {
		trouble = &availability{status: metav1.ConditionFalse, reason: mcpv1alpha1.ReasonReplicaFailure, message: c.Message}
	} else if c := deploymentCondition(d, appsv1.DeploymentProgressing); c != nil && c.Reason == deploymentTimedOut {
		trouble = &availability{status: metav1.ConditionFalse, reason: mcpv1alpha1.ReasonProgressDeadlineExceeded, message: c.Message}
	}
	available := deploymentCondition(d, appsv1.DeploymentAvailable)
	if available != nil && available.Status == corev1.ConditionTrue {
		return servingAvailability(d, pods, available.Message, trouble)
	}
	if trouble != nil {
		return *trouble
	}
	if problem := podProblem(pods); problem != "" {
		return availability{status: metav1.ConditionFalse, reason: mcpv1alpha1.ReasonPodFailing, message: problem}
	}
	if available != nil {
		return availability{status: metav1.ConditionFalse, reason: mcpv1alpha1.ReasonDeploymentUnavailable, message: available.Message}
	}
	return availability{status: metav1.ConditionFalse, reason: mcpv1alpha1.ReasonDeploymentPending,
		message: "The Deployment controller has not reported on the Deployment yet"}
}

// servingAvailability is the availability of a Deployment that has
// minimum availability: True once its current spec is rolled out, a
// rollout in progress until then, and its progress deadline's message
// when the rollout is stuck.
func servingAvailability(d *appsv1.Deployment, pods []corev1.Pod, message string, trouble *availability) availability {
	if trouble != nil && trouble.reason == mcpv1alpha1.ReasonProgressDeadlineExceeded {
		return availability{status: metav1.ConditionFalse, reason: trouble.reason, serving: true,
			message: trouble.message + " The pods of the previous rollout still serve"}
	}
	waiting := rolloutWaiting(d)
	if waiting == "" {
		return availability{status: metav1.ConditionTrue, reason: mcpv1alpha1.ReasonDeploymentAvailable, message: message}
	}
	if trouble != nil {
		waiting += ": " + trouble.message
	} else if problem := podProblem(pods); problem != "" {
		waiting += ": " + problem
	}
	return availability{status: metav1.ConditionFalse, reason: mcpv1alpha1.ReasonRolloutInProgress, serving: true,
		message: waiting + ". The pods of the previous rollout serve meanwhile"}
}

// deploymentTimedOut is the Progressing reason of a Deployment past its
// progress deadline (k8s.io/kubernetes/pkg/controller/deployment/util
// TimedOutReason).
const deploymentTimedOut = "ProgressDeadlineExceeded"

// rolloutWaiting says what the Deployment's rollout waits for, "" once
// it is done: the checks of `kubectl rollout status`
// (k8s.io/kubectl/pkg/polymorphichelpers DeploymentStatusViewer), whose
// module the operator does not otherwise need.
func rolloutWaiting(d *appsv1.Deployment) string {
	st := d.Status
	switch {
	case st.ObservedGeneration < d.Generation:
		return fmt.Sprintf("Waiting for the Deployment controller to observe generation %d of the Deployment", d.Generation)
	case d.Spec.Replicas != nil && st.UpdatedReplicas < *d.Spec.Replicas:
		return fmt.Sprintf("Waiting for the rollout to finish: %d of %d new replicas have been updated", st.UpdatedReplicas, *d.Spec.Replicas)
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for the rollout to finish: %d old replicas are pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for the rollout to finish: %d of %d updated replicas are available", st.AvailableReplicas, st.UpdatedReplicas)
	}
	return ""
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
