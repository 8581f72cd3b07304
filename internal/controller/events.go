package controller

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// maxEventNote is the most bytes of an Event's note the API server
// accepts (events.k8s.io/v1 NoteLengthLimit): it refuses a longer Event
// whole, and the recorder does not retry.
const maxEventNote = 1024

// statusEvent is one Event a status transition calls for.
type statusEvent struct {
	eventType, reason, action, message string
}

// emit records the events about obj. It runs only after the status that
// made them true was written, so a write that fails (a conflict, say)
// emits nothing and the retry, starting from the stored status, emits them
// once. The message is never a format string: it holds servers' own text,
// which can be long (an error, an image name), so it is clipped to what
// the API server takes.
func emit(recorder events.EventRecorder, obj runtime.Object, list []statusEvent) {
	for _, e := range list {
		recorder.Eventf(obj, nil, e.eventType, e.reason, e.action, "%s", clip(e.message, maxEventNote))
	}
}

// clip cuts s to at most limit bytes on a character boundary, ending in
// "…" when it cut.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(limit-len("…"), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
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
