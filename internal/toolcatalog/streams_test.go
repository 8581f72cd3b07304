package toolcatalog

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
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

// TestAHeldStreamIsAChunkedResponse: a stream the catalog took from
// net/http is still the response its client asked for: a chunked event
// stream that begins with the opening events, carries what the catalog
// tells it, and ends cleanly when the catalog ends it, a 2026-07-28 stream
// with its request's result; when the client closes it, the stream ends
// at once and writes nothing more.
func TestAHeldStreamIsAChunkedResponse(t *testing.T) {
	type held struct {
		s    *streamWriter
		done chan struct{}
	}
	opened := make(chan held, 1)
	closes := newCloseWatch()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newStreamWriter(listenStream, toolsList|resourcesList, json.RawMessage(`"l"`), "mcp-operator")
		if r.Method == http.MethodGet {
			s = newStreamWriter(legacyStream, allLists, nil, "mcp-operator")
		}
		header := http.Header{"Content-Type": {"text/event-stream"}}
		h := held{s, make(chan struct{})}
		if err := s.start(w, r, http.StatusOK, header, s.greeting(), closes, func() { close(h.done) }); err != nil {
			t.Errorf("start: %v", err)
			return
		}
		opened <- h
	}))
	defer srv.Close()

	open := func(method string) (held, *bufio.Reader, io.Closer) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) {
			t.Fatalf("the stream's head: %d %v %v", resp.StatusCode, resp.Header, resp.TransferEncoding)
		}
		return <-opened, bufio.NewReader(resp.Body), resp.Body
	}

	h, body, conn := open(http.MethodPost)
	tagged := `{"_meta":{"io.modelcontextprotocol/subscriptionId":"l"}}`
	for _, want := range []string{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":` + tagged + `}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":` + tagged + `}`} {
		if got := readEvent(t, body); got != "event: message\ndata: "+want+"\n" {
			t.Fatalf("opening event %q, want %s", got, want)
		}
	}
	h.s.listChanged(promptsList) // not what it listens to
	h.s.listChanged(toolsList)
	if got := readEvent(t, body); !strings.Contains(got, `"method":"notifications/tools/list_changed","params":`+tagged) {
		t.Fatalf("the change the stream listens to: %q", got)
	}
	h.s.finish()
	if got := readEvent(t, body); !strings.HasPrefix(got, "event: message\ndata: ") ||
		!json.Valid([]byte(strings.TrimPrefix(got, "event: message\ndata: "))) || !resultOfListen(t, strings.TrimPrefix(got, "event: message\ndata: ")) {
		t.Fatalf("the stream's end: %q", got)
	}
	if rest, err := io.ReadAll(body); err != nil || len(rest) != 0 {
		t.Fatalf("after its result the response ends cleanly: %q, %v", rest, err)
	}
	<-h.done
	_ = conn.Close()

	h, body, conn = open(http.MethodGet)
	for range 3 {
		readEvent(t, body)
	}
	_ = conn.Close()
	select {
	case <-h.done:
	case <-time.After(time.Minute):
		t.Fatal("a stream whose client closed it is still held")
	}
	if !h.s.gone.Load() {
		t.Fatal("a stream whose client closed it is not ended")
	}
	h.s.notify([]byte("data: late\n\n")) // writes nothing, and does not block

	// An HTTP/1.0 client's stream is not chunked: it ends with the
	// connection.
	raw, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write([]byte("GET / HTTP/1.0\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	h = <-opened
	h.s.finish()
	all, err := io.ReadAll(raw)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, _ := strings.Cut(string(all), "\r\n\r\n")
	if !strings.Contains(head, "Connection: close") || strings.Contains(head, "Transfer-Encoding") ||
		!strings.HasPrefix(rest, "event: message\ndata: ") || !strings.HasSuffix(rest, "\n\n") || strings.Contains(rest, "\r\n") {
		t.Fatalf("an HTTP/1.0 stream: %q", all)
	}
}

// TestKeepAlivesAreSpreadAndTimely: streams that went silent together (all
// of them, after a change) get their keep-alives spread over half the
// interval, not at one tick, and none is silent for longer than the
// interval.
func TestKeepAlivesAreSpreadAndTimely(t *testing.T) {
	const interval = 32 * time.Second
	o := newHeldStreams(interval)
	h := &mcpHandler{}
	lo, hi := interval, time.Duration(0)
	for range 2000 {
		s := newStreamWriter(legacyStream, allLists, nil, "mcp-operator")
		o.add(h, s)
		if s.quiet < interval/2 || s.quiet+o.tick() > interval {
			t.Fatalf("a stream's keep-alive is due after %v silent, checked every %v: outside [%v, %v]", s.quiet, o.tick(), interval/2, interval)
		}
		lo, hi = min(lo, s.quiet), max(hi, s.quiet)
	}
	if lo > interval/2+time.Second || hi < interval-o.tick()-time.Second {
		t.Fatalf("2,000 streams' keep-alives fall between %v and %v of silence: not spread over [%v, %v)", lo, hi, interval/2, interval-o.tick())
	}
}

// resultOfListen says whether data is the result of the subscriptions/listen
// request "l", as mcp-go answers one at 2026-07-28.
func resultOfListen(t *testing.T, data string) bool {
	t.Helper()
	var answer struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Result  struct {
			ResultType string `json:"resultType"`
			Meta       struct {
				Subscription string `json:"io.modelcontextprotocol/subscriptionId"`
				ServerInfo   struct {
					Name, Version string
				} `json:"io.modelcontextprotocol/serverInfo"`
			} `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(data), &answer); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return answer.JSONRPC == "2.0" && answer.ID == "l" && answer.Result.ResultType == "complete" &&
		answer.Result.Meta.Subscription == "l" && answer.Result.Meta.ServerInfo.Name == "mcp-operator" && answer.Result.Meta.ServerInfo.Version == serverVersion
}

