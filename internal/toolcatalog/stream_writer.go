package toolcatalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// streamWriteTimeout bounds each write to a listening stream. A write
// waits only once the client stopped reading and the connection's buffers
// filled, so a client that reads is kept for good and one that does not is
// let go (it reconnects, and its stream's greeting tells it to list again),
// and the few writers that serve every stream are not held up for long.
const streamWriteTimeout = 2 * time.Second

// defaultStreamKeepAlive is how long a listening stream may stay silent
// before the catalog writes an SSE comment to it (Options.StreamKeepAlive):
// below the 60 s idle timeouts proxies and load balancers commonly apply,
// and often enough to find a client that went away.
const defaultStreamKeepAlive = 25 * time.Second

// streamUserTimeout is how long a connection waits for its peer to
// acknowledge what was sent before giving up on it (serve_linux.go).
const streamUserTimeout = time.Minute

var keepAliveComment = []byte(": keep-alive\n\n")

// streamWriter is a listening stream: a legacy session's GET, or a
// 2026-07-28 subscriptions/listen request. Once its request is answered
// with the response's head and the stream's opening events, the catalog
// takes the connection from net/http (Hijack) and the request's goroutines
// end: what an open stream costs is its connection and this struct. The
// replica's closeWatch learns of its client's close at once
// (stream_watch_linux.go), and the catalog writes it from a few shared
// writers (stream_fanout.go):
//   - every write is one chunk of the response, with its own deadline
//     (streamWriteTimeout); a write that fails ends the stream, so that its
//     client reconnects;
//   - a stream silent for the keep-alive interval gets an SSE comment;
//   - it begins by telling the client that its lists changed. A stream
//     that opens may have missed a change while it was cut, or while its
//     client was elsewhere, and the catalog keeps no history to tell, so
//     it makes its client list again: a change is never lost to a
//     reconnect. On a 2026-07-28 stream they follow mcp-go's
//     acknowledgment, tagged with the subscription and only for the lists
//     the acknowledgment established.
//
// Writes are serialized, so a keep-alive never lands inside an event.
type streamWriter struct {
	kind streamKind
	// lists are the list changes the stream hears of.
	lists listSet
	// tag is a 2026-07-28 stream's subscription id (its request's id, as
	// compact JSON), which tags every event it is sent, and server the
	// name of the endpoint's server, which its result names.
	tag    json.RawMessage
	server string
	// conn is the connection, once taken; gone is set when the stream
	// ends, by whichever side.
	conn atomic.Pointer[net.Conn]
	gone atomic.Bool
	// started is set once start wrote the stream's beginning: end then
	// releases the stream itself.
	started atomic.Bool
	// closes watches the connection for its close, under the number
	// watched; done undoes what the stream holds, once it ended
	// (released).
	closes   *closeWatch
	watched  uint64
	done     func()
	released sync.Once
	mu       sync.Mutex
	// open is true once the head and the opening events went out; only
	// then does the stream take events.
	open bool
	// chunked is false for an HTTP/1.0 client, whose response ends with
	// the connection instead.
	chunked bool
	// last is when the stream was last written, and quiet how long it may
	// then stay silent before it gets a keep-alive (stream_fanout.go).
	last  time.Time
	quiet time.Duration
}

// listSet names the lists whose changes a stream hears of.
type listSet uint8

const (
	toolsList listSet = 1 << iota
	promptsList
	resourcesList

	allLists = toolsList | promptsList | resourcesList
)

// listChangedMethods are the notifications of each list's change.
var listChangedMethods = map[listSet]string{
	toolsList:     string(mcp.MethodNotificationToolsListChanged),
	promptsList:   string(mcp.MethodNotificationPromptsListChanged),
	resourcesList: string(mcp.MethodNotificationResourcesListChanged),
}

// eachList are the lists, in the order a greeting names them.
var eachList = []listSet{toolsList, promptsList, resourcesList}

// listsOf are the lists a 2026-07-28 subscription filter established.
func listsOf(f mcp.SubscriptionFilter) listSet {
	var l listSet
	if f.ToolsListChanged {
		l |= toolsList
	}
	if f.PromptsListChanged {
		l |= promptsList
	}
	if f.ResourcesListChanged {
		l |= resourcesList
	}
	return l
}

func newStreamWriter(kind streamKind, lists listSet, tag json.RawMessage, server string) *streamWriter {
	return &streamWriter{kind: kind, lists: lists, tag: tag, server: server}
}

// start answers the stream's request with status and header, takes the
// connection, writes opening, the stream's first events, and has closes
// watch the connection. Until it returns the stream takes no events (its
// opening covers any it missed). Once the stream has ended, by either
// side, done is called once, from a goroutine of its own. An error means
// the connection was not taken: the request is still the handler's to
// answer, and done is not called.
func (s *streamWriter) start(w http.ResponseWriter, r *http.Request, status int, header http.Header, opening []byte, closes *closeWatch, done func()) error {
	s.closes, s.done = closes, done
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fmt.Errorf("taking a listening stream's connection: %w", err)
	}
	// The server's deadlines were for the request.
	_ = conn.SetDeadline(time.Time{})
	s.conn.Store(&conn)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunked = r.ProtoAtLeast(1, 1)
	s.open = true
	first := append(responseHead(status, header, s.chunked), s.frame(opening)...)
	// Ended before it began: it still begins, and ends as the catalog ends
	// a stream, so that its client sees its request answered.
	ended := s.gone.Load()
	if ended {
		first = append(first, s.ending()...)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, err = conn.Write(first)
	s.last = time.Now()
	if err == nil && !ended {
		closes.watch(s)
	}
	// end, from here on, releases the stream itself; one that came
	// meanwhile left it to start. start stores started before it reads
	// gone, and end reads started after it stored gone: one of them sees
	// the other.
	s.started.Store(true)
	if err != nil || s.gone.Load() {
		s.gone.Store(true)
		s.release()
	}
	return nil
}

