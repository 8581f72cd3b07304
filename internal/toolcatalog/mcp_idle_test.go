package toolcatalog

import (
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNoSessionEndsUnderItsStream: requests, streams and sweeps race on
// the same sessions, and a session is never ended while a stream holds
// it; every session no stream holds is ended in the end.
func TestNoSessionEndsUnderItsStream(t *testing.T) {
	idle := newIdleSessions(time.Nanosecond)
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
		idle.unregistered(h, id, id) // what mcp-go's hook does on a DELETE
	})
	const sessions = 50
	for i := range sessions {
		idle.registered(h, fmt.Sprint("s", i), fmt.Sprint("s", i), nil)
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
	// A stream that names no session holds the one mcp-go registers for it.
	wg.Go(func() {
		for i := range 500 {
			hold := idle.streamOpened(h, "", func() {})
			idle.registered(h, fmt.Sprint("made-", i), fmt.Sprint("made-", i), hold)
			hold.release()
		}
	})
	wg.Wait()
	close(stop)
	sweeper.Wait()
	if n := underStream.Load(); n != 0 {
		t.Fatalf("%d sessions were ended while a stream held them", n)
	}
	idle.sweep(time.Now().Add(time.Second))
	idle.mu.Lock()
	defer idle.mu.Unlock()
	if len(idle.known) != 0 || len(idle.streams) != 0 || len(idle.ending) != 0 {
		t.Fatalf("after the streams closed and a sweep, %d sessions are known, %d streaming, %d ending",
			len(idle.known), len(idle.streams), len(idle.ending))
	}
	if ended.Load() == 0 {
		t.Fatal("no session was ended")
	}
}

// TestAStreamWaitsForItsSessionsEnding: a stream that opens while its
// session is being ended waits until it is over, so that the session is
// never ended under it; it holds the session from then on.
func TestAStreamWaitsForItsSessionsEnding(t *testing.T) {
	idle := newIdleSessions(time.Nanosecond)
	deleting, release := make(chan struct{}), make(chan struct{})
	h := &mcpHandler{path: "/mcp"}
	h.http = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(deleting)
		<-release
		idle.unregistered(h, "s", "record")
	})
	idle.registered(h, "s", "record", nil)
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
	idle.registered(h, "s", "again", hold) // mcp-go registers it for the stream
	idle.sweep(time.Now().Add(time.Hour))
	idle.mu.Lock()
	_, known := idle.known[sessionKey{h, "s"}]
	idle.mu.Unlock()
	if !known {
		t.Fatal("a session a stream holds was ended")
	}
	hold.release()
}

// TestALateUnregisterLeavesANewerSessionAlone: mcp-go lets go of a
// session's record and only then says so; a stream that registered the
// session anew meanwhile is not ended by the old record's news.
func TestALateUnregisterLeavesANewerSessionAlone(t *testing.T) {
	idle := newIdleSessions(time.Hour)
	h := &mcpHandler{path: "/mcp"}
	ended := 0
	hold := idle.streamOpened(h, "s", func() { ended++ })
	idle.registered(h, "s", "new", hold)
	idle.unregistered(h, "s", "old")
	if ended != 0 {
		t.Fatal("the old record's unregister ended the stream of the new one")
	}
	idle.unregistered(h, "s", "new")
	if ended != 1 {
		t.Fatal("a stream whose session mcp-go let go of is still open")
	}
	hold.release()
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
		{1 << 20, chart, 2949},
		{4096, chart, 2949},
		{2048, chart, 1024},
		{0, noHeapLimit, 1024},
		{1 << 20, 1 << 20, 64},
	} {
		if got := maxStreamsFor(tc.fds, tc.heap); got != tc.want {
			t.Errorf("with %d descriptors and a heap limit of %d: %d streams, want %d", tc.fds, tc.heap, got, tc.want)
		}
	}
}
