package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

func startGoSDK(t *testing.T, mode testmcp.GoSDKMode, opts ...testmcp.GoSDKOptions) *testmcp.GoSDK {
	t.Helper()
	g := testmcp.StartGoSDK(mode, opts...)
	t.Cleanup(g.Stop)
	g.AddRawTool("echo", "Echoes.", `{"type":"object","properties":{"m":{"type":"string"}},"x-vendor":1}`, func(a json.RawMessage) string { return string(a) })
	return g
}

// TestEveryRevisionIsNegotiated: against go-sdk servers (an implementation
// nobody here wrote) speaking each revision, discovery settles on the
// newest both sides speak, in the documented order: server/discover, then
// initialize, then HTTP+SSE; tools list with their schemas as sent, and
// calls work.
func TestEveryRevisionIsNegotiated(t *testing.T) {
	tests := []struct {
		name      string
		mode      testmcp.GoSDKMode
		revisions []string
		want      string
		transport Transport
		methods   []string // the first requests, in order
	}{
		{"2026-07-28 only", testmcp.GoSDKOnly2026, nil, "2026-07-28", TransportStreamableHTTP, []string{"server/discover", "tools/list"}},
		{"stateless, every revision", testmcp.GoSDKStateless, nil, "2026-07-28", TransportStreamableHTTP, []string{"server/discover", "tools/list"}},
		{"sessions: 2025-11-25 after discover lists the older ones", testmcp.GoSDKSessions, nil, "2025-11-25", TransportStreamableHTTP,
			[]string{"server/discover", "initialize", "notifications/initialized", "tools/list"}},
		{"2025-06-18", testmcp.GoSDKSessions, []string{"2025-06-18"}, "2025-06-18", TransportStreamableHTTP, []string{"server/discover", "initialize"}},
		{"2025-03-26", testmcp.GoSDKSessions, []string{"2025-03-26"}, "2025-03-26", TransportStreamableHTTP, []string{"server/discover", "initialize"}},
		{"2024-11-05 over Streamable HTTP", testmcp.GoSDKSessions, []string{"2024-11-05"}, "2024-11-05", TransportStreamableHTTP, []string{"server/discover", "initialize"}},
		{"HTTP+SSE", testmcp.GoSDKLegacySSE, nil, "2025-11-25", TransportSSE, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGoSDK(t, tt.mode, testmcp.GoSDKOptions{Revisions: tt.revisions})
			s := connectT(t, Target{URL: g.URL()}, nil)
			info := s.Info()
			if info.ProtocolVersion != tt.want || info.Transport != tt.transport {
				t.Fatalf("negotiated %s over %s, want %s over %s", info.ProtocolVersion, info.Transport, tt.want, tt.transport)
			}
			list, err := s.ListTools(context.Background(), DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tools) != 1 || !strings.Contains(string(list.Tools[0].InputSchema), `"x-vendor":1`) {
				t.Fatalf("listed %+v", list.Tools)
			}
			got, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"m":"hi"}`), CallOptions{})
			if err != nil || !strings.Contains(string(got.Content[0]), `\"m\":\"hi\"`) {
				t.Fatalf("call: %v %s", err, got.Content)
			}
			if methods := g.Methods(); tt.methods != nil && !slices.Equal(methods[:min(len(methods), len(tt.methods))], tt.methods) {
				t.Errorf("requests %v, want them to begin %v", methods, tt.methods)
			}
		})
	}
}

// TestTheLastRevisionSkipsTheProbe: a server known to speak an older
// revision is not asked for 2026-07-28 first.
func TestTheLastRevisionSkipsTheProbe(t *testing.T) {
	g := startGoSDK(t, testmcp.GoSDKSessions)
	s := connectT(t, Target{URL: g.URL(), Revision: "2025-11-25"}, nil)
	if s.Info().ProtocolVersion != "2025-11-25" {
		t.Fatalf("negotiated %s", s.Info().ProtocolVersion)
	}
	if m := g.Methods(); len(m) == 0 || m[0] != "initialize" {
		t.Errorf("requests %v, want initialize first", m)
	}
}

