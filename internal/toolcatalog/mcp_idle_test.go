package toolcatalog

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestNoSessionEndsUnderItsStream: requests, streams and sweeps race on
// the same sessions, and a session is never ended while a stream holds
// it; every session no stream holds is ended in the end.
func TestNoSessionEndsUnderItsStream(t *testing.T) {
	idle := newIdleSessions(time.Nanosecond, math.MaxInt)
	var underStream, ended atomic.Int64
	h := &mcpHandler{path: "/mcp"}
	h.http = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		idle.mu.Lock()
		if len(idle.streams[sessionKey{h, id}]) > 0 {
			underStream.Add(1)
		}
		idle.mu.Unlock()
		ended.Add(1)
		idle.unregistered(h, id) // what mcp-go's hook does on a DELETE
	})
	const sessions = 50
	for i := range sessions {
		idle.registered(h, fmt.Sprint("s", i))
	}
	var sweeper, wg sync.WaitGroup
	stop := make(chan struct{})
	sweeper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				idle.sweep(time.Now())
			}
		}
	})
	for w := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				id := fmt.Sprint("s", (i*7+w)%sessions)
				hold := idle.streamOpened(h, id, func() {})
				idle.touch(h, id)
				hold.release()
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeper.Wait()
	if n := underStream.Load(); n != 0 {
		t.Fatalf("%d sessions were ended while a stream held them", n)
	}
	idle.sweep(time.Now().Add(time.Second))
	idle.mu.Lock()
	defer idle.mu.Unlock()
	if len(idle.known) != 0 || len(idle.streams) != 0 || len(idle.ending) != 0 || idle.streaming != 0 {
		t.Fatalf("after the streams closed and a sweep, %d sessions are known, %d streaming (%d counted), %d ending",
			len(idle.known), len(idle.streams), idle.streaming, len(idle.ending))
	}
	if ended.Load() == 0 {
		t.Fatal("no session was ended")
	}
}

// TestAStreamWaitsForItsSessionsEnding: a stream that opens while its
// session is being ended waits until it is over, so that the session is
// never ended under it; it holds the session from then on.
func TestAStreamWaitsForItsSessionsEnding(t *testing.T) {
	idle := newIdleSessions(time.Nanosecond, math.MaxInt)
	deleting, release := make(chan struct{}), make(chan struct{})
	h := &mcpHandler{path: "/mcp"}
	h.http = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(deleting)
		<-release
		idle.unregistered(h, "s")
	})
	idle.registered(h, "s")
	swept := make(chan struct{})
	go func() { idle.sweep(time.Now().Add(time.Second)); close(swept) }()
	<-deleting
	opened := make(chan *streamHold)
	go func() { opened <- idle.streamOpened(h, "s", func() {}) }()
	select {
	case <-opened:
		t.Fatal("a stream opened on a session while it was being ended")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	hold := <-opened
	<-swept
	idle.mu.Lock()
	_, held := idle.streams[sessionKey{h, "s"}][hold]
	idle.mu.Unlock()
	if !held {
		t.Fatal("a stream that waited for its session's ending does not hold it")
	}
	hold.release()
}

// TestOnlyTheClientsDeleteEndsASessionsStreams: a session mcp-go lets go
// of leaves its streams open (the catalog's, not mcp-go's); the client's
// DELETE ends them, at the endpoint it was sent to only.
func TestOnlyTheClientsDeleteEndsASessionsStreams(t *testing.T) {
	idle := newIdleSessions(time.Hour, math.MaxInt)
	h, other := &mcpHandler{path: "/mcp"}, &mcpHandler{path: "/other"}
	ended := map[*mcpHandler]int{}
	idle.registered(h, "s")
	here := idle.streamOpened(h, "s", func() { ended[h]++ })
	there := idle.streamOpened(other, "s", func() { ended[other]++ })
	idle.unregistered(h, "s")
	if ended[h] != 0 {
		t.Fatal("mcp-go letting go of a session ended its stream")
	}
	idle.endStreams(h, "s")
	if ended[h] != 1 || ended[other] != 0 {
		t.Fatalf("a DELETE at one endpoint ended %d streams there and %d at another, want 1 and 0", ended[h], ended[other])
	}
	here.release()
	there.release()
}

// TestTheStreamCapLeavesRoomForTheRest: the default cap on listening
// streams keeps a tenth of the descriptors, and at least 1024, for probes,
// metrics, calls and upstream connections, and half the heap limit for
// the cache, the menus and the calls.
func TestTheStreamCapLeavesRoomForTheRest(t *testing.T) {
	const noHeapLimit = math.MaxInt64
	chart := int64(512<<20) - int64(512<<20)/10 // 90% of the chart's 512Mi
	for _, tc := range []struct {
		fds  uint64
		heap int64
		want int
	}{
		{1024, noHeapLimit, 64},
		{4096, noHeapLimit, 3072},
		{20000, noHeapLimit, 18000},
		{1 << 20, noHeapLimit, (1 << 20) - (1<<20)/10},
		{1 << 20, chart, 14745},
		{4096, chart, 3072},
		{2048, chart, 1024},
		{0, noHeapLimit, 1024},
		{1 << 20, 1 << 20, 64},
	} {
		if got := maxStreamsFor(tc.fds, tc.heap); got != tc.want {
			t.Errorf("with %d descriptors and a heap limit of %d: %d streams, want %d", tc.fds, tc.heap, got, tc.want)
		}
	}
}