// TestAStreamWhoseClientStoppedReadingEnds: a client that stops reading
// is let go once a write waits for it past the deadline, and a stream
// ended before it began still answers its request.
func TestAStreamWhoseClientStoppedReadingEnds(t *testing.T) {
	begun := make(chan *streamWriter, 1)
	done := make(chan struct{})
	gone := make(chan bool, 1)
	closes := newCloseWatch()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newStreamWriter(listenStream, toolsList, json.RawMessage(`"l"`), "mcp-operator")
		if r.URL.Path == "/gone" {
			s.end()
			released := make(chan struct{})
			started := s.start(w, r, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, s.greeting(), closes, func() { close(released) }) == nil
			<-released
			gone <- started
			return
		}
		if err := s.start(w, r, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, s.greeting(), closes, func() { close(done) }); err != nil {
			t.Errorf("start: %v", err)
			return
		}
		begun <- s
	}))
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/gone")
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !<-gone || err != nil || !strings.Contains(string(all), "notifications/tools/list_changed") || !strings.Contains(string(all), `"resultType":"complete"`) {
		t.Fatalf("a stream ended before it began: %v, %q", err, all)
	}

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A small receive buffer, never read from.
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	s := <-begun
	event := []byte("event: message\ndata: " + strings.Repeat("x", 16<<10) + "\n\n")
	for start := time.Now(); !s.gone.Load(); {
		if time.Since(start) > time.Minute {
			t.Fatal("a stream whose client stopped reading is still open after a minute")
		}
		s.notify(event)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("an ended stream is still held")
	}
}

// readEvent reads one SSE event.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an event after %q: %v", lines, err)
		}
		if line == "\n" {
			return strings.Join(lines, "")
		}
		lines = append(lines, line)
	}
}

// TestAStreamEndedAsItBeginsStillAnswers: a stream the catalog ends while
// it is beginning (its session's DELETE, the catalog stopping) still
// answers its request: its client reads the head, the opening events and
// the request's result, then the end of the response. The head says the
// connection closes with the stream, so that the client does not send
// its next request on it (which, once the catalog closed it, would fail).
// Sequential requests from one client would otherwise take it from the
// pool.
func TestAStreamEndedAsItBeginsStillAnswers(t *testing.T) {
	closes := newCloseWatch()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newStreamWriter(listenStream, toolsList, json.RawMessage(`"l"`), "mcp-operator")
		go s.finish()
		if err := s.start(w, r, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, s.greeting(), closes, func() {}); err != nil {
			t.Errorf("start: %v", err)
		}
	}))
	defer srv.Close()
	for i := range 200 {
		resp, err := srv.Client().Post(srv.URL, "application/json", nil)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		all, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !resp.Close || !strings.HasPrefix(string(all), "event: message\ndata: ") ||
			!strings.Contains(string(all), "notifications/tools/list_changed") || !strings.Contains(string(all), `"resultType":"complete"`) {
			t.Fatalf("stream %d: %d %q, %v", i, resp.StatusCode, all, err)
		}
	}
}