// TestASessionIsPreferredWhereTheServerKeepsOne: with AnswersOnly, a
// server that speaks 2026-07-28 and keeps sessions (mcp-go's) is given a
// 2025-11-25 session; one that keeps none (go-sdk's stateless server,
// which could ask nothing on it) or speaks only 2026-07-28 is spoken to in
// 2026-07-28; and a server nobody answers for fails once.
func TestASessionIsPreferredWhereTheServerKeepsOne(t *testing.T) {
	both := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
	both.AddTools("echo")
	tests := []struct {
		name, url, want string
		keeps           bool
	}{
		{"mcp-go: 2026-07-28 and sessions", both.URL(), "2025-11-25", true},
		{"go-sdk stateless: every revision, no session", startGoSDK(t, testmcp.GoSDKStateless).URL(), "2026-07-28", false},
		{"go-sdk: 2026-07-28 only", startGoSDK(t, testmcp.GoSDKOnly2026).URL(), "2026-07-28", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := connectT(t, Target{URL: tt.url, Revision: RevisionStateless, AnswersOnly: true}, nil)
			if got := s.Info().ProtocolVersion; got != tt.want {
				t.Fatalf("negotiated %s, want %s", got, tt.want)
			}
			if s.stateless == tt.keeps {
				t.Fatalf("stateless %v, want a kept session %v", s.stateless, tt.keeps)
			}
			if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"m":"hi"}`), CallOptions{}); err != nil {
				t.Fatalf("call: %v", err)
			}
		})
	}
	t.Run("a 2026-07-28 server whose front refuses initialize with 4xx", func(t *testing.T) {
		front := refusingInitialize(t, startGoSDK(t, testmcp.GoSDKOnly2026).URL(), http.StatusBadRequest)
		s := connectT(t, Target{URL: front, Revision: RevisionStateless, AnswersOnly: true}, nil)
		if got := s.Info().ProtocolVersion; got != "2026-07-28" || !s.stateless {
			t.Fatalf("negotiated %s (stateless %v), want 2026-07-28", got, s.stateless)
		}
	})
	t.Run("an initialize answered 503 fails, rather than settle for 2026-07-28 for good", func(t *testing.T) {
		front := refusingInitialize(t, both.URL(), http.StatusServiceUnavailable)
		_, err := Connect(context.Background(), Target{URL: front, Revision: RevisionStateless, AnswersOnly: true, Timeout: 5 * time.Second}, nil)
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrHTTPStatus || e.HTTPStatus != http.StatusServiceUnavailable {
			t.Fatalf("got %v, want the 503", err)
		}
	})
	t.Run("a server that never answers is waited for once", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var accepted atomic.Int32
		var held []net.Conn
		var mu sync.Mutex
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			_ = ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range held {
				_ = c.Close()
			}
		})
		_, err = Connect(context.Background(), Target{URL: "http://" + ln.Addr().String() + "/mcp", Revision: RevisionStateless,
			AnswersOnly: true, Timeout: 300 * time.Millisecond}, nil)
		if KindOf(err) != ErrTimeout {
			t.Fatalf("got %v (%s), want a timeout", err, KindOf(err))
		}
		if n := accepted.Load(); n != 1 {
			t.Fatalf("%d connections, want the initialize's alone: no 2026-07-28 attempt after it", n)
		}
	})
}

// refusingInitialize is a front to the server at target that answers
// every initialize with status and passes the rest on.
func refusingInitialize(t *testing.T, target string, status int) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			http.Error(w, "no initialize here", status)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL + u.Path
}

// TestStatelessRequestsCarryWhatTheRevisionRequires: every 2026-07-28 POST
// has the version header, Mcp-Method, and Mcp-Name for a call; every GET
// of an older revision has the version header too.
func TestStatelessRequestsCarryWhatTheRevisionRequires(t *testing.T) {
	stateless := startGoSDK(t, testmcp.GoSDKOnly2026)
	s := connectT(t, Target{URL: stateless.URL()}, nil)
	if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range stateless.Requests() {
		if r.HTTPMethod != http.MethodPost {
			continue
		}
		if r.Header.Get("MCP-Protocol-Version") != "2026-07-28" || r.Header.Get("Mcp-Method") != r.Method {
			t.Errorf("%s carried version %q, Mcp-Method %q", r.Method, r.Header.Get("MCP-Protocol-Version"), r.Header.Get("Mcp-Method"))
		}
		if r.Method == "tools/call" && r.Header.Get("Mcp-Name") != "echo" {
			t.Errorf("tools/call carried Mcp-Name %q", r.Header.Get("Mcp-Name"))
		}
	}

	legacy := startGoSDK(t, testmcp.GoSDKSessions)
	held := connectT(t, Target{URL: legacy.URL()}, func() {})
	waitFor(t, "the listening stream", held.Listening)
	gets := 0
	for _, r := range legacy.Requests() {
		if r.HTTPMethod == http.MethodGet {
			gets++
			if v := r.Header.Get("MCP-Protocol-Version"); v != "2025-11-25" {
				t.Errorf("a listening GET carried MCP-Protocol-Version %q", v)
			}
		}
	}
	if gets == 0 {
		t.Error("no listening GET was made")
	}
}

// TestListChangedSaysWhatIsDelivered: listChanged is true only when the
// server's changes have a stream to arrive on; a server that refuses the
// stream is polled, and says so.
func TestListChangedSaysWhatIsDelivered(t *testing.T) {
	t.Run("2026-07-28 subscription", func(t *testing.T) {
		g := startGoSDK(t, testmcp.GoSDKOnly2026)
		changed := make(chan struct{}, 4)
		s := connectT(t, Target{URL: g.URL()}, func() { changed <- struct{}{} })
		if !s.Info().ListChanged {
			t.Fatal("a server that acknowledged the subscription counts as polled")
		}
		g.AddRawTool("second", "Another.", `{"type":"object"}`, func(json.RawMessage) string { return "" })
		select {
		case <-changed:
		case <-time.After(20 * time.Second):
			t.Fatal("no list change came on the subscription")
		}
	})
	t.Run("legacy GET stream", func(t *testing.T) {
		g := startGoSDK(t, testmcp.GoSDKSessions)
		if s := connectT(t, Target{URL: g.URL()}, func() {}); !s.Info().ListChanged {
			t.Fatal("a server whose listening stream opened counts as polled")
		}
	})
	t.Run("a stateless server's GET is refused", func(t *testing.T) {
		g := startGoSDK(t, testmcp.GoSDKStateless)
		s := connectT(t, Target{URL: g.URL(), Revision: "2025-11-25"}, func() {})
		if s.Info().ProtocolVersion != "2025-11-25" || s.Info().ListChanged {
			t.Fatalf("%s, listChanged %v: want 2025-11-25, polled", s.Info().ProtocolVersion, s.Info().ListChanged)
		}
	})
}

// TestTTLIsTheEarliestUsefulRefresh: a 2026-07-28 server's ttlMs comes
// back with the list.
func TestTTLIsTheEarliestUsefulRefresh(t *testing.T) {
	g := startGoSDK(t, testmcp.GoSDKOnly2026, testmcp.GoSDKOptions{TTL: 90 * time.Second})
	s := connectT(t, Target{URL: g.URL()}, nil)
	list, err := s.ListTools(context.Background(), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if list.TTL != 90*time.Second {
		t.Errorf("ttl %s, want 1m30s", list.TTL)
	}
}

// TestARefusedRevisionSaysWhatTheServerSpeaks: a server that speaks none
// of the operator's revisions fails with its own reason and the versions
// it named.
func TestARefusedRevisionSaysWhatTheServerSpeaks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&msg)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported protocol version","data":{"supported":["2027-03-01"],"requested":%q}}}`,
			msg.ID, r.Header.Get("MCP-Protocol-Version"))
	}))
	t.Cleanup(srv.Close)
	_, err := Connect(context.Background(), Target{URL: srv.URL + "/mcp", Transport: TransportStreamableHTTP, Timeout: 5 * time.Second}, nil)
	if KindOf(err) != ErrUnsupportedVersion || !strings.Contains(err.Error(), "it named 2027-03-01") {
		t.Fatalf("got %v (%s), want UnsupportedProtocolVersion naming 2027-03-01", err, KindOf(err))
	}
}

