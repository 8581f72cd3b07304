package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// The Streamable HTTP transport (2025-03-26 onwards, as 2025-11-25 states
// it) at /mcp: POST carries one message, GET opens the session's listening
// stream, DELETE ends the session.

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "MCP-Protocol-Version"
)

func (b *Bridge) serveStreamable(w http.ResponseWriter, r *http.Request) {
	if !originAllowed(r) {
		writeError(w, http.StatusForbidden, nil, codeInvalidRequest, "requests from origin %q are not allowed", r.Header.Get("Origin"))
		return
	}
	switch r.Method {
	case http.MethodPost:
		b.streamablePost(w, r)
	case http.MethodGet:
		b.streamableListen(w, r)
	case http.MethodDelete:
		if s, ok := b.streamableSession(w, r, nil); ok {
			b.sessions.end(s)
			w.WriteHeader(http.StatusOK)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method %s is not allowed", r.Method)
	}
}

func (b *Bridge) streamablePost(w http.ResponseWriter, r *http.Request) {
	m, ok := readMessage(w, r, b.opts.MaxRequestBody)
	if !ok {
		return
	}
	if m.IsRequest() && m.Method == string(mcp.MethodInitialize) {
		b.streamableInitialize(w, r, m)
		return
	}
	s, ok := b.streamableSession(w, r, m.ID)
	if !ok {
		return
	}
	switch {
	case m.IsRequest():
		b.streamableRequest(w, r, s, m)
	case m.IsNotification():
		b.notification(s, m)
		w.WriteHeader(http.StatusAccepted)
	default:
		// An answer to a request the bridge relayed from the server.
		b.answer(w, r, s, m)
	}
}

// streamableSession finds the session a request names. Without the header
// it answers 400, for a session it does not know (ended, expired, or from
// before a restart of the bridge) 404, which tells the client to initialize
// again.
func (b *Bridge) streamableSession(w http.ResponseWriter, r *http.Request, id json.RawMessage) (*session, bool) {
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		writeError(w, http.StatusBadRequest, id, codeInvalidRequest, "the %s header is required: initialize first", headerSessionID)
		return nil, false
	}
	s := b.sessions.get(sid)
	if s == nil || s.sse {
		writeError(w, http.StatusNotFound, id, codeInvalidRequest, "unknown or expired session: initialize again")
		return nil, false
	}
	s.mu.Lock()
	revision := s.revision
	s.mu.Unlock()
	if v := r.Header.Get(headerProtocolVersion); !acceptedRevision(v, revision) {
		writeError(w, http.StatusBadRequest, id, codeInvalidRequest, "unsupported %s %q; the bridge speaks %v", headerProtocolVersion, v, clientRevisions)
		return nil, false
	}
	s.touch()
	return s, true
}

// streamableInitialize starts a session. It waits (bounded) for the child
// to be ready, and answers 503 if it is not, so that no session exists that
// has not been initialized.
func (b *Bridge) streamableInitialize(w http.ResponseWriter, r *http.Request, m message) {
	s, err := b.sessions.open(false)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, m.ID, codeOverloaded, "the bridge has %d sessions, the most it takes", b.opts.MaxSessions)
		return
	}
	rep := b.initialize(r.Context(), s, m)
	if rep.failed() {
		b.sessions.end(s)
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, encodeReply(m.ID, rep))
		return
	}
	w.Header().Set(headerSessionID, s.id)
	writeJSON(w, http.StatusOK, encodeReply(m.ID, rep))
}

// streamableRequest answers a request with JSON, or with an event stream
// when something must reach the client before the answer and its Accept
// allows one: the progress it asked for (the stream starts at once), or a
// request of the server's relayed to it (the stream starts then).
func (b *Bridge) streamableRequest(w http.ResponseWriter, r *http.Request, s *session, m message) {
	if !s.acquire() {
		writeError(w, http.StatusTooManyRequests, m.ID, codeOverloaded, "this session has %d requests in flight, the most the bridge takes", maxSessionCalls)
		return
	}
	defer s.release()
	ctx, cancel := context.WithTimeout(r.Context(), b.opts.RequestTimeout)
	defer cancel()
	out := &postAnswer{w: w, streams: wire.AcceptsEventStream(r.Header.Get("Accept"))}
	c, rep := b.request(ctx, s, m, out.streams)
	if c == nil {
		writeJSON(w, http.StatusOK, encodeReply(m.ID, *rep))
		return
	}
	if c.token != nil && out.streams && out.start() != nil {
		b.up.abandon(c, "the client's stream broke")
		return
	}
	if rep, ok := b.relay(ctx, c, out.send, out.keepAlive); ok {
		out.finish(m.ID, rep)
	}
}

