package toolcatalog

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"
)

// TestOneWatchLearnsOfEveryClientsClose: streams are held on no goroutine
// of their own, and each ends, once, as soon as its client closes its
// connection or sends more on it, and no other stream with it; the watch
// lets go of its epoll instance once it watches nothing, and starts again
// with the next stream.
func TestOneWatchLearnsOfEveryClientsClose(t *testing.T) {
	exerciseWatch(t, newCloseWatch())
}

// TestAStreamWatchedAloneEndsWithItsClient: where the watch cannot take a
// stream, a goroutine of its own watches it, to the same effect.
func TestAStreamWatchedAloneEndsWithItsClient(t *testing.T) {
	closes := newCloseWatch()
	closes.alone = true
	before := testutil.ToFloat64(streamsWatchedAlone)
	opened := exerciseWatch(t, closes)
	if got := testutil.ToFloat64(streamsWatchedAlone) - before; got != float64(opened) {
		t.Fatalf("mcp_catalog_streams_watched_alone_total went up by %v, want %d (every stream)", got, opened)
	}
}

// exerciseWatch holds streams watched by closes, and checks that each
// ends, once, as soon as its client closes its connection or sends more
// on it, and no other stream with it. It returns how many it opened.
func exerciseWatch(t *testing.T, closes *closeWatch) int {
	t.Helper()
	type held struct {
		s      *streamWriter
		ended  chan struct{}
		client net.Conn
		events *bufio.Reader
	}
	opened := make(chan held, 1)
	count := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := held{s: newStreamWriter(legacyStream, allLists, nil, "mcp-operator"), ended: make(chan struct{})}
		// done is called once: a second close panics.
		if err := h.s.start(w, r, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, legacyGreeting, closes, func() { close(h.ended) }); err != nil {
			t.Errorf("start: %v", err)
			return
		}
		opened <- h
	}))
	defer srv.Close()

	open := func() held {
		t.Helper()
		conn := askForStream(t, srv)
		h := within(t, opened, "the stream to open")
		count++
		h.client, h.events = conn, bufio.NewReader(conn)
		resp, err := http.ReadResponse(h.events, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the stream's head: %v", err)
		}
		h.events = bufio.NewReader(resp.Body)
		for range 3 {
			readEvent(t, h.events)
		}
		return h
	}
	ended := func(h held) bool {
		select {
		case <-h.ended:
			return true
		default:
			return false
		}
	}
	// alive says the stream still carries what the catalog tells it.
	alive := func(h held) {
		t.Helper()
		h.s.listChanged(toolsList)
		if got := readEvent(t, h.events); !strings.Contains(got, "notifications/tools/list_changed") {
			t.Fatalf("a stream left open: %q", got)
		}
	}

	const n = 64
	before := runtime.NumGoroutine()
	streams := make([]held, n)
	for i := range streams {
		streams[i] = open()
	}
	if !closes.alone {
		waitFor(t, "no goroutine held for each stream", func() bool { return runtime.NumGoroutine()-before < n/4 })
		closes.mu.Lock()
		got := len(closes.streams)
		closes.mu.Unlock()
		if got != n {
			t.Fatalf("watching %d streams, want %d", got, n)
		}
	}

	// Half the clients close; exactly their streams end.
	for _, h := range streams[:n/2] {
		_ = h.client.Close()
	}
	for _, h := range streams[:n/2] {
		within(t, h.ended, "a stream whose client closed it to end")
	}
	for _, h := range streams[n/2:] {
		if ended(h) {
			t.Fatal("a stream ended with another's client")
		}
		alive(h)
	}

	// A client that sends more ends its stream; one the catalog ends
	// ends once; a stream opened on a descriptor just let go is not ended
	// by the one before it.
	sends, finished := streams[n/2], streams[n/2+1]
	if _, err := sends.client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	within(t, sends.ended, "a stream whose client sent more to end")
	finished.s.finish()
	within(t, finished.ended, "a stream the catalog ended to be let go")
	_ = finished.client.Close()
	next := open()
	alive(next)
	for _, h := range append(streams[n/2+2:], next) {
		if ended(h) {
			t.Fatal("a stream ended with another's client")
		}
		_ = h.client.Close()
		within(t, h.ended, "a stream whose client closed it to end")
	}

	if closes.alone {
		return count
	}
	// Watching nothing, the watch lets go of its instance; the next
	// stream starts it again.
	waitFor(t, "the watch to let go of its epoll instance", func() bool {
		closes.mu.Lock()
		defer closes.mu.Unlock()
		return closes.epfd < 0 && len(closes.streams) == 0
	})
	again := open()
	alive(again)
	_ = again.client.Close()
	within(t, again.ended, "a stream whose client closed it to end")
	return count
}

