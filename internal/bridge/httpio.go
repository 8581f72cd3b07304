package bridge

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

const (
	// bodyReadTimeout bounds reading one request body. The server sets no
	// ReadTimeout: it would also end the streams, whose connections are
	// read from in the background to notice a client hanging up.
	bodyReadTimeout = 30 * time.Second
	// writeTimeout bounds each write to a client, so one that stops
	// reading cannot hold a stream (and its session) forever.
	writeTimeout = 30 * time.Second
	// keepAliveEvery is how often an idle stream gets a comment, which keeps
	// proxies from closing it and shows when the client is gone.
	keepAliveEvery = 25 * time.Second
)

// readBody reads a request body of at most limit bytes. On failure it has
// answered the request already.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	_ = rc.SetReadDeadline(time.Time{})
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, "the request body is larger than %d bytes (--max-request-body)", limit)
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, nil, codeParseError, "reading the request body: %v", err)
		return nil, false
	}
	return body, true
}

// readMessage reads and parses one JSON-RPC message from a request body.
func readMessage(w http.ResponseWriter, r *http.Request, limit int64) (message, bool) {
	if mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mediaType != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, nil, codeInvalidRequest, "the request body must be application/json")
		return message{}, false
	}
	body, ok := readBody(w, r, limit)
	if !ok {
		return message{}, false
	}
	if strings.HasPrefix(strings.TrimSpace(string(body[:min(len(body), 64)])), "[") {
		writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, "JSON-RPC batches are not supported; send one message per request")
		return message{}, false
	}
	m, err := wire.ParseMessage(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, codeParseError, "the request body is not a JSON-RPC message: %v", err)
		return message{}, false
	}
	return m, true
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	_, _ = w.Write(body)
}

// writeError answers with a JSON-RPC error, so that clients show its
// message whatever the HTTP status.
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int, format string, args ...any) {
	writeJSON(w, status, encodeReply(id, errorReply(code, format, args...)))
}

// originAllowed guards against DNS rebinding, as the 2025-11-25
// specification requires: a browser page may only reach the bridge from
// the bridge's own origin. Clients that are not browsers send no Origin.
func originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// eventStream writes Server-Sent Events, each write bounded by
// writeTimeout.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startEventStream(w http.ResponseWriter, header http.Header) (*eventStream, error) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w)}
	return s, s.flush()
}

// send writes one event.
func (s *eventStream) send(event string, data []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := wire.WriteEvent(s.w, event, data); err != nil {
		return err
	}
	return s.flush()
}

func (s *eventStream) keepAlive() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return s.flush()
}

func (s *eventStream) flush() error { return s.rc.Flush() }
