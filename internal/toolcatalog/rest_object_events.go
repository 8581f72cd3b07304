package toolcatalog

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The events route answers GET .../mcpservers/{name}/events and
// .../toolcollections/{name}/events: the newest Events about the object,
// for viewers who may get it, as `kubectl describe` lists them. The cache
// holds no Events (they are many and short-lived), so they are listed from
// the API server, selected by the object's kind, name and UID (not a
// deleted namesake's). One list serves every
// viewer of an object for eventsTTL.

const (
	// maxObjectEvents is how many Events an answer holds, newest first.
	maxObjectEvents = 20
	// eventsTTL is how long one list of an object's Events is reused.
	eventsTTL = 5 * time.Second
	// eventsTimeout bounds one list of Events.
	eventsTimeout = 10 * time.Second
	// maxEventLists bounds the lists kept; keys are objects that exist.
	maxEventLists = 1000
)

// eventItem is one Event as the console shows it.
type eventItem struct {
	Type                string    `json:"type"`
	Reason              string    `json:"reason"`
	Message             string    `json:"message"`
	Count               int32     `json:"count"`
	LastTime            time.Time `json:"lastTime"`
	ReportingController string    `json:"reportingController,omitempty"`
}

type eventsBody struct {
	Items []eventItem `json:"items"`
}

// +kubebuilder:rbac:groups="",resources=events,verbs=list

// eventLists keeps each object's last list of Events briefly.
type eventLists struct {
	reader client.Reader
	lists  *lru.Cache // key -> cachedEvents; safe for concurrent use
	asking singleflight.Group
}

type cachedEvents struct {
	items   []eventItem
	expires time.Time
}

func newEventLists(reader client.Reader) *eventLists {
	return &eventLists{reader: reader, lists: lru.New(maxEventLists)}
}

// serveEvents answers an events route of kind.
func (c *Catalog) serveEvents(kind objectKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		o, ok := c.readableObject(w, r, kind)
		if !ok {
			return
		}
		if c.events.reader == nil {
			writeError(w, http.StatusServiceUnavailable, "this catalog does not read Events")
			return
		}
		key := kind.kind + "\x00" + o.GetNamespace() + "\x00" + o.GetName() + "\x00" + string(o.GetUID())
		if value, hit := c.events.lists.Get(key); hit && time.Now().Before(value.(cachedEvents).expires) {
			serveTagged(w, r, eventsBody{Items: value.(cachedEvents).items})
			return
		}
		items, err, _ := c.events.asking.Do(key, func() (any, error) {
			// The list is shared by every viewer waiting for it: it is not
			// cut short when the first one goes away.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), eventsTimeout)
			defer cancel()
			var list corev1.EventList
			if err := c.events.reader.List(ctx, &list, client.InNamespace(o.GetNamespace()),
				client.MatchingFields{"involvedObject.kind": kind.kind, "involvedObject.name": o.GetName(), "involvedObject.uid": string(o.GetUID())}); err != nil {
				c.log.Error(err, "listing Events", "kind", kind.kind, "namespace", o.GetNamespace(), "name", o.GetName())
				return nil, err
			}
			items := newestEvents(list.Items, o)
			c.events.lists.Add(key, cachedEvents{items: items, expires: time.Now().Add(eventsTTL)})
			return items, nil
		})
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "the Events could not be listed from the API server; retry")
			return
		}
		serveTagged(w, r, eventsBody{Items: items.([]eventItem)})
	}
}

// newestEvents are the Events about o, newest first, at most
// maxObjectEvents.
func newestEvents(events []corev1.Event, o client.Object) []eventItem {
	items := make([]eventItem, 0, min(len(events), maxObjectEvents))
	for i := range events {
		e := &events[i]
		if e.InvolvedObject.UID != o.GetUID() {
			continue
		}
		item := eventItem{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1),
			LastTime: lastTime(e), ReportingController: cmp.Or(e.ReportingController, e.Source.Component)}
		if e.Series != nil {
			item.Count = max(e.Series.Count, 1)
		}
		items = append(items, item)
	}
	slices.SortStableFunc(items, func(a, b eventItem) int { return b.LastTime.Compare(a.LastTime) })
	return items[:min(len(items), maxObjectEvents)]
}

// lastTime is when an Event last happened, whichever API wrote it: the
// events.k8s.io API sets eventTime and series, the core API timestamps.
func lastTime(e *corev1.Event) time.Time {
	latest := e.CreationTimestamp.Time
	for _, t := range []time.Time{e.EventTime.Time, e.FirstTimestamp.Time, e.LastTimestamp.Time} {
		if t.After(latest) {
			latest = t
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(latest) {
		latest = e.Series.LastObservedTime.Time
	}
	return latest.UTC()
}
