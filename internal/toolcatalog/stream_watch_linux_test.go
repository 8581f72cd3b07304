package toolcatalog

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestOneWatchLearnsOfEveryClientsClose: streams are held on no goroutine
// of their own, and each ends, once, as soon as its client closes its
// connection or sends more on it, and no other stream with it; the watch
// lets go of its epoll instance once it watches nothing, and starts again
// with the next stream.
func TestOneWatchLearnsOfEveryClientsClose(t *testing.T) {
	type held struct {
		s      *streamWriter
		ended  chan struct{}
		client net.Conn
		events *bufio.Reader
	}
	closes := newCloseWatch()
	opened := make(chan held, 1)
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
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		h := <-opened
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
	waitFor(t, "no goroutine held for each stream", func() bool { return runtime.NumGoroutine()-before < n/4 })
	if got := closes.watching(); got != n {
		t.Fatalf("watching %d streams, want %d", got, n)
	}

	// Half the clients close; exactly their streams end.
	for _, h := range streams[:n/2] {
		_ = h.client.Close()
	}
	for _, h := range streams[:n/2] {
		select {
		case <-h.ended:
		case <-time.After(time.Minute):
			t.Fatal("a stream whose client closed it is still held")
		}
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
	<-sends.ended
	finished.s.finish()
	<-finished.ended
	_ = finished.client.Close()
	next := open()
	alive(next)
	for _, h := range append(streams[n/2+2:], next) {
		if ended(h) {
			t.Fatal("a stream ended with another's client")
		}
		_ = h.client.Close()
		<-h.ended
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
	<-again.ended
}