// TestProgressAndLogsComeBackToTheirCall: a tool's progress and log
// messages reach the call that asked for them, in every revision; calls
// beside it hear nothing of them.
func TestProgressAndLogsComeBackToTheirCall(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode testmcp.GoSDKMode
		logs bool
	}{
		{"2026-07-28", testmcp.GoSDKOnly2026, true},
		{"2025-11-25", testmcp.GoSDKSessions, true},
		// Over SSE every message shares one stream: progress is routed by
		// its token; log messages name no call and are not relayed.
		{"HTTP+SSE", testmcp.GoSDKLegacySSE, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGoSDK(t, tt.mode)
			g.AddProgressTool(3)
			s := connectT(t, Target{URL: g.URL()}, nil)
			var mu sync.Mutex
			var progress, logs []string
			opts := CallOptions{
				OnProgress: func(p json.RawMessage) { mu.Lock(); progress = append(progress, string(p)); mu.Unlock() },
				LogLevel:   "info",
				OnLog:      func(p json.RawMessage) { mu.Lock(); logs = append(logs, string(p)); mu.Unlock() },
			}
			var quiet sync.WaitGroup
			var heardByQuiet []string
			for range 3 {
				quiet.Add(1)
				go func() {
					defer quiet.Done()
					_, _ = s.CallTool(context.Background(), "steps", json.RawMessage(`{}`), CallOptions{
						OnProgress: func(p json.RawMessage) { mu.Lock(); heardByQuiet = append(heardByQuiet, string(p)); mu.Unlock() },
					})
				}()
			}
			result, err := s.CallTool(context.Background(), "steps", json.RawMessage(`{}`), opts)
			quiet.Wait()
			if err != nil || !strings.Contains(string(result.Content[0]), "done") {
				t.Fatalf("call: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(progress) != 3 || !strings.Contains(progress[2], `"progress":3`) || strings.Contains(strings.Join(progress, ""), "progressToken") {
				t.Errorf("progress heard: %v", progress)
			}
			if len(heardByQuiet) != 9 {
				t.Errorf("the three calls beside it heard %d progress notifications, want 9 (their own)", len(heardByQuiet))
			}
			if tt.logs && (len(logs) != 3 || !strings.Contains(logs[0], `"step 1"`)) {
				t.Errorf("log messages heard: %v", logs)
			}
		})
	}
}

