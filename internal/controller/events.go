package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// statusEvent is one Event a status transition calls for.
type statusEvent struct {
	eventType, reason, action, message string
}

// emit records the events about obj. It runs only after the status that
// made them true was written, so a write that fails (a conflict, say)
// emits nothing and the retry, starting from the stored status, emits them
// once. The message is never a format string: it holds servers' own text.
func emit(recorder events.EventRecorder, obj runtime.Object, list []statusEvent) {
	for _, e := range list {
		recorder.Eventf(obj, nil, e.eventType, e.reason, e.action, "%s", e.message)
	}
}

// conditionChanged returns the condition of type in after when it is set
// there and reads differently (status, reason or message) than in before.
func conditionChanged(before, after []metav1.Condition, condType string) *metav1.Condition {
	now := meta.FindStatusCondition(after, condType)
	if now == nil {
		return nil
	}
	was := meta.FindStatusCondition(before, condType)
	if was != nil && was.Status == now.Status && was.Reason == now.Reason && was.Message == now.Message {
		return nil
	}
	return now
}
