package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A server that breaks a call's stream and resumes it (Last-Event-ID, the
// 2025-11-25 way) sends its requests for the call on the resumed GET: ping
// is answered at once, and elicitation is asked through the call's
// OnRequest and answered, so the server is never left waiting.
func TestRequestsOnAResumedCallStreamAreAnswered(t *testing.T) {
	var mu sync.Mutex
	answers := map[string]string{} // the server's request id → the answer POSTed
	answered := make(chan struct{}, 4)
	var callID json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if r.Header.Get("Last-Event-ID") != "e1" {
				w.WriteHeader(http.StatusMethodNotAllowed) // no listening stream
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			flusher := w.(http.Flusher)
			_, _ = fmt.Fprint(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"ping\"}\n\n")
			_, _ = fmt.Fprint(w, "id: e3\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"q1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"}}}\n\n")
			flusher.Flush()
			for range 2 {
				select {
				case <-answered:
				case <-time.After(30 * time.Second):
					return
				}
			}
			mu.Lock()
			id := callID
			mu.Unlock()
			_, _ = fmt.Fprintf(w, "id: e4\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
			flusher.Flush()
			return
		}
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		w.Header().Set("Mcp-Session-Id", "s1")
		switch msg.Method {
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"resumer","version":"1"}}}`, msg.ID)
		case "tools/call":
			mu.Lock()
			callID = msg.ID
			mu.Unlock()
			// Primes the stream with an event id, then breaks it off.
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprint(w, "id: e1\nretry: 10\ndata: \n\n")
		case "":
			var id string
			_ = json.Unmarshal(msg.ID, &id)
			mu.Lock()
			answers[id] = string(body)
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			answered <- struct{}{}
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	s := connectT(t, Target{URL: srv.URL, Transport: TransportStreamableHTTP, Timeout: 20 * time.Second}, nil)
	var asked []string
	result, err := s.CallTool(context.Background(), "resumed", json.RawMessage(`{}`), CallOptions{
		OnRequest: func(_ context.Context, method string, params json.RawMessage) Answer {
			asked = append(asked, method+" "+string(params))
			return Answer{Result: json.RawMessage(`{"action":"accept","content":{"name":"Ann"}}`)}
		}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(result.Content) != 1 || !strings.Contains(string(result.Content[0]), "done") {
		t.Errorf("the call ended with %s; want the result sent on the resumed stream", result.Content)
	}
	if len(asked) != 1 || asked[0] != `elicitation/create {"message":"name?","requestedSchema":{"type":"object"}}` {
		t.Errorf("OnRequest was asked %q; want the elicitation alone, params as sent (ping is answered without it)", asked)
	}
	if !strings.Contains(answers["p1"], `"result":{}`) || !strings.Contains(answers["q1"], `"content":{"name":"Ann"}`) {
		t.Errorf("the server got %v; want ping answered with {} and the elicitation with the caller's answer", answers)
	}
}
