package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

func startServer(t *testing.T, opts testmcp.Options) *testmcp.Server {
	t.Helper()
	s, err := testmcp.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func connectT(t *testing.T, ep Target, onChange func()) *Session {
	t.Helper()
	if ep.Timeout == 0 {
		ep.Timeout = 5 * time.Second
	}
	s, err := Connect(context.Background(), ep, onChange)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestDiscoveryOverEveryTransport(t *testing.T) {
	tests := []struct {
		name   string
		server testmcp.Transport
		ask    Transport
	}{
		{"SSE asked for", testmcp.SSE, TransportSSE},
		{"Streamable HTTP asked for", testmcp.StreamableHTTP, TransportStreamableHTTP},
		{"Auto detects SSE", testmcp.SSE, TransportAuto},
		{"Auto detects Streamable HTTP", testmcp.StreamableHTTP, TransportAuto},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, testmcp.Options{Transport: tt.server, PageSize: 2})
			names := make([]string, 25)
			for i := range names {
				names[i] = fmt.Sprintf("tool%02d", i)
			}
			srv.AddTools(names...)

			s := connectT(t, Target{URL: srv.URL(), Transport: tt.ask}, nil)
			if got := s.Info().Transport; got != Transport(tt.server) {
				t.Errorf("transport: got %s, want %s", got, tt.server)
			}
			if s.Info().Name != "testmcp" || s.Info().ProtocolVersion == "" {
				t.Errorf("server info: %+v", s.Info())
			}
			list, err := s.ListTools(context.Background(), DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range list.Tools {
				got = append(got, tool.Name)
			}
			if !reflect.DeepEqual(got, names) || list.Truncated {
				t.Errorf("tools over 13 pages: got %v (truncated %v), want %v", got, list.Truncated, names)
			}
		})
	}
}

func TestSchemaIsKeptAsTheServerSentIt(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
	schema := `{"type":"object","title":"Query","$defs":{"unit":{"enum":["c","f"]}},` +
		`"properties":{"where":{"anyOf":[{"type":"string"},{"type":"object","properties":{"lat":{"type":"number"}}}]},` +
		`"unit":{"$ref":"#/$defs/unit"}},"additionalProperties":false,"x-vendor":{"nested":[1,2.5,"three"]}}`
	srv.AddTool("weather", "Weather at a place", schema)
	srv.MCP.AddTool(mcpToolWithoutSchema("bare"), nil)

	s := connectT(t, Target{URL: srv.URL()}, nil)
	list, err := s.ListTools(context.Background(), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Tool{}
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
	}
	assertJSONEqual(t, byName["weather"].InputSchema, schema)
	if byName["weather"].Description != "Weather at a place" {
		t.Errorf("description: %q", byName["weather"].Description)
	}
	assertJSONEqual(t, byName["bare"].InputSchema, `{"type":"object","properties":{}}`)
}

func TestHashIgnoresKeyOrderButNotContent(t *testing.T) {
	a := Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
	b := Tool{Name: "t", InputSchema: json.RawMessage(`{ "properties": {"a": {"type":"string"}}, "type": "object" }`)}
	c := Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)}
	d := b
	d.Description = "changed"
	if a.Hash() != b.Hash() {
		t.Error("key order or spacing changed the hash")
	}
	if a.Hash() == c.Hash() || b.Hash() == d.Hash() {
		t.Error("a changed schema or description kept the hash")
	}
}

func TestListChangedNotification(t *testing.T) {
	for _, transport := range []testmcp.Transport{testmcp.SSE, testmcp.StreamableHTTP} {
		t.Run(string(transport), func(t *testing.T) {
			srv := startServer(t, testmcp.Options{Transport: transport, ListChanged: true})
			srv.AddTools("first")
			changed := make(chan struct{}, 10)
			s := connectT(t, Target{URL: srv.URL()}, func() { changed <- struct{}{} })
			if !s.Info().ListChanged {
				t.Fatal("server announced listChanged but the session did not see it")
			}
			// The GET stream of Streamable HTTP opens after initialize;
			// notify until one arrives rather than racing it.
			deadline := time.After(10 * time.Second)
			for i := 0; ; i++ {
				srv.AddTools(fmt.Sprintf("added%d", i))
				select {
				case <-changed:
					return
				case <-time.After(200 * time.Millisecond):
				case <-deadline:
					t.Fatal("no list_changed notification within 10s")
				}
			}
		})
	}
}

