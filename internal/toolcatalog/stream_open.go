package toolcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// serveStream opens a listening stream of kind, within the replica's and
// the caller's stream limits (stream_gate.go), and holds it until either
// side ends it (stream_writer.go, stream_watch_linux.go). A legacy stream
// is the catalog's alone; a 2026-07-28 stream begins with mcp-go's answer
// to its subscriptions/listen request, up to the acknowledgment that says
// what the stream hears of, and from there on it is the catalog's too.
func (m *mcpHandlers) serveStream(w http.ResponseWriter, r *http.Request, h *mcpHandler, key viewKey, msg *rpcMessage, kind streamKind) {
	session := r.Header.Get("Mcp-Session-Id")
	if kind == legacyStream {
		if refusedUnissued(w, session) {
			return
		}
		if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && !mcp.IsValidProtocolVersion(v) {
			h.http.ServeHTTP(w, r) // mcp-go's refusal
			return
		}
	}
	leave, err := m.gate.enter(callerFrom(r.Context()), kind)
	if err != nil {
		writeFailure(w, err)
		return
	}
	// ended undoes, last first, what the stream holds.
	ended := []func(){leave}
	end := func() {
		for i := len(ended) - 1; i >= 0; i-- {
			ended[i]()
		}
	}
	var s *streamWriter
	status, header, opening := http.StatusOK, w.Header().Clone(), legacyGreeting
	if kind == legacyStream {
		s = newStreamWriter(legacyStream, allLists, nil, h.name)
		header.Set("Content-Type", "text/event-stream")
		header.Set("Cache-Control", "no-cache")
		if session != "" {
			ended = append(ended, m.idle.streamOpened(h, session, s.finish).release,
				m.subs.legacyOpened(sessionSubscriber(r, key), callerKeyOf(r.Context()), s))
		}
	} else {
		tag := bytes.Buffer{}
		if json.Compact(&tag, msg.ID) != nil {
			tag.Reset()
			tag.Write(msg.ID)
		}
		s = newStreamWriter(listenStream, 0, tag.Bytes(), h.name)
		ended = append(ended, m.openListen(r, key, msg, s))
		answer := acknowledge(w, r, h)
		if answer.ack == nil || answer.ack.Params.Notifications.IsEmpty() {
			// Refused, or nothing to hear of: mcp-go's answer as it came.
			end()
			answer.replay(w)
			return
		}
		s.lists = listsOf(answer.ack.Params.Notifications)
		status, header, opening = answer.status, answer.header, append(answer.body.Bytes(), s.greeting()...)
	}
	m.held.add(h, s)
	stop := context.AfterFunc(m.catalog.streams, s.finish)
	ended = append(ended, func() { m.held.remove(h, s) }, func() { stop() })
	if err := s.start(w, r, status, header, opening, m.held.closes, end); err != nil {
		end()
		m.catalog.log.Error(err, "A listening stream could not be held", "menu", menuLabel(key))
		writeError(w, http.StatusInternalServerError, "the catalog cannot hold this stream")
	}
}

// listenAnswer is mcp-go's answer to a subscriptions/listen request, up to
// its acknowledgment (ack) when it gave one.
type listenAnswer struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   bytes.Buffer
	ack    *listenAck
	// heard ends mcp-go's handling once it acknowledged a stream with
	// something to hear of: from there on the stream is the catalog's.
	heard context.CancelFunc
}

// acknowledge has mcp-go answer a subscriptions/listen request until it
// acknowledges the stream, or answers it otherwise.
func acknowledge(w http.ResponseWriter, r *http.Request, h *mcpHandler) *listenAnswer {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	a := &listenAnswer{header: w.Header().Clone(), heard: cancel}
	h.http.ServeHTTP(a, r.WithContext(ctx))
	return a
}

func (a *listenAnswer) Header() http.Header { return a.header }

func (a *listenAnswer) WriteHeader(code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status == 0 {
		a.status = code
	}
}

// Write keeps what mcp-go writes until the acknowledgment of a stream with
// something to hear of, and nothing after it: mcp-go's end of the stream,
// which the catalog cut short.
func (a *listenAnswer) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.ack != nil && !a.ack.Params.Notifications.IsEmpty() {
		return len(b), nil
	}
	a.body.Write(b)
	if ack, ok := acknowledgment(b); ok && a.ack == nil && a.status == http.StatusOK {
		a.ack = &ack
		if !ack.Params.Notifications.IsEmpty() {
			a.heard()
		}
	}
	return len(b), nil
}

// Flush lets mcp-go answer with an event stream.
func (a *listenAnswer) Flush() {}

// replay writes mcp-go's answer, as it came, to w.
func (a *listenAnswer) replay(w http.ResponseWriter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	maps.Copy(w.Header(), a.header)
	w.WriteHeader(max(a.status, http.StatusOK))
	_, _ = w.Write(a.body.Bytes())
}