// TestACancelledCallIsCancelledUpstream: a caller that goes away cancels
// the call at the server, in every revision (by closing the request in
// 2026-07-28, by notifications/cancelled before it).
func TestACancelledCallIsCancelledUpstream(t *testing.T) {
	for _, mode := range []testmcp.GoSDKMode{testmcp.GoSDKOnly2026, testmcp.GoSDKSessions, testmcp.GoSDKLegacySSE} {
		t.Run(string(mode), func(t *testing.T) {
			g := startGoSDK(t, mode)
			release, started := make(chan struct{}), make(chan struct{}, 1)
			defer close(release)
			g.AddWaitTool(release, started)
			s := connectT(t, Target{URL: g.URL()}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := s.CallTool(ctx, "wait", json.RawMessage(`{}`), CallOptions{})
				done <- err
			}()
			<-started
			cancel()
			if err := <-done; err == nil {
				t.Fatal("the cancelled call succeeded")
			}
			waitFor(t, "the server to see the cancel", func() bool { return g.Cancelled.Load() == 1 })
			if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Errorf("the session after a cancel: %v", err)
			}
		})
	}
}

// setLevelFront fronts a 2025-11-25 go-sdk server and hands each
// logging/setLevel to answer, which may hold it, fail it or pass it on.
func setLevelFront(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, pass http.Handler)) string {
	g := startGoSDK(t, testmcp.GoSDKSessions)
	return front(t, g.URL(), func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"logging/setLevel"`)) {
			answer(w, r, pass)
			return
		}
		pass.ServeHTTP(w, r)
	}, nil)
}

var wantLogs = CallOptions{LogLevel: "info", OnLog: func(json.RawMessage) {}}

// TestARaiseOfTheLogLevelWaitsNoLongerThanItsCall: a server that holds a
// logging/setLevel holds the calls queued behind it no longer than their
// own deadlines, not one target timeout each.
func TestARaiseOfTheLogLevelWaitsNoLongerThanItsCall(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	url := setLevelFront(t, func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		once.Do(func() { close(held) })
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		pass.ServeHTTP(w, r)
	})
	s := connectT(t, Target{URL: url, Timeout: time.Minute}, nil)
	first := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), wantLogs)
		first <- err
	}()
	<-held
	hurried, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		_, err := s.CallTool(hurried, "echo", json.RawMessage(`{}`), wantLogs)
		second <- err
	}()
	select {
	case err := <-second:
		if err == nil {
			t.Error("a call whose deadline passed succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a call waited past its own deadline for another call's raise of the log level")
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the call whose raise was held: %v", err)
	}
}

// TestARefusedRaiseIsNotRepeatedAtOnce: a server that fails setLevel is not
// asked again by every following call.
func TestARefusedRaiseIsNotRepeatedAtOnce(t *testing.T) {
	var asked atomic.Int64
	url := setLevelFront(t, func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		asked.Add(1)
		http.Error(w, "no", http.StatusInternalServerError)
	})
	s := connectT(t, Target{URL: url, Timeout: 20 * time.Second}, nil)
	for range 5 {
		if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), wantLogs); err != nil {
			t.Fatalf("a call failed with its log level: %v", err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("setLevel was asked %d times by 5 calls, want once", n)
	}
}

// TestA2026AnswerReadsAsWhatHappened: a 2026-07-28 call's answer, sent
// by the operator's own HTTP client, reads as what the server did: a
// JSON-RPC error with an error status is that error; a 401 is the
// credentials whatever its body; a stream that ends or breaks before the
// answer is a lost stream; a request from the server fails the call at
// once; an answer past the cap is too large.
func TestA2026AnswerReadsAsWhatHappened(t *testing.T) {
	stream := func(events ...string) func(w http.ResponseWriter, id string) {
		return func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				_, _ = fmt.Fprintf(w, "event: message\ndata: "+e+"\n\n", id)
			}
		}
	}
	status := func(code int, body string) func(w http.ResponseWriter, id string) {
		return func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = fmt.Fprintf(w, body, id)
		}
	}
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}`
	// held ends the answer that never comes once its subtest is over.
	var held context.Context
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter, id string)
		kind   ErrorKind
		says   string
		code   int
	}{
		{"a JSON-RPC error with an error status", status(http.StatusBadRequest, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":"header mismatch: Mcp-Name"}}`),
			ErrProtocol, "header mismatch: Mcp-Name", -32020},
		{"an error status with another body", status(http.StatusBadRequest, `not JSON-RPC (id %s)`), ErrHTTPStatus, "HTTP 400 Bad Request: not JSON-RPC", 0},
		{"a 401 with a JSON-RPC body", status(http.StatusUnauthorized, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"Unauthorized"}}`),
			ErrUnauthorized, "HTTP 401", 0},
		{"a 401 with an OAuth body", status(http.StatusUnauthorized, `{"error":"invalid_token","id":%s}`), ErrUnauthorized, "HTTP 401", 0},
		{"a stream that ends before the answer", stream(progress), ErrUnreachable, "ended before the answer came", 0},
		{"a stream that breaks off in the answer", func(w http.ResponseWriter, id string) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Length", "1000")
			_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[", id)
		}, ErrUnreachable, "ended before the answer came", 0},
		{"a stream that never answers", func(w http.ResponseWriter, id string) {
			stream(progress)(w, id)
			w.(http.Flusher).Flush()
			<-held.Done()
		}, ErrTimeout, "did not answer within 3s", 0},
		{"a request from the server", stream(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`), ErrProtocol, `asked "sampling/createMessage"`, 0},
		{"an answer past the cap", stream(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 4096) + `"}]}}`),
			ErrMalformedResponse, "more than 2048 bytes", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stateless := startGoSDK(t, testmcp.GoSDKOnly2026)
			url := answeringCalls(t, stateless.URL(), tt.answer, nil)
			var release context.CancelFunc
			held, release = context.WithCancel(context.Background())
			t.Cleanup(release) // before the front closes
			s := connectT(t, Target{URL: url, MaxResponseBytes: 2048, Timeout: 3 * time.Second}, nil)
			if s.Info().ProtocolVersion != "2026-07-28" {
				t.Fatalf("negotiated %q, want 2026-07-28", s.Info().ProtocolVersion)
			}
			_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{})
			if KindOf(err) != tt.kind || err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("got %v (%s), want %s saying %q", err, KindOf(err), tt.kind, tt.says)
			}
			if code, _, _ := RPCErrorOf(err); code != tt.code {
				t.Errorf("JSON-RPC code %d, want %d", code, tt.code)
			}
		})
	}
}