// TestSessionEndsWhenItsServerGoesAway: a session that listens for
// changes ends, on either transport, when its server stops, so its owner
// can reconnect instead of waiting on a stream that will not come back.
func TestSessionEndsWhenItsServerGoesAway(t *testing.T) {
	for _, transport := range []testmcp.Transport{testmcp.SSE, testmcp.StreamableHTTP} {
		t.Run(string(transport), func(t *testing.T) {
			srv := startServer(t, testmcp.Options{Transport: transport, ListChanged: true})
			srv.AddTools("first")
			s := connectT(t, Target{URL: srv.URL()}, func() {})
			if _, err := s.ListTools(context.Background(), DefaultLimits); err != nil {
				t.Fatal(err)
			}
			// A stream that never opened is the library's to retry; the loss
			// of one that was open ends the session.
			waitFor(t, "the listening stream to open", s.Listening)
			srv.Stop()
			select {
			case <-s.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the session outlived its server by 10s")
			}
		})
	}
}

func TestFailuresAreClassified(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/mcp"
	}
	silent := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { conn.Close() })
			}
		}()
		return "http://" + ln.Addr().String() + "/mcp"
	}
	handler := func(h http.HandlerFunc) func(t *testing.T) string {
		return func(t *testing.T) string {
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			return srv.URL + "/mcp"
		}
	}
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		headers map[string]string
		want    ErrorKind
	}{
		{"connection refused", refused, nil, ErrUnreachable},
		{"server that never answers", silent, nil, ErrTimeout},
		{"connection closed without an answer", handler(func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}), nil, ErrUnreachable},
		{"HTTP 401", handler(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(401) }), nil, ErrUnauthorized},
		{"HTTP 403", handler(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(403) }), nil, ErrForbidden},
		{"HTTP 500", handler(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }), nil, ErrHTTPStatus},
		{"malformed JSON", handler(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{`))
		}), nil, ErrMalformedResponse},
		{"JSON-RPC error echoing a secret", handler(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"bad token %s"}}`, req.ID, r.Header.Get("X-Token"))
		}), map[string]string{"X-Token": "s3cr3t-marker"}, ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A short timeout for the server that never answers; the others
			// answer at once, and a busy machine must not make them time out.
			timeout := 10 * time.Second
			if tt.want == ErrTimeout {
				timeout = time.Second
			}
			_, err := Connect(context.Background(), Target{URL: tt.url(t), Transport: TransportStreamableHTTP, Headers: tt.headers, Timeout: timeout}, nil)
			if err == nil {
				t.Fatal("connect succeeded")
			}
			if got := KindOf(err); got != tt.want {
				t.Errorf("kind: got %q, want %q (%v)", got, tt.want, err)
			}
			if strings.Contains(err.Error(), "s3cr3t-marker") {
				t.Errorf("message leaks a header value: %v", err)
			}
		})
	}
}

func TestAuthHeaderIsSent(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
	srv.SetRequiredHeader("Authorization", "Bearer right")
	srv.AddTools("a")
	_, err := Connect(context.Background(), Target{URL: srv.URL(), Timeout: 2 * time.Second}, nil)
	if KindOf(err) != ErrUnauthorized {
		t.Fatalf("without the header: got %v, want Unauthorized", err)
	}
	s := connectT(t, Target{URL: srv.URL(), Headers: map[string]string{"Authorization": "Bearer right"}}, nil)
	if _, err := s.ListTools(context.Background(), DefaultLimits); err != nil {
		t.Fatal(err)
	}
}

