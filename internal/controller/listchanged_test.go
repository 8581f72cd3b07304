package controller

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDebouncerRelistsOncePerIntervalAndKeepsTheLast: a flood of
// notifications from one server makes one re-list at once and one when
// the interval is over (the last change is never lost), other servers are
// not held back, and a forgotten server leaves nothing behind.
func TestDebouncerRelistsOncePerIntervalAndKeepsTheLast(t *testing.T) {
	var mu sync.Mutex
	fired := map[string]int{}
	var total atomic.Int64
	d := newDebouncer(300*time.Millisecond, func(key string) {
		mu.Lock()
		fired[key]++
		mu.Unlock()
		total.Add(1)
	})
	count := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return fired[key]
	}
	debouncedBefore := testutil.ToFloat64(listChangedTotal.WithLabelValues("debounced"))

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				d.notify("ns/flood")
			}
		}()
	}
	wg.Wait()
	d.notify("ns/quiet")
	waitUntil(t, "the quiet server's re-list", func() bool { return count("ns/quiet") == 1 })
	waitUntil(t, "the trailing re-list of the flood", func() bool { return count("ns/flood") == 2 })
	if got := testutil.ToFloat64(listChangedTotal.WithLabelValues("debounced")) - debouncedBefore; got != 999 {
		t.Errorf("counted %v debounced notifications, want 999", got)
	}
	// Nothing more fires for the flood once the interval passes again.
	time.Sleep(600 * time.Millisecond)
	if got := count("ns/flood"); got != 2 {
		t.Errorf("the flood made %d re-lists, want 2", got)
	}

	d.notify("ns/flood")
	d.notify("ns/flood") // pending
	d.forget("ns/flood")
	d.forget("ns/quiet")
	if d.size() != 0 {
		t.Errorf("%d servers still have state after being forgotten", d.size())
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
