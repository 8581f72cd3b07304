package controller

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fireCounter counts a debouncer's re-lists by key.
type fireCounter struct {
	mu    sync.Mutex
	fired map[string]int
}

func (f *fireCounter) fire(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fired == nil {
		f.fired = map[string]int{}
	}
	f.fired[key]++
}

func (f *fireCounter) count(key string) func() int {
	return func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.fired[key]
	}
}

// pending reports whether a re-list of key waits for its interval.
func (d *debouncer) pending(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.state[key]
	return ok && st.pending != nil
}

// TestDebouncerRelistsOnceForAFlood: a flood of notifications from one
// server, from several goroutines, makes one re-list at once and holds
// every other one back; other servers are not held back. The interval is
// far longer than the test, so no timer can fire mid-flood however slow
// the machine.
func TestDebouncerRelistsOnceForAFlood(t *testing.T) {
	g := NewWithT(t)
	var f fireCounter
	d := newDebouncer(time.Hour, f.fire)
	defer d.forget("ns/flood")
	debounced := func() float64 { return testutil.ToFloat64(listChangedTotal.WithLabelValues("debounced")) }
	relisted := func() float64 { return testutil.ToFloat64(listChangedTotal.WithLabelValues("relisted")) }
	debouncedBefore, relistedBefore := debounced(), relisted()

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 250 {
				d.notify("ns/flood")
			}
		})
	}
	wg.Wait()
	d.notify("ns/quiet")
	g.Eventually(f.count("ns/quiet"), 20*time.Second, 5*time.Millisecond).Should(Equal(1), "the quiet server's re-list")
	g.Eventually(f.count("ns/flood"), 20*time.Second, 5*time.Millisecond).Should(Equal(1), "the flood's first re-list")
	g.Expect(debounced() - debouncedBefore).To(Equal(999.0))
	g.Expect(relisted() - relistedBefore).To(Equal(2.0))
	g.Expect(d.pending("ns/flood")).To(BeTrue(), "the flood's last notification waits for the interval")
	g.Expect(d.pending("ns/quiet")).To(BeFalse())
}

// TestDebouncerKeepsTheLastNotification: a notification held back fires
// once its interval is over, and then nothing is left to fire.
func TestDebouncerKeepsTheLastNotification(t *testing.T) {
	g := NewWithT(t)
	var f fireCounter
	d := newDebouncer(50*time.Millisecond, f.fire)
	defer d.forget("ns/s")
	d.notify("ns/s")
	d.notify("ns/s")
	d.notify("ns/s")
	g.Eventually(f.count("ns/s"), 20*time.Second, 5*time.Millisecond).Should(Equal(2), "one re-list at once, one for the held-back notifications")
	// The timer clears pending before it fires: with nothing pending,
	// nothing more can fire.
	g.Expect(d.pending("ns/s")).To(BeFalse())
	g.Expect(f.count("ns/s")()).To(Equal(2))
}

// TestDebouncerForgetStopsAPendingRelist: a server forgotten (deleted,
// suspended) leaves nothing behind, and its held-back re-list never fires.
func TestDebouncerForgetStopsAPendingRelist(t *testing.T) {
	g := NewWithT(t)
	const interval = 100 * time.Millisecond
	var f fireCounter
	d := newDebouncer(interval, f.fire)
	defer d.forget("ns/kept")
	for _, key := range []string{"ns/gone", "ns/kept"} {
		d.notify(key)
		d.notify(key) // held back
	}
	g.Expect(d.pending("ns/gone")).To(BeTrue())
	d.forget("ns/gone")
	g.Expect(d.size()).To(Equal(1), "only the kept server has state")

	// ns/kept's held-back re-list was scheduled after ns/gone's, for the
	// same interval: once it fired, ns/gone's would have too.
	g.Eventually(f.count("ns/kept"), 20*time.Second, 5*time.Millisecond).Should(Equal(2))
	g.Consistently(f.count("ns/gone"), 3*interval, 5*time.Millisecond).Should(Equal(1), "the forgotten server's pending re-list fired")
	g.Expect(d.size()).To(Equal(1))
}