// The digest is how the controller tells a list it already published:
// the same tools sent again give the same digest, over pages or cut at a
// limit, and any change to what is kept gives another.
func TestListDigestFollowsTheToolsKept(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP, PageSize: 2})
	srv.AddTools("a", "b", "c", "d", "e")
	s := connectT(t, Target{URL: srv.URL()}, nil)
	digest := func(limits Limits) [sha256.Size]byte {
		t.Helper()
		list, err := s.ListTools(context.Background(), limits)
		if err != nil {
			t.Fatal(err)
		}
		return list.Digest
	}
	first := digest(DefaultLimits)
	if first == ([sha256.Size]byte{}) {
		t.Fatal("no digest")
	}
	if again := digest(DefaultLimits); again != first {
		t.Error("the same tools listed again gave another digest")
	}
	cut := digest(Limits{MaxPages: 10, MaxTools: 3})
	if cut == first {
		t.Error("a list cut at three tools has the digest of all five")
	}
	if again := digest(Limits{MaxPages: 10, MaxTools: 3}); again != cut {
		t.Error("the same cut list gave another digest")
	}
	// A tool read but not kept (d, after c fills the three on the second
	// page) leaves the digest as it was. The changes keep each entry's
	// length (AddTools describes d as "tool d").
	srv.AddTool("d", "tool D", `{"type":"object","properties":{"message":{"type":"string"}}}`)
	if again := digest(Limits{MaxPages: 10, MaxTools: 3}); again != cut {
		t.Error("a change to a tool read but not kept changed the digest of the cut list")
	}
	changed := digest(DefaultLimits)
	if changed == first {
		t.Error("a tool's new description left the digest as it was")
	}
	srv.AddTool("e", "tool e", `{"type":"object","properties":{"massage":{"type":"string"}}}`)
	if digest(DefaultLimits) == changed {
		t.Error("a tool's new input schema left the digest as it was")
	}
}

func TestLimitsTruncateVisibly(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP, PageSize: 3})
	srv.AddTools("a", "b", "c", "d", "e", "f", "g")
	s := connectT(t, Target{URL: srv.URL()}, nil)
	tests := []struct {
		name      string
		limits    Limits
		wantCount int
		truncated bool
	}{
		{"tool cap", Limits{MaxPages: 10, MaxTools: 5}, 5, true},
		{"page cap", Limits{MaxPages: 2, MaxTools: 100}, 6, true},
		{"within both", Limits{MaxPages: 3, MaxTools: 7}, 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := s.ListTools(context.Background(), tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tools) != tt.wantCount || list.Truncated != tt.truncated {
				t.Errorf("got %d tools, truncated %v; want %d, %v", len(list.Tools), list.Truncated, tt.wantCount, tt.truncated)
			}
		})
	}
}

func assertJSONEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs:\n got %s\nwant %s", got, want)
	}
}

// TestAHugeAnswerIsRefusedWithBoundedMemory: a server that answers with an
// endless body gets a clear error once the cap is reached, and the client
// never holds more than the cap.
func TestAHugeAnswerIsRefusedWithBoundedMemory(t *testing.T) {
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"pad":"`))
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 100 { // 100 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer huge.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Connect(context.Background(), Target{URL: huge.URL + "/mcp", Transport: TransportStreamableHTTP,
		Timeout: 10 * time.Second, MaxResponseBytes: 4 << 20}, nil)
	runtime.ReadMemStats(&after)
	if KindOf(err) != ErrMalformedResponse || !strings.Contains(err.Error(), "more than 4194304 bytes") {
		t.Fatalf("got %v, want the answer refused at the cap", err)
	}
	if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > 64<<20 {
		t.Errorf("the client allocated %d MiB for a 4 MiB cap", grown>>20)
	}
}

