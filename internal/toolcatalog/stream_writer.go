package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// streamWriteTimeout bounds each write to a listening stream. The HTTP
// server's WriteTimeout bounds a whole response, which a stream open for
// hours outlives; a stream instead gives each write this long, so a client
// that stopped reading is let go and one that reads is kept for good.
const streamWriteTimeout = 30 * time.Second

// defaultStreamKeepAlive is how long a listening stream may stay silent
// before the catalog writes an SSE comment to it (Options.StreamKeepAlive):
// below the 60 s idle timeouts proxies and load balancers commonly apply,
// and often enough to find a client that went away.
const defaultStreamKeepAlive = 25 * time.Second

// streamUserTimeout is how long a connection waits for its peer to
// acknowledge what was sent before giving up on it (serve_linux.go).
const streamUserTimeout = time.Minute

var keepAliveComment = []byte(": keep-alive\n\n")

// streamWriter is a listening stream's response, as mcp-go writes it:
//   - every write has its own deadline (streamWriteTimeout), and a write
//     that fails ends the stream's request, so that its client reconnects;
//   - a stream silent for the keep-alive interval gets an SSE comment
//     (streamKeepAlives);
//   - it begins by telling the client that its lists changed. A stream
//     that opens may have missed a change while it was cut, or while its
//     client was elsewhere, and the catalog keeps no history to tell, so
//     it makes its client list again: a change is never lost to a
//     reconnect. On a legacy GET stream the notifications go out as the
//     stream starts; on a 2026-07-28 subscriptions/listen stream after
//     mcp-go's acknowledgment, tagged with the subscription and only for
//     the lists the acknowledgment established.
//
// Writes are serialized, so a keep-alive never lands inside an event.
type streamWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	end  context.CancelFunc
	kind streamKind
	mu   sync.Mutex
	// events is true once mcp-go answered with an event stream; only then
	// may the catalog write events and comments of its own.
	events bool
	// greeted is true once the stream's opening notifications went out.
	greeted bool
	closed  bool
	last    time.Time
}

// newStreamWriter wraps a listening stream's response. The server's read
// deadline (ReadTimeout) is lifted: the request was read, and what the
// connection still reads is only its close.
func newStreamWriter(w http.ResponseWriter, end context.CancelFunc, kind streamKind) *streamWriter {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	return &streamWriter{w: w, rc: rc, end: end, kind: kind, last: time.Now()}
}

func (s *streamWriter) Header() http.Header { return s.w.Header() }

// Unwrap lets http.ResponseController reach the connection.
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.w }

func (s *streamWriter) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.WriteHeader(code)
	if code == http.StatusOK && strings.HasPrefix(s.w.Header().Get("Content-Type"), "text/event-stream") {
		s.events = true
		if s.kind == legacyStream && !s.greeted {
			s.greeted = true
			_ = s.writeLocked(legacyGreeting, streamWriteTimeout)
		}
	}
}

func (s *streamWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeLocked(b, streamWriteTimeout); err != nil {
		return 0, err
	}
	if s.kind == listenStream && s.events && !s.greeted {
		if ack, ok := acknowledgment(b); ok {
			s.greeted = true
			for _, n := range ack.greeting() {
				// b went out; a failed greeting ends the stream, and
				// mcp-go learns of it at its next write.
				if s.writeLocked(sseEvent(n), streamWriteTimeout) != nil {
					break
				}
			}
		}
	}
	return len(b), nil
}

func (s *streamWriter) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked(streamWriteTimeout)
}