// postAnswer is the answer to one POSTed request: JSON, until something
// must go to the client before it, which makes it an event stream.
type postAnswer struct {
	w       http.ResponseWriter
	streams bool         // the client's Accept allows an event stream
	stream  *eventStream // nil until started
}

func (a *postAnswer) start() error {
	var err error
	a.stream, err = startEventStream(a.w, nil)
	return err
}

// send writes a message on the stream, starting it if need be. A client
// that accepts no stream is sent no relayed requests (the call cannot
// take any), so what it misses is progress, which is advisory.
func (a *postAnswer) send(msg []byte) bool {
	if !a.streams {
		return true
	}
	if a.stream == nil && a.start() != nil {
		return false
	}
	return a.stream.send("message", msg) == nil
}

func (a *postAnswer) keepAlive() error {
	if a.stream == nil {
		return nil
	}
	return a.stream.keepAlive()
}

// finish writes the answer: the stream's last event, or the JSON body.
func (a *postAnswer) finish(id json.RawMessage, rep reply) {
	if a.stream != nil {
		_ = a.stream.send("message", encodeReply(id, rep))
		return
	}
	writeJSON(a.w, http.StatusOK, encodeReply(id, rep))
}

// relay hands what the call sends its client (the progress it asked for,
// the requests the child relays to it and their cancellations) to deliver
// until its reply comes, which it returns; false when there is nothing to
// answer (the client went away, or a message could not be delivered).
// keepAlive, if not nil, is called while the call is quiet, so that
// proxies keep a stream that carries only this call open. The requests
// still relayed for the call when it ends are ended with it.
func (b *Bridge) relay(ctx context.Context, c *call, deliver func([]byte) bool, keepAlive func() error) (reply, bool) {
	method := c.request.Method
	ended := relayEnded(method, reply{}, false)
	defer func() { b.up.endRelays(c, ended) }() // c follows resend to the call in flight
	ticker := time.NewTicker(keepAliveEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if keepAlive != nil && keepAlive() != nil {
				b.up.abandon(c, "the client's stream broke")
				return reply{}, false
			}
		case note := <-c.progress:
			if !deliver(note) {
				b.up.abandon(c, "the client's stream broke")
				return reply{}, false
			}
		case msg := <-c.asks:
			if !deliver(msg) {
				b.up.abandon(c, "the client's stream broke")
				return reply{}, false
			}
		case rep := <-c.reply:
			if rep.resend {
				var ok bool
				if c, rep, ok = b.up.resend(ctx, c); c == nil {
					return rep, ok // resend ended the relays
				}
				continue
			}
			ended = relayEnded(method, rep, true)
			// Progress sent before the answer is queued already: it
			// goes first.
			for {
				select {
				case note := <-c.progress:
					deliver(note)
					continue
				default:
				}
				return rep, true
			}
		case <-ctx.Done():
			rep, ok := b.up.await(ctx, c)
			ended = relayEnded(method, rep, ok)
			return rep, ok
		}
	}
}

// streamableListen serves a session's listening stream: list_changed, log
// messages and other notifications not tied to a request.
func (b *Bridge) streamableListen(w http.ResponseWriter, r *http.Request) {
	if !wire.AcceptsEventStream(r.Header.Get("Accept")) {
		writeError(w, http.StatusNotAcceptable, nil, codeInvalidRequest, "the listening stream needs Accept: text/event-stream")
		return
	}
	s, ok := b.streamableSession(w, r, nil)
	if !ok {
		return
	}
	if !s.openStream() {
		writeError(w, http.StatusConflict, nil, codeInvalidRequest, "this session has a listening stream already")
		return
	}
	defer s.closeStream()
	stream, err := startEventStream(w, nil)
	if err != nil {
		return
	}
	pump(r.Context(), s, stream)
}

// pump writes a session's queued messages to its stream until the session
// or the connection ends, or a write fails.
func pump(ctx context.Context, s *session, stream *eventStream) {
	ticker := time.NewTicker(keepAliveEvery)
	defer ticker.Stop()
	for {
		select {
		case msg := <-s.events:
			if stream.send("message", msg) != nil {
				return
			}
		case <-ticker.C:
			if stream.keepAlive() != nil {
				return
			}
		case <-s.ctx.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}