// TestTheWatchKnowsStreamsByNumber: the kernel hands back a stream's own
// number, never its descriptor, which a later connection may be given; a
// number no stream holds any more ends nothing; and a forgotten stream's
// registration is gone before its connection closes.
func TestTheWatchKnowsStreamsByNumber(t *testing.T) {
	closes := newCloseWatch()
	opened := make(chan *streamWriter, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newStreamWriter(legacyStream, allLists, nil, "mcp-operator")
		if err := s.start(w, r, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, legacyGreeting, closes, func() {}); err != nil {
			t.Errorf("start: %v", err)
			return
		}
		opened <- s
	}))
	defer srv.Close()
	open := func() *streamWriter {
		t.Helper()
		askForStream(t, srv)
		return within(t, opened, "the stream to open")
	}
	a, b := open(), open()
	fdA, fdB := fdOf(t, a), fdOf(t, b)
	registered := epollData(t, closes)
	if registered[fdA] != a.watched || registered[fdB] != b.watched || a.watched == uint64(fdA) && b.watched == uint64(fdB) {
		t.Fatalf("registered %v; want the streams' numbers (%d at %d, %d at %d), not their descriptors", registered, a.watched, fdA, b.watched, fdB)
	}
	event := func(id uint64) unix.EpollEvent {
		return unix.EpollEvent{Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	}

	closes.forget(a)
	if _, ok := epollData(t, closes)[fdA]; ok {
		t.Fatal("a forgotten stream's connection is still registered")
	}
	closes.mu.Lock()
	stale, live := closes.watchedLocked([]unix.EpollEvent{event(a.watched)}), closes.watchedLocked([]unix.EpollEvent{event(b.watched)})
	closes.mu.Unlock()
	if len(stale) != 0 || len(live) != 1 || live[0] != b {
		t.Fatalf("an event for a forgotten stream ends %v, one for a watched stream %v", stale, live)
	}
	a.end()
	b.end()
}

// askForStream sends a stream's GET to srv on a connection of its own,
// closed when the test ends.
func askForStream(t *testing.T, srv *httptest.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	return conn
}

// fdOf is the descriptor of s's connection.
func fdOf(t *testing.T, s *streamWriter) int {
	t.Helper()
	raw, ok := rawConnOf(s)
	if !ok {
		t.Fatal("a stream's connection has no descriptor")
	}
	var fd int
	if err := raw.Control(func(f uintptr) { fd = int(f) }); err != nil {
		t.Fatal(err)
	}
	return fd
}

// epollData is what the watch's epoll instance holds, as the kernel shows
// it: each registered descriptor's data.
func epollData(t *testing.T, c *closeWatch) map[int]uint64 {
	t.Helper()
	c.mu.Lock()
	epfd := c.epfd
	c.mu.Unlock()
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", epfd))
	if err != nil {
		t.Fatal(err)
	}
	data := map[int]uint64{}
	for line := range strings.Lines(string(info)) {
		var fd int
		var events, d uint64
		if n, _ := fmt.Sscanf(line, "tfd: %d events: %x data: %x", &fd, &events, &d); n == 3 {
			data[fd] = d
		}
	}
	return data
}

// within waits for a value from ch, failing the test after a minute.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
		panic("unreachable")
	}
}