// writeLocked writes b within its own deadline; a failed write ends the
// stream.
func (s *streamWriter) writeLocked(b []byte, timeout time.Duration) error {
	if s.closed {
		return errStreamClosed
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := s.w.Write(b); err != nil {
		s.fail()
		return err
	}
	s.last = time.Now()
	return nil
}

func (s *streamWriter) flushLocked(timeout time.Duration) {
	if s.closed {
		return
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(timeout))
	if err := s.rc.Flush(); err != nil {
		s.fail()
	}
}

func (s *streamWriter) fail() {
	s.closed = true
	s.end()
}

// notify writes one of the catalog's own events to the stream (a resource
// update), once the stream began as an event stream and greeted its
// client; before that it is dropped, the greeting making the client list
// again. A failed write ends the stream.
func (s *streamWriter) notify(event []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.events || !s.greeted {
		return
	}
	if s.writeLocked(event, streamWriteTimeout) == nil {
		s.flushLocked(streamWriteTimeout)
	}
}

// keepAliveWriteTimeout bounds a keep-alive's write: a comment of a few
// bytes waits only if the client stopped reading until its buffers filled,
// and the writers that keep every other stream alive must not wait with it.
const keepAliveWriteTimeout = 2 * time.Second

// keepAlive writes a comment to a stream silent since before quiet, and
// reports whether the stream is still open. A stream being written to is
// not silent: it is left alone rather than waited for.
func (s *streamWriter) keepAlive(quiet time.Time) bool {
	if !s.mu.TryLock() {
		return true
	}
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.events && s.last.Before(quiet) {
		if s.writeLocked(keepAliveComment, keepAliveWriteTimeout) == nil {
			s.flushLocked(keepAliveWriteTimeout)
		}
	}
	return !s.closed
}

// close ends the catalog's writing: the handler returned, and the
// response is net/http's again.
func (s *streamWriter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

var errStreamClosed = errors.New("the stream is closed")

// legacyGreeting is what every legacy stream begins with: its endpoint's
// lists changed, as events.
var legacyGreeting = func() []byte {
	var b []byte
	for _, method := range listChangedMethods {
		b = append(b, sseEvent(notification(method, nil))...)
	}
	return b
}()

// sseEvent is one message as an SSE event, as mcp-go writes them.
func sseEvent(msg any) []byte {
	data, _ := json.Marshal(msg) // maps of strings and raw JSON only
	return append(append([]byte("event: message\ndata: "), data...), '\n', '\n')
}

func notification(method string, meta map[string]json.RawMessage) map[string]any {
	n := map[string]any{"jsonrpc": "2.0", "method": method}
	if meta != nil {
		n["params"] = map[string]any{"_meta": meta}
	}
	return n
}

// listenAck is what the catalog reads of mcp-go's
// notifications/subscriptions/acknowledged.
type listenAck struct {
	Method string `json:"method"`
	Params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications mcp.SubscriptionFilter     `json:"notifications"`
	} `json:"params"`
}

// acknowledgment reads an event mcp-go wrote, if it is the listen stream's
// acknowledgment.
func acknowledgment(event []byte) (listenAck, bool) {
	var ack listenAck
	for line := range bytes.Lines(event) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue
		}
		if json.Unmarshal(data, &ack) == nil && ack.Method == string(mcp.MethodNotificationSubscriptionsAcknowledged) {
			_, tagged := ack.Params.Meta[mcp.MetaKeySubscriptionID]
			return ack, tagged
		}
	}
	return ack, false
}

// greeting is the list_changed notifications for the lists the stream
// established, tagged with its subscription.
func (a listenAck) greeting() []map[string]any {
	meta := map[string]json.RawMessage{mcp.MetaKeySubscriptionID: a.Params.Meta[mcp.MetaKeySubscriptionID]}
	var out []map[string]any
	for _, l := range []struct {
		on     bool
		method mcp.MCPMethod
	}{
		{a.Params.Notifications.ToolsListChanged, mcp.MethodNotificationToolsListChanged},
		{a.Params.Notifications.PromptsListChanged, mcp.MethodNotificationPromptsListChanged},
		{a.Params.Notifications.ResourcesListChanged, mcp.MethodNotificationResourcesListChanged},
	} {
		if l.on {
			out = append(out, notification(string(l.method), meta))
		}
	}
	return out
}

// streamKeepAlives keeps every open listening stream of the catalog alive
// from one goroutine and a few writers, instead of a timer per stream.
type streamKeepAlives struct {
	interval time.Duration
	mu       sync.Mutex
	open     map[*streamWriter]struct{}
}

// keepAliveWriters write comments at once: a client that stopped reading
// holds a writer up to keepAliveWriteTimeout, the others go on.
const keepAliveWriters = 8

func newStreamKeepAlives(interval time.Duration) *streamKeepAlives {
	return &streamKeepAlives{interval: interval, open: map[*streamWriter]struct{}{}}
}

func (k *streamKeepAlives) add(s *streamWriter) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.open[s] = struct{}{}
}

func (k *streamKeepAlives) remove(s *streamWriter) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.open, s)
}

// run writes to silent streams until ctx ends: every half interval, to
// those silent for half an interval, so that none is silent for longer
// than the interval.
func (k *streamKeepAlives) run(ctx context.Context) {
	due := make(chan *streamWriter)
	defer close(due)
	for range keepAliveWriters {
		go func() {
			for s := range due {
				if !s.keepAlive(time.Now().Add(-k.interval / 2)) {
					k.remove(s)
				}
			}
		}()
	}
	tick := time.NewTicker(k.interval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		k.mu.Lock()
		streams := make([]*streamWriter, 0, len(k.open))
		for s := range k.open {
			streams = append(streams, s)
		}
		k.mu.Unlock()
		quiet := time.Now().Add(-k.interval / 2)
		for _, s := range streams {
			if !s.silentSince(quiet) {
				continue
			}
			select {
			case due <- s:
			case <-ctx.Done():
				return
			}
		}
	}
}

// silentSince says whether the stream wrote nothing since t; it is a hint
// for run, which keepAlive checks again. A stream being written to now is
// not silent, and run does not wait for its write.
func (s *streamWriter) silentSince(t time.Time) bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	return !s.closed && s.events && s.last.Before(t)
}