// TestClosingA2026SessionEndsItsCalls: Close ends the calls in flight on a
// 2026-07-28 session at once, saying so, rather than leaving them to run
// to the target's timeout.
func TestClosingA2026SessionEndsItsCalls(t *testing.T) {
	stateless := startGoSDK(t, testmcp.GoSDKOnly2026)
	held, release := make(chan struct{}), make(chan struct{})
	url := front(t, stateless.URL(), func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		if r.Header.Get("Mcp-Method") != "tools/call" {
			pass.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(held)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, nil)
	t.Cleanup(func() { close(release) }) // before the front closes
	s, err := Connect(context.Background(), Target{URL: url, Timeout: 10 * time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{})
		done <- err
	}()
	<-held
	s.Close()
	select {
	case err := <-done:
		if KindOf(err) != ErrUnreachable || !strings.Contains(err.Error(), "was closed before the answer came") {
			t.Errorf("got %v, want the session closed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the call went on after its session was closed")
	}
}

// TestA2026SessionReusesItsConnection: calls answered on event streams
// leave their connection to be reused, the rest of each stream read
// (closing a stream before its end drops the connection, one per call),
// also when the stream's end comes a moment after the answer.
func TestA2026SessionReusesItsConnection(t *testing.T) {
	stateless := startGoSDK(t, testmcp.GoSDKOnly2026)
	var opened atomic.Int64
	url := answeringCalls(t, stateless.URL(), func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", id)
		w.(http.Flusher).Flush()
		// The server's own end of the stream (its handler returning), a
		// moment after the answer went out: without the moment the end
		// comes in the answer's read and the test could not fail. The
		// client waits up to drainWait (50 ms) for it.
		time.Sleep(time.Millisecond)
	}, func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			opened.Add(1)
		}
	})
	s := connectT(t, Target{URL: url}, nil)
	before := opened.Load()
	const calls = 10
	for range calls {
		if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := opened.Load() - before; n > calls/2 {
		t.Errorf("%d calls opened %d connections", calls, n)
	}
}
