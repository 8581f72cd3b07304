package toolcatalog

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// eventStream is an execute answer as server-sent events, for callers
// that ask for one (Accept: text/event-stream): "progress" events as the
// server reports progress, then one "result" event with the envelope, or
// one "error" event with the error body and the status code the plain
// answer would have had.
type eventStream struct {
	w    http.ResponseWriter
	mu   sync.Mutex
	done bool
}

func acceptsEventStream(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		if media, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && media == "text/event-stream" {
			return true
		}
	}
	return false
}

func startEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w}
}

func (s *eventStream) send(event string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	_ = wire.WriteEvent(s.w, event, raw)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// close ends the stream for good: the handler is returning, and a
// progress notification the upstream sent after its answer (the MCP client
// may deliver one after the call returned) must not write to a response
// net/http has already reused.
func (s *eventStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
}

// failure sends the error the plain answer would have carried.
func (s *eventStream) failure(err error) {
	status, message := http.StatusInternalServerError, "internal error"
	var reqErr *requestError
	var upErr *upstreamError
	var authErr *authError
	switch {
	case errors.As(err, &reqErr):
		status, message = reqErr.code, reqErr.message
	case errors.As(err, &upErr):
		status, message = upErr.code, upErr.Error()
	case errors.As(err, &authErr):
		status, message = authErr.code, authErr.message
	}
	s.send("error", struct {
		Error  string `json:"error"`
		Status int    `json:"status"`
	}{message, status})
}