// legacySSEServer speaks just enough of the 2024-11-05 HTTP+SSE transport
// to initialize; then answers tools/list on its event stream with one
// event that never ends.
func legacySSEServer(t *testing.T) *httptest.Server {
	t.Helper()
	events := make(chan string, 4)
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
				if event != "endless" {
					_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", event)
					flusher.Flush()
					continue
				}
				_, _ = fmt.Fprint(w, `event: message`+"\n"+`data: {"jsonrpc":"2.0","id":"op-1","result":{"tools":[],"pad":"`)
				chunk := []byte(strings.Repeat("x", 1<<20))
				for range 100 { // 100 MiB, and no end of the event
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
				<-r.Context().Done()
				return
			}
		}
	})
	mux.HandleFunc("POST /message", func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&msg)
		w.WriteHeader(http.StatusAccepted)
		switch msg.Method {
		case "initialize":
			events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, msg.ID)
		case "tools/list":
			events <- "endless"
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestAnEndlessEventIsRefusedWithBoundedMemory: on the long-lived stream of
// the SSE transport, an event that never ends fails the session once it
// runs far past the cap, instead of being buffered without bound.
func TestAnEndlessEventIsRefusedWithBoundedMemory(t *testing.T) {
	srv := legacySSEServer(t)
	s := connectT(t, Target{URL: srv.URL + "/sse", Transport: TransportSSE, Timeout: 5 * time.Second, MaxResponseBytes: 4 << 20}, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := s.ListTools(context.Background(), DefaultLimits)
	runtime.ReadMemStats(&after)
	if KindOf(err) != ErrMalformedResponse || !strings.Contains(err.Error(), "carried an event of more than 4194304 bytes") {
		t.Fatalf("got %v, want the stream given up for an event past the cap", err)
	}
	if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > 64<<20 {
		t.Errorf("the client allocated %d MiB for a 4 MiB cap", grown>>20)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second): // the end is marked a moment after the request hears of it
		t.Error("the session outlived its broken stream")
	}
}

// countingFront is a reverse proxy to backend that counts the client
// connections open to it right now.
func countingFront(t *testing.T, backend string) (url string, open *atomic.Int64) {
	t.Helper()
	open = &atomic.Int64{}
	url = front(t, backend, func(w http.ResponseWriter, r *http.Request, pass http.Handler) { pass.ServeHTTP(w, r) },
		func(_ net.Conn, state http.ConnState) {
			switch state {
			case http.StateNew:
				open.Add(1)
			case http.StateClosed, http.StateHijacked:
				open.Add(-1)
			}
		})
	return url, open
}

// TestAClosedSessionLeavesNoConnection: a session that is not held is
// closed after each use (every refresh of a server without list changes);
// its connections must close with it, not idle on for 90 s with a socket
// at both ends.
func TestAClosedSessionLeavesNoConnection(t *testing.T) {
	for _, revision := range []string{"2025-11-25", ""} {
		t.Run("revision "+revision, func(t *testing.T) {
			srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
			srv.AddTools("echo")
			url, open := countingFront(t, srv.URL())
			s, err := Connect(context.Background(), Target{URL: url, Timeout: 5 * time.Second, Revision: revision}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Fatal(err)
			}
			if open.Load() == 0 {
				t.Fatal("no connection open while the session is")
			}
			s.Close()
			waitFor(t, "the session's connections to close", func() bool { return open.Load() == 0 })
		})
	}
}