// responseHead is the head of a listening stream's response. Its
// connection closes with the stream, which the head says (Connection:
// close), so that no client sends its next request on it.
func responseHead(status int, header http.Header, chunked bool) []byte {
	h := header.Clone()
	h.Del("Content-Length")
	h.Set("Connection", "close")
	if chunked {
		h.Set("Transfer-Encoding", "chunked")
	}
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	_ = h.Write(&b) // a bytes.Buffer does not fail
	b.WriteString("\r\n")
	return b.Bytes()
}

// frame is payload as one chunk of the response; an empty payload is the
// chunk that ends it.
func (s *streamWriter) frame(payload []byte) []byte {
	if !s.chunked {
		return payload
	}
	b := make([]byte, 0, len(payload)+12)
	b = strconv.AppendInt(b, int64(len(payload)), 16)
	b = append(b, '\r', '\n')
	b = append(b, payload...)
	return append(b, '\r', '\n')
}

// writeLocked writes b, framed already, within streamWriteTimeout; a
// failed write ends the stream.
func (s *streamWriter) writeLocked(b []byte) error {
	if !s.open || s.gone.Load() {
		return errStreamClosed
	}
	conn := *s.conn.Load()
	_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := conn.Write(b); err != nil {
		s.end()
		return err
	}
	s.last = time.Now()
	return nil
}

// notify writes one event to the stream, once it is open; before that it
// is dropped, the stream's opening making the client list again.
func (s *streamWriter) notify(event []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.writeLocked(s.frame(event))
}

// listChanged tells the stream a list changed, if it hears of that list.
func (s *streamWriter) listChanged(list listSet) {
	if s.lists&list == 0 {
		return
	}
	if s.kind == legacyStream {
		s.notify(legacyListChanged[list])
		return
	}
	s.notify(sseEvent(s.tagged(listChangedMethods[list])))
}

// tagged is a notification of method, tagged with the stream's
// subscription.
func (s *streamWriter) tagged(method string) map[string]any {
	return notification(method, map[string]json.RawMessage{mcp.MetaKeySubscriptionID: s.tag})
}

// keepAlive writes a comment to the stream if it is silent at now. A
// stream being written to is not silent: it is left alone rather than
// waited for.
func (s *streamWriter) keepAlive(now time.Time) {
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	if now.Sub(s.last) >= s.quiet {
		_ = s.writeLocked(s.frame(keepAliveComment))
	}
}

// silentAt says whether the stream, at now, wrote nothing for its quiet
// time; it is a hint for the keep-alives, which keepAlive checks again. A
// stream being written to now is not silent, and the keep-alives do not
// wait for it.
func (s *streamWriter) silentAt(now time.Time) bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	return s.open && !s.gone.Load() && now.Sub(s.last) >= s.quiet
}

// finish ends the stream as the catalog ends it (it stops, or the
// stream's session ended): the response ends (ending) before the
// connection closes.
func (s *streamWriter) finish() {
	s.mu.Lock()
	if s.open && !s.gone.Load() {
		_ = s.writeLocked(s.ending())
	}
	// Before the lock goes: a start that takes it next writes the ending
	// itself.
	s.gone.Store(true)
	s.mu.Unlock()
	s.end()
}

// ending is what the catalog ends a stream with: a 2026-07-28 stream's
// request's result, as mcp-go would have answered it, and the response's
// last chunk (an HTTP/1.0 client's response ends with the connection).
func (s *streamWriter) ending() []byte {
	var b []byte
	if s.kind == listenStream {
		var id any
		_ = json.Unmarshal(s.tag, &id) // the request's own id, valid JSON
		result := &mcp.SubscriptionsListenResult{}
		result.SetResultType(mcp.ResultTypeComplete)
		meta := result.EnsureResultMeta()
		meta.SetSubscriptionID(id)
		meta.SetServerInfo(mcp.Implementation{Name: s.server, Version: serverVersion})
		b = s.frame(sseEvent(mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Result: result}))
	}
	if s.chunked {
		b = append(b, s.frame(nil)...)
	}
	return b
}

// end ends the stream at once: it writes nothing more, and its
// connection closes (release), once start wrote its beginning. It may be
// called from anywhere, at any time, any number of times.
func (s *streamWriter) end() {
	s.gone.Store(true)
	if s.started.Load() {
		s.release()
	}
}

// release lets go of a stream that ended: its watch, its connection, and
// what it holds (done), once.
func (s *streamWriter) release() {
	s.released.Do(func() {
		s.closes.forget(s)
		_ = (*s.conn.Load()).Close()
		go s.done()
	})
}

var errStreamClosed = errors.New("the stream is closed")

// legacyListChanged are the events of a list's change on a legacy stream,
// and legacyGreeting what every legacy stream begins with: its endpoint's
// lists changed.
var legacyListChanged, legacyGreeting = func() (map[listSet][]byte, []byte) {
	events := map[listSet][]byte{}
	var greeting []byte
	for _, list := range eachList {
		events[list] = sseEvent(notification(listChangedMethods[list], nil))
		greeting = append(greeting, events[list]...)
	}
	return events, greeting
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

// greeting is the list_changed events for the lists the stream hears of,
// tagged with its subscription.
func (s *streamWriter) greeting() []byte {
	var b []byte
	for _, list := range eachList {
		if s.lists&list != 0 {
			b = append(b, sseEvent(s.tagged(listChangedMethods[list]))...)
		}
	}
	return b
}