// TestSessionsPastTheCapEndTheLeastRecentlyUsed: a replica keeps at most
// max legacy sessions with no stream open (one with a stream counts
// against the stream cap). Past it, the least recently named with no
// stream open are ended, down to nine tenths of max; the one a stream
// holds and the one just named stay. Registered from many goroutines at
// once, the table comes back under max.
func TestSessionsPastTheCapEndTheLeastRecentlyUsed(t *testing.T) {
	const maxSessions = 10
	idle := newIdleSessions(time.Hour, maxSessions)
	var mu sync.Mutex
	var ended []string
	h := &mcpHandler{path: "/mcp"}
	h.http = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		mu.Lock()
		ended = append(ended, id)
		mu.Unlock()
		idle.unregistered(h, id) // what mcp-go's hook does on a DELETE
	})
	endedByCap := func() float64 { return testutil.ToFloat64(endedSessions.WithLabelValues("capacity")) }
	before := endedByCap()
	base := time.Now().Add(-time.Hour)
	for i := range maxSessions {
		id := fmt.Sprint("s", i)
		idle.registered(h, id)
		idle.mu.Lock()
		idle.known[sessionKey{h, id}] = base.Add(time.Duration(i) * time.Second)
		idle.mu.Unlock()
	}
	idle.touch(h, "s0")
	hold := idle.streamOpened(h, "s1", func() {})
	defer hold.release()
	idle.registered(h, "s10") // ten without a stream: at the cap
	idle.registered(h, "s11") // one past it
	waitFor(t, "the trim", func() bool {
		idle.mu.Lock()
		defer idle.mu.Unlock()
		return !idle.trimming
	})
	if !slices.Equal(ended, []string{"s2", "s3"}) {
		t.Fatalf("ended %v, want the two least recently named without a stream, s2 and s3", ended)
	}
	if got := endedByCap() - before; got != 2 {
		t.Fatalf("mcp_catalog_sessions_ended_total{reason=capacity} went up by %v, want 2", got)
	}
	for _, id := range []string{"s0", "s1", "s10", "s11"} {
		if _, ok := idle.known[sessionKey{h, id}]; !ok {
			t.Fatalf("%s was ended: just named, holding a stream, or new", id)
		}
	}
	checkStreaming(t, idle)

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				id := fmt.Sprint("w", w, "-", i)
				idle.registered(h, id)
				idle.touch(h, id)
			}
		})
	}
	wg.Wait()
	waitFor(t, "the table back under its cap", func() bool {
		idle.mu.Lock()
		defer idle.mu.Unlock()
		return !idle.trimming && len(idle.known) <= maxSessions+1 && len(idle.ending) == 0
	})
	if _, ok := idle.known[sessionKey{h, "s1"}]; !ok {
		t.Fatal("the session a stream holds was ended")
	}
	checkStreaming(t, idle)

	// Sessions with streams, however many, are not the cap's: they cause
	// no trim. (Here each stream opens first, as one of a session
	// registered at another endpoint may.)
	var holds []*streamHold
	for i := range 3 * maxSessions {
		id := fmt.Sprint("streaming", i)
		holds = append(holds, idle.streamOpened(h, id, func() {}))
		idle.registered(h, id)
	}
	idle.mu.Lock()
	trimming, streaming := idle.trimming, idle.streaming
	idle.mu.Unlock()
	if trimming || streaming != 3*maxSessions+1 {
		t.Fatalf("with %d sessions streaming, a trim is under way: %v", streaming, trimming)
	}
	for _, hold := range holds {
		hold.release()
		hold.release() // a second release changes nothing
	}
	checkStreaming(t, idle)
}

// checkStreaming checks the count of known sessions with a stream open.
func checkStreaming(t *testing.T, idle *idleSessions) {
	t.Helper()
	idle.mu.Lock()
	defer idle.mu.Unlock()
	want := 0
	for key := range idle.known {
		if len(idle.streams[key]) > 0 {
			want++
		}
	}
	if idle.streaming != want {
		t.Fatalf("%d known sessions counted as streaming, %d are", idle.streaming, want)
	}
}

// TestTheSessionCapIsAQuarterOfTheHeap: by default a replica keeps as many
// legacy sessions as a quarter of its heap limit has room for.
func TestTheSessionCapIsAQuarterOfTheHeap(t *testing.T) {
	chart := int64(512<<20) - int64(512<<20)/10 // 90% of the chart's 512Mi
	for heap, want := range map[int64]int{chart: 7372, math.MaxInt64: 65536, 1 << 20: 64} {
		if got := maxSessionsFor(heap); got != want {
			t.Errorf("with a heap limit of %d: %d sessions, want %d", heap, got, want)
		}
	}
}