// listeningSession connects, at revision, a session that listens for list
// changes to a server with one tool "echo" behind a front that counts the
// connections open to it; changed hears each change, one at a time.
func listeningSession(t *testing.T, revision string) (*Session, *testmcp.Server, *atomic.Int64, chan struct{}) {
	t.Helper()
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
	srv.AddTools("echo")
	url, open := countingFront(t, srv.URL())
	changed := make(chan struct{}, 1)
	s := connectT(t, Target{URL: url, Revision: revision}, func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if !s.Listening() {
		t.Fatal("the session does not listen")
	}
	return s, srv, open, changed
}

// TestAHeldSessionKeepsOnlyItsStream: a session held for its list changes
// lets its idle request connection go between refreshes (its shared pool
// does within sharedIdleTimeout; ReleaseIdle, as a refresh ends, does
// nothing there), and keeps listening on the one connection its stream
// needs.
func TestAHeldSessionKeepsOnlyItsStream(t *testing.T) {
	for _, revision := range []string{"2025-11-25", ""} {
		t.Run("revision "+revision, func(t *testing.T) {
			s, srv, open, changed := listeningSession(t, revision)
			if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a request connection beside the stream", func() bool { return open.Load() >= 2 })
			s.ReleaseIdle()
			waitFor(t, "only the stream's connection", func() bool { return open.Load() == 1 })
			select {
			case <-changed: // a change heard before, which proves nothing below
			default:
			}
			srv.AddTools("more")
			select {
			case <-changed:
			case <-time.After(20 * time.Second):
				t.Fatal("the stream no longer carries list changes")
			}
		})
	}
}

// TestReleaseIdleLetsIdleConnectionsGo: a session with a pool of its own
// (not held, or to an https server) closes its idle connections when told,
// rather than keeping them for the pool's long idle timeout, keeps its
// streams' connections, and still answers after.
func TestReleaseIdleLetsIdleConnectionsGo(t *testing.T) {
	for _, revision := range []string{"2025-11-25", ""} {
		t.Run("revision "+revision, func(t *testing.T) {
			srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
			srv.AddTools("echo")
			url, open := countingFront(t, srv.URL())
			s := connectT(t, Target{URL: url, Revision: revision}, nil)
			if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Fatal(err)
			}
			// Beside the event stream mcp-go's legacy client opens, whose
			// connection is not idle and stays.
			waitFor(t, "the request's connection, idle", func() bool { return open.Load() > srv.Listeners() })
			s.ReleaseIdle()
			waitFor(t, "only streams' connections", func() bool { return open.Load() == srv.Listeners() })
			if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Fatalf("a call after ReleaseIdle: %v", err)
			}
		})
	}
}

// TestHeldSessionsShareAPoolButNotConnections: sessions that listen for
// list changes from plain-HTTP servers share one connection pool (a pool
// each cost the manager 2 KB per server), and each still owns its
// connections: closing one ends its stream's connection at once and its
// idle one within the pool's idle timeout, while the other's stream goes
// on carrying changes. A session that does not listen keeps a pool of
// its own.
func TestHeldSessionsShareAPoolButNotConnections(t *testing.T) {
	for _, revision := range []string{"2025-11-25", ""} {
		t.Run("revision "+revision, func(t *testing.T) {
			a, _, openA, _ := listeningSession(t, revision)
			b, srvB, _, changedB := listeningSession(t, revision)
			pool := func(s *Session) http.RoundTripper { return s.http.Transport.(*recordingTransport).next }
			if pool(a) != pool(b) {
				t.Error("two sessions held for list changes have a pool each")
			}
			once := connectT(t, Target{URL: srvB.URL(), Revision: revision}, nil)
			if pool(once) == pool(a) {
				t.Error("a session not held shares the held sessions' pool")
			}

			select {
			case <-changedB: // a change heard before, which proves nothing below
			default:
			}
			a.Close()
			waitFor(t, "the closed session's connections to close", func() bool { return openA.Load() == 0 })
			srvB.AddTools("more")
			select {
			case <-changedB:
			case <-time.After(20 * time.Second):
				t.Fatal("closing one held session stopped another's stream")
			}
			if _, err := b.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Fatalf("a call on the session left open: %v", err)
			}
		})
	}
}

// TestSSEConnectDoesNotWaitForTheRevision: with HTTP+SSE the event stream
// is opened before initialize, so nothing it could wait for (the revision
// initialize negotiates) can arrive first. A connect that waited for it
// took a second more than the exchange itself; one bounded below that
// second fails if it waits.
func TestSSEConnectDoesNotWaitForTheRevision(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.SSE})
	srv.AddTools("echo")
	for _, ask := range []Transport{TransportSSE, TransportAuto} {
		t.Run(string(ask), func(t *testing.T) {
			s, err := Connect(context.Background(), Target{URL: srv.URL(), Transport: ask, Timeout: 900 * time.Millisecond}, nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer s.Close()
			if got := s.Info().Transport; got != TransportSSE {
				t.Fatalf("transport: got %s, want %s", got, TransportSSE)
			}
		})
	}
}
