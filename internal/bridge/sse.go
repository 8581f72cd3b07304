package bridge

import (
	"context"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// The legacy HTTP+SSE transport (2024-11-05): GET /sse opens a session and
// its stream, which first names the endpoint to POST messages to; every
// answer and notification travels on the stream. The session ends with the
// stream.

func (b *Bridge) serveSSE(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		writeError(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method %s is not allowed", r.Method)
		return
	}
	if !originAllowed(r) {
		writeError(w, http.StatusForbidden, nil, codeInvalidRequest, "requests from origin %q are not allowed", r.Header.Get("Origin"))
		return
	}
	s, err := b.sessions.open(true)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, nil, codeOverloaded, "the bridge has %d sessions, the most it takes", b.opts.MaxSessions)
		return
	}
	defer b.sessions.end(s)
	s.openStream()
	defer s.closeStream()
	stream, err := startEventStream(w, nil)
	if err != nil {
		return
	}
	// Relative, so that it resolves against whatever URL the client
	// dialled, through any proxy or path prefix: …/sse → …/message.
	if stream.send("endpoint", []byte("message?sessionId="+s.id)) != nil {
		return
	}
	pump(r.Context(), s, stream)
}

func (b *Bridge) serveMessage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method %s is not allowed", r.Method)
		return
	}
	if !originAllowed(r) {
		writeError(w, http.StatusForbidden, nil, codeInvalidRequest, "requests from origin %q are not allowed", r.Header.Get("Origin"))
		return
	}
	sid := r.URL.Query().Get("sessionId")
	if sid == "" {
		writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, "the sessionId query parameter is required: open /sse first")
		return
	}
	s := b.sessions.get(sid)
	if s == nil || !s.sse {
		writeError(w, http.StatusNotFound, nil, codeInvalidRequest, "unknown or ended session: open /sse again")
		return
	}
	m, ok := readMessage(w, r, b.opts.MaxRequestBody)
	if !ok {
		return
	}
	s.touch()
	switch {
	case m.IsRequest():
		if !s.acquire() {
			writeError(w, http.StatusTooManyRequests, m.ID, codeOverloaded, "this session has %d requests in flight, the most the bridge takes", maxSessionCalls)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		go b.sseRequest(s, m)
	case m.IsNotification():
		b.notification(s, m)
		w.WriteHeader(http.StatusAccepted)
	default:
		// An answer to a request the bridge relayed from the server.
		b.answer(w, r, s, m)
	}
}

// sseRequest answers one request on the session's stream, after the
// progress notifications it asked for and the requests the server relayed
// to the client during it.
func (b *Bridge) sseRequest(s *session, m message) {
	defer s.release()
	ctx, cancel := context.WithTimeout(s.ctx, b.opts.RequestTimeout)
	defer cancel()
	var rep reply
	if m.Method == string(mcp.MethodInitialize) {
		rep = b.initialize(ctx, s, m)
	} else {
		c, r := b.request(ctx, s, m, true)
		if c == nil {
			rep = *r
		} else {
			var ok bool
			if rep, ok = b.relay(ctx, c, func(note []byte) bool { return s.pushWait(note) }, nil); !ok {
				return
			}
		}
	}
	if !s.pushWait(encodeReply(m.ID, rep)) && s.ctx.Err() == nil {
		b.log.Warn("Ending an SSE session whose client does not read its stream", "session", s.logID())
		b.sessions.end(s)
	}
}
