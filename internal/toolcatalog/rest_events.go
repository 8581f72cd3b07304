package toolcatalog

import (
	"encoding/json"
	"net/http"
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

// failure sends the error the plain answer would have carried, with the
// message to append for a call in a model API's shape.
func (s *eventStream) failure(err error, cl *call) {
	f := failureOf(err)
	s.send("error", struct {
		Error   string `json:"error"`
		Status  int    `json:"status"`
		Message any    `json:"message,omitempty"`
	}{f.message, f.status, cl.messageOf(&Envelope{}, f.message)})
}
