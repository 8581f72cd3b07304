package controller

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWorkloadAvailability(t *testing.T) {
	// deployment is a Deployment of generation 2 whose controller has
	// rolled it out: every replica (1 unless said) updated and available.
	deployment := func(replicas *int32, conditions ...appsv1.DeploymentCondition) *appsv1.Deployment {
		n := ptr.Deref(replicas, 1)
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: replicas},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: n, UpdatedReplicas: n, AvailableReplicas: n, Conditions: conditions}}
	}
	rolling := func(status appsv1.DeploymentStatus, conditions ...appsv1.DeploymentCondition) *appsv1.Deployment {
		d := deployment(ptr.To[int32](2), conditions...)
		status.Conditions = conditions
		d.Status = status
		return d
	}
	c := func(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: message}
	}
	available := c(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.")
	unavailable := c(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
	stuck := c(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "s-2" has timed out progressing.`)
	forbidden := c(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", `pods "s-2-" is forbidden: exceeded quota`)
	pulling := []corev1.Pod{waitingPod("s-1", "ImagePullBackOff", `Back-off pulling image "x"`)}
	const meanwhile = ". The pods of the previous rollout serve meanwhile"

	tests := []struct {
		name string
		d    *appsv1.Deployment
		pods []corev1.Pod
		want availability
	}{
		{"no status yet is pending", deployment(nil), nil,
			availability{status: metav1.ConditionFalse, reason: "DeploymentPending", message: "The Deployment controller has not reported on the Deployment yet"}},
		{"available and rolled out is available, in the Deployment's words", deployment(nil, available), nil,
			availability{status: metav1.ConditionTrue, reason: "DeploymentAvailable", message: "Deployment has minimum availability."}},
		{"available from an earlier rollout is not available for a spec the Deployment controller has not observed",
			rolling(appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}, available), nil,
			availability{status: metav1.ConditionFalse, reason: "RolloutInProgress", serving: true,
				message: "Waiting for the Deployment controller to observe generation 2 of the Deployment" + meanwhile}},
		{"a rollout with replicas still to update is in progress, and names a failing new pod",
			rolling(appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 2}, available), pulling,
			availability{status: metav1.ConditionFalse, reason: "RolloutInProgress", serving: true,
				message: `Waiting for the rollout to finish: 1 of 2 new replicas have been updated: Pod s-1: container server is waiting: ImagePullBackOff: Back-off pulling image "x"` + meanwhile}},
		{"old replicas pending termination are a rollout in progress",
			rolling(appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 3}, available), nil,
			availability{status: metav1.ConditionFalse, reason: "RolloutInProgress", serving: true,
				message: "Waiting for the rollout to finish: 1 old replicas are pending termination" + meanwhile}},
		{"updated replicas not yet available are a rollout in progress",
			rolling(appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 1}, available), nil,
			availability{status: metav1.ConditionFalse, reason: "RolloutInProgress", serving: true,
				message: "Waiting for the rollout to finish: 1 of 2 updated replicas are available" + meanwhile}},
		{"a replica failure during a rollout is named",
			rolling(appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 0, AvailableReplicas: 2}, available, forbidden), nil,
			availability{status: metav1.ConditionFalse, reason: "RolloutInProgress", serving: true,
				message: `Waiting for the rollout to finish: 0 of 2 new replicas have been updated: pods "s-2-" is forbidden: exceeded quota` + meanwhile}},
		{"a stuck rollout while old pods serve says what the Deployment says",
			rolling(appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 2}, available, stuck), nil,
			availability{status: metav1.ConditionFalse, reason: "ProgressDeadlineExceeded", serving: true,
				message: `ReplicaSet "s-2" has timed out progressing. The pods of the previous rollout still serve`}},
		{"a pod that cannot pull its image is named", deployment(nil, unavailable), pulling,
			availability{status: metav1.ConditionFalse, reason: "PodFailing", message: `Pod s-1: container server is waiting: ImagePullBackOff: Back-off pulling image "x"`}},
		{"pods that are starting are not failing", deployment(nil, unavailable), []corev1.Pod{waitingPod("s-1", "ContainerCreating", "")},
			availability{status: metav1.ConditionFalse, reason: "DeploymentUnavailable", message: "Deployment does not have minimum availability."}},
		{"pods are read even before the Deployment reports", deployment(nil), pulling,
			availability{status: metav1.ConditionFalse, reason: "PodFailing", message: `Pod s-1: container server is waiting: ImagePullBackOff: Back-off pulling image "x"`}},
		{"a replica failure says what the Deployment says", deployment(nil, unavailable, forbidden), pulling,
			availability{status: metav1.ConditionFalse, reason: "ReplicaFailure", message: `pods "s-2-" is forbidden: exceeded quota`}},
		{"a missed progress deadline says what the Deployment says", deployment(nil, unavailable, stuck), nil,
			availability{status: metav1.ConditionFalse, reason: "ProgressDeadlineExceeded", message: `ReplicaSet "s-2" has timed out progressing.`}},
		{"zero replicas are not available, whatever the Deployment says", deployment(ptr.To[int32](0), available), nil,
			availability{status: metav1.ConditionFalse, reason: "ScaledToZero", message: "The Deployment is scaled to 0 replicas, so no pod runs the server"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workloadAvailability(tt.d, tt.pods); got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func waitingPod(name, reason, message string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: "server", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}}
}

func TestPodProblem(t *testing.T) {
	crashing := waitingPod("s-1", "CrashLoopBackOff", "back-off 40s restarting failed container=server pod=s-1")
	crashing.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
	installer := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-1"}, Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "mcp-bridge", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "server", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}}
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-1"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient memory."}}}}
	leaving := waitingPod("s-0", "ImagePullBackOff", "old")
	leaving.DeletionTimestamp = &metav1.Time{}

	tests := []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"no pods, no problem", nil, ""},
		{"a crash loop says how the container ended, not the changing back-off", []corev1.Pod{crashing},
			"Pod s-1: container server is waiting: CrashLoopBackOff: it exited with code 1 (Error); `kubectl logs s-1 -c server --previous` shows why"},
		{"the bridge installer's failure counts", []corev1.Pod{installer}, "Pod s-1: container mcp-bridge is waiting: ErrImagePull: not found"},
		{"an unschedulable pod says why", []corev1.Pod{unschedulable}, "Pod s-1 cannot be scheduled: 0/3 nodes are available: 3 Insufficient memory."},
		{"a missing Secret in env is a failure", []corev1.Pod{waitingPod("s-1", "CreateContainerConfigError", `secret "gh" not found`)},
			`Pod s-1: container server is waiting: CreateContainerConfigError: secret "gh" not found`},
		{"pods being deleted are left out", []corev1.Pod{leaving}, ""},
		{"the first pod by name speaks", []corev1.Pod{waitingPod("s-b", "ErrImagePull", "b"), waitingPod("s-a", "ImagePullBackOff", "a")},
			"Pod s-a: container server is waiting: ImagePullBackOff: a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podProblem(tt.pods); got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPodProblemClipsTheKubeletsText(t *testing.T) {
	long := strings.Repeat("é", 300)
	got := podProblem([]corev1.Pod{waitingPod("s-1", "ErrImagePull", long)})
	text := strings.TrimPrefix(got, "Pod s-1: container server is waiting: ErrImagePull: ")
	if !strings.HasSuffix(text, "…") || len(text) > maxPodMessage {
		t.Fatalf("not clipped to %d bytes: %d bytes", maxPodMessage, len(text))
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(text, "…")) {
		t.Error("the clip split a character")
	}
}
