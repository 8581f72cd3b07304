package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseAnswering is a legacy HTTP+SSE server whose answers are written by
// answer, given the request's id and method, on the one event stream
// every answer shares.
func sseAnswering(t *testing.T, answer func(id json.RawMessage, method string, params json.RawMessage) string) *httptest.Server {
	t.Helper()
	events := make(chan string, 64)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		flusher := w.(http.Flusher)
		_, _ = fmt.Fprint(w, "event: endpoint\ndata: /message\n\n")
		flusher.Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case event := <-events:
				if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", event); err != nil {
					return
				}
				flusher.Flush()
			}
		}
	})
	mux.HandleFunc("POST /message", func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&msg)
		w.WriteHeader(http.StatusAccepted)
		if msg.ID == nil {
			return // a notification
		}
		if msg.Method == "initialize" {
			events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, msg.ID)
			return
		}
		go func() { events <- answer(msg.ID, msg.Method, msg.Params) }()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestAnOversizedAnswerFailsOnlyItsOwnCall: over SSE every answer shares
// one stream. An answer past the cap, whether the server writes its id
// before the result (mcp-go) or after it (the TypeScript SDK), fails its
// own call with its own reason; the calls in flight beside it succeed and
// the session lives on.
func TestAnOversizedAnswerFailsOnlyItsOwnCall(t *testing.T) {
	const limit = 64 << 10
	pad := strings.Repeat("x", 2*limit)
	for _, order := range []string{"id first", "id last"} {
		t.Run(order, func(t *testing.T) {
			release := make(chan struct{})
			var waiting sync.WaitGroup
			waiting.Add(3)
			srv := sseAnswering(t, func(id json.RawMessage, _ string, params json.RawMessage) string {
				var call struct {
					Name string `json:"name"`
				}
				_ = json.Unmarshal(params, &call)
				if call.Name != "huge" {
					waiting.Done()
					<-release
					return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok %s"}]}}`, id, call.Name)
				}
				result := fmt.Sprintf(`{"content":[{"type":"text","text":"%s","id":"op-999999"}]}`, pad)
				if order == "id first" {
					return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
				}
				return fmt.Sprintf(`{"result":%s,"jsonrpc":"2.0","id":%s}`, result, id)
			})
			s := connectT(t, Target{URL: srv.URL + "/sse", Transport: TransportSSE, Timeout: 20 * time.Second, MaxResponseBytes: limit}, nil)

			var wg sync.WaitGroup
			results := make([]string, 3)
			errs := make([]error, 3)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := s.CallTool(context.Background(), fmt.Sprintf("slow%d", i), json.RawMessage(`{}`), CallOptions{})
					errs[i] = err
					if err == nil {
						results[i] = string(r.Content[0])
					}
				}()
			}
			waiting.Wait() // the three calls are at the server
			_, err := s.CallTool(context.Background(), "huge", json.RawMessage(`{}`), CallOptions{})
			if KindOf(err) != ErrMalformedResponse || !strings.Contains(err.Error(), "calling tool huge") || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", limit)) {
				t.Fatalf("the oversized call: got %v, want it refused at the cap", err)
			}
			close(release)
			wg.Wait()
			for i := range results {
				if errs[i] != nil || !strings.Contains(results[i], fmt.Sprintf("ok slow%d", i)) {
					t.Errorf("call %d beside it: got %q, %v", i, results[i], errs[i])
				}
			}
			select {
			case <-s.Done():
				t.Fatal("the session ended with one oversized answer")
			default:
			}
		})
	}
}
