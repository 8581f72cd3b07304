package toolcatalog

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
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
			s := newCallStream(w, json.RawMessage(`1`), true)
			s.notify("notifications/progress", progress)
			s.result(json.RawMessage(`{}`))
			s.close()
			return func() { s.notify("notifications/progress", progress) }
		}},
		{"MCP call cancelled, never answered", func(w *httptest.ResponseRecorder) func() {
			s := newCallStream(w, json.RawMessage(`1`), true)
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
