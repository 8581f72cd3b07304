package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DefaultListChangedInterval is the least time between two re-lists of one
// server that its notifications ask for.
const DefaultListChangedInterval = 5 * time.Second

var listChangedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mcp_operator_list_changed_total",
	Help: "Notifications that a server's tools changed (and lost sessions), by what was done: relisted, or debounced into a later re-list.",
}, []string{"outcome"})

func init() { metrics.Registry.MustRegister(listChangedTotal) }

// debouncer lets a server's notifications trigger at most one re-list per
// interval: a server that sends list_changed in a loop cannot make the
// controller spin. The last notification of a burst is never lost: it
// fires when the interval is over. Keys are servers the controller holds
// sessions for, and forget drops a server's entry when it goes.
type debouncer struct {
	interval time.Duration
	fire     func(key string)

	mu    sync.Mutex
	state map[string]*debounceState
}

type debounceState struct {
	last    time.Time
	pending *time.Timer
}

func newDebouncer(interval time.Duration, fire func(key string)) *debouncer {
	return &debouncer{interval: interval, fire: fire, state: map[string]*debounceState{}}
}

// notify says key asked for a re-list.
func (d *debouncer) notify(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.state[key]
	if !ok {
		st = &debounceState{}
		d.state[key] = st
	}
	if st.pending != nil {
		listChangedTotal.WithLabelValues("debounced").Inc()
		return
	}
	wait := d.interval - time.Since(st.last)
	if wait <= 0 {
		st.last = time.Now()
		listChangedTotal.WithLabelValues("relisted").Inc()
		go d.fire(key)
		return
	}
	listChangedTotal.WithLabelValues("debounced").Inc()
	st.pending = time.AfterFunc(wait, func() {
		d.mu.Lock()
		if d.state[key] != st {
			d.mu.Unlock()
			return
		}
		st.pending = nil
		st.last = time.Now()
		d.mu.Unlock()
		listChangedTotal.WithLabelValues("relisted").Inc()
		d.fire(key)
	})
}

// forget drops what is kept for key.
func (d *debouncer) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.state[key]; ok && st.pending != nil {
		st.pending.Stop()
	}
	delete(d.state, key)
}

// size is how many servers have state, for tests.
func (d *debouncer) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.state)
}
