package toolcatalog

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStreamsWriteNothingOnceClosed: an upstream may report progress after
// its answer, and the MCP client may hand that on after the call returned;
// by then the handler has returned and its response belongs to net/http
// again, so a closed stream must not write.
func TestStreamsWriteNothingOnceClosed(t *testing.T) {
	progress := json.RawMessage(`{"progress":1}`)
	for _, tc := range []struct {
		name string
		late func(*httptest.ResponseRecorder) func()
	}{
		{"REST event stream", func(w *httptest.ResponseRecorder) func() {
			s := startEventStream(w)
			s.send("progress", progress)
			s.close()
			return func() { s.send("progress", progress) }
		}},
		{"MCP call answered", func(w *httptest.ResponseRecorder) func() {
			s := newCallStream(w, json.RawMessage(`1`))
			s.notify("notifications/progress", progress)
			s.result(json.RawMessage(`{}`))
			s.close()
			return func() { s.notify("notifications/progress", progress) }
		}},
		{"MCP call cancelled, never answered", func(w *httptest.ResponseRecorder) func() {
			s := newCallStream(w, json.RawMessage(`1`))
			s.close()
			return func() { s.notify("notifications/progress", progress) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			late := tc.late(w)
			written := w.Body.Len()
			late()
			if w.Body.Len() != written {
				t.Errorf("a closed stream wrote %q", w.Body.String()[written:])
			}
		})
	}
}

// TestCallAnswerOnAStreamIsOneLine: the answer relays the server's content
// as it came, line breaks and all, and an event's data must be one line,
// or the client reads half an answer. Without a notification first the
// answer is plain JSON, which may keep them.
func TestCallAnswerOnAStreamIsOneLine(t *testing.T) {
	pretty := Envelope{Content: []json.RawMessage{json.RawMessage("{\n  \"type\": \"text\",\r\n  \"text\": \"a\\nb\"\n}")},
		StructuredContent: json.RawMessage("{\n\"n\": 1}")}
	w := httptest.NewRecorder()
	s := newCallStream(w, json.RawMessage(`7`))
	s.notify("notifications/progress", json.RawMessage(`{"progress":1}`))
	s.result(callAnswerOf(pretty, true))
	s.close()
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Type, Text string
			} `json:"content"`
			StructuredContent map[string]int `json:"structuredContent"`
		} `json:"result"`
	}
	var events []string
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, data)
		}
	}
	if len(events) != 2 {
		t.Fatalf("want a notification and the answer, got %d data lines in %q", len(events), w.Body.String())
	}
	if err := json.Unmarshal([]byte(events[1]), &answer); err != nil {
		t.Fatalf("the answer's data line is not the answer: %v\n%s", err, events[1])
	}
	if answer.ID != 7 || len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != "a\nb" || answer.Result.StructuredContent["n"] != 1 {
		t.Errorf("answer = %+v", answer)
	}

	// What is not JSON (nothing here writes it) is kept to one line too.
	w = httptest.NewRecorder()
	s = newCallStream(w, json.RawMessage(`8`))
	s.notify("notifications/progress", json.RawMessage(`{"progress":1}`))
	s.event([]byte("not\r\njson"))
	if got := w.Body.String(); !strings.HasSuffix(got, "data: not  json\n\n") {
		t.Errorf("stream = %q", got)
	}
}

// TestAFailedStreamWriteEndsTheStream: a write that fails (the client is
// gone, or stopped reading past the deadline) ends the stream's request,
// so that mcp-go's loop returns and its slot is freed; nothing more is
// written, and the keep-alives let it go.
func TestAFailedStreamWriteEndsTheStream(t *testing.T) {
	ended := false
	w := &failingWriter{ResponseRecorder: httptest.NewRecorder()}
	s := newStreamWriter(w, func() { ended = true }, legacyStream)
	s.Header().Set("Content-Type", "text/event-stream")
	s.WriteHeader(http.StatusOK)
	if !strings.Contains(w.Body.String(), "notifications/tools/list_changed") {
		t.Fatalf("the stream did not begin with its list changes: %q", w.Body.String())
	}
	w.fail = true
	if _, err := s.Write([]byte("event: message\ndata: {}\n\n")); err == nil {
		t.Fatal("a failed write was reported as written")
	}
	if !ended {
		t.Fatal("a failed write did not end the stream")
	}
	w.fail = false
	if _, err := s.Write([]byte("data: late\n\n")); err == nil || strings.Contains(w.Body.String(), "late") {
		t.Fatalf("an ended stream wrote again: %v, %q", err, w.Body.String())
	}
	if s.keepAlive(time.Now()) {
		t.Fatal("the keep-alives keep an ended stream")
	}
}

type failingWriter struct {
	*httptest.ResponseRecorder
	fail bool
}

func (f *failingWriter) Write(b []byte) (int, error) {
	if f.fail {
		return 0, errors.New("broken pipe")
	}
	return f.ResponseRecorder.Write(b)
}
