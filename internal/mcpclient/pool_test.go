package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// gatedServer is a real MCP server whose "wait" tool answers only once
// the gate opens; inside counts the calls waiting.
type gatedServer struct {
	*testmcp.Server
	gate   chan struct{}
	inside atomic.Int64
}

func startGated(t *testing.T, transport testmcp.Transport) *gatedServer {
	t.Helper()
	g := &gatedServer{Server: startServer(t, testmcp.Options{Transport: transport}), gate: make(chan struct{})}
	g.AddToolFunc("wait", "waits for the gate", `{"type":"object"}`, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g.inside.Add(1)
		defer g.inside.Add(-1)
		select {
		case <-g.gate:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText(fmt.Sprint("done ", req.GetArguments()["n"])), nil
	})
	g.AddTools("echo")
	return g
}

func callN(t *testing.T, p *Pool, target Target, n int) (func() []string, *sync.WaitGroup) {
	t.Helper()
	var wg sync.WaitGroup
	out := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.Do(context.Background(), "ns/srv", target, func(s *Session) error {
				r, err := s.CallTool(context.Background(), "wait", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), CallOptions{})
				if err == nil {
					out[i] = string(r.Content[0])
				}
				return err
			})
			if err != nil {
				out[i] = "error: " + err.Error()
			}
		}()
	}
	return func() []string { return out }, &wg
}

// TestConcurrentCallsShareOneSession: many calls at once on one pooled
// session each get their own answer, over one connect, in every revision.
func TestConcurrentCallsShareOneSession(t *testing.T) {
	for _, tt := range []struct {
		name      string
		transport testmcp.Transport
		revision  string
	}{
		{"2026-07-28", testmcp.StreamableHTTP, ""},
		{"2025-11-25 over Streamable HTTP", testmcp.StreamableHTTP, "2025-11-25"},
		{"SSE", testmcp.SSE, "2024-11-05"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGated(t, tt.transport)
			p := &Pool{}
			t.Cleanup(p.CloseAll)
			target := Target{URL: g.URL(), Timeout: 20 * time.Second, Fingerprint: "v1", Revision: tt.revision}
			if tt.transport == testmcp.SSE {
				target.Transport = TransportSSE
			}
			results, wg := callN(t, p, target, 40)
			waitFor(t, "40 calls at the server", func() bool { return g.inside.Load() == 40 })
			close(g.gate)
			wg.Wait()
			for i, r := range results() {
				if !strings.Contains(r, fmt.Sprintf(`"done %d"`, i)) {
					t.Errorf("call %d got %s", i, r)
				}
			}
			if n := g.Connects(); n != 1 {
				t.Errorf("%d connects for one pooled session", n)
			}
			if connecting := p.connectsUnderWay(); connecting != 0 {
				t.Errorf("%d connect locks left behind", connecting)
			}
		})
	}
}

// TestAReplacedSessionFinishesItsCalls: a new fingerprint (a rotated
// Secret) and a Drop (a deleted server) both retire the session: calls in
// flight on it finish, new calls get a new session, and the old one closes
// once idle.
func TestAReplacedSessionFinishesItsCalls(t *testing.T) {
	for _, how := range []string{"fingerprint change", "drop"} {
		t.Run(how, func(t *testing.T) {
			g := startGated(t, testmcp.StreamableHTTP)
			p := &Pool{}
			t.Cleanup(p.CloseAll)
			v1 := Target{URL: g.URL(), Timeout: 20 * time.Second, Fingerprint: "v1"}
			old, _, err := p.Get(context.Background(), "ns/srv", v1)
			if err != nil {
				t.Fatal(err)
			}
			results, wg := callN(t, p, v1, 3)
			waitFor(t, "3 calls at the server", func() bool { return g.inside.Load() == 3 })

			v2 := v1
			if how == "drop" {
				p.Drop("ns/srv")
			} else {
				v2.Fingerprint = "v2"
			}
			fresh, _, err := p.Get(context.Background(), "ns/srv", v2)
			if err != nil {
				t.Fatal(err)
			}
			if fresh == old {
				t.Fatal("the retired session was handed out again")
			}
			select {
			case <-old.Done():
				t.Fatal("the retired session closed with calls in flight")
			default:
			}
			close(g.gate)
			wg.Wait()
			for i, r := range results() {
				if !strings.Contains(r, fmt.Sprintf(`"done %d"`, i)) {
					t.Errorf("call %d in flight got %s", i, r)
				}
			}
			waitFor(t, "the retired session to close once idle", func() bool {
				select {
				case <-old.Done():
					return true
				default:
					return false
				}
			})
			if _, err := fresh.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Errorf("the new session: %v", err)
			}
		})
	}
}

// TestAFailedCallKeepsTheSession: failures of one call (a JSON-RPC error,
// an unknown tool, a timeout) do not end the pooled session.
func TestAFailedCallKeepsTheSession(t *testing.T) {
	g := startGated(t, testmcp.StreamableHTTP)
	p := &Pool{}
	t.Cleanup(p.CloseAll)
	target := Target{URL: g.URL(), Timeout: time.Second, Fingerprint: "v1"}
	first, _, err := p.Get(context.Background(), "ns/srv", target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.CallTool(context.Background(), "missing", json.RawMessage(`{}`), CallOptions{}); err == nil {
		t.Fatal("calling a missing tool succeeded")
	}
	if _, err := first.CallTool(context.Background(), "wait", json.RawMessage(`{}`), CallOptions{}); KindOf(err) != ErrTimeout {
		t.Fatalf("the gated call: got %v, want a timeout", err)
	}
	again, _, err := p.Get(context.Background(), "ns/srv", target)
	if err != nil || again != first {
		t.Fatalf("after failed calls the pool gave another session (%v)", err)
	}
	if g.Connects() != 1 {
		t.Errorf("%d connects", g.Connects())
	}
}

// forgetful fronts a real server and, once forget is called, answers 404
// to every session it saw before, as a restarted server that tracks its
// sessions does.
func forgetful(t *testing.T, backend string) (url string, forget func()) {
	t.Helper()
	var mu sync.Mutex
	seen, forgotten := map[string]bool{}, map[string]bool{}
	url = front(t, backend, func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		id := r.Header.Get("Mcp-Session-Id")
		mu.Lock()
		gone := forgotten[id]
		if id != "" {
			seen[id] = true
		}
		mu.Unlock()
		if gone {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		pass.ServeHTTP(w, r)
	}, nil)
	return url, func() {
		mu.Lock()
		defer mu.Unlock()
		for id := range seen {
			forgotten[id] = true
		}
	}
}

// TestAForgottenSessionIsReplacedAndTheCallRetried: a server that
// restarted no longer knows the session (404): the session ends itself,
// and the call, which never reached the server, is sent once more on a
// fresh one.
func TestAForgottenSessionIsReplacedAndTheCallRetried(t *testing.T) {
	g := startGated(t, testmcp.StreamableHTTP)
	url, forget := forgetful(t, g.URL())
	p := &Pool{}
	t.Cleanup(p.CloseAll)
	// Sessions are of the revisions before 2026-07-28.
	target := Target{URL: url, Timeout: 5 * time.Second, Fingerprint: "v1", Revision: "2025-11-25"}
	old, _, err := p.Get(context.Background(), "ns/srv", target)
	if err != nil {
		t.Fatal(err)
	}
	forget()
	err = p.Do(context.Background(), "ns/srv", target, func(s *Session) error {
		_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("the call after the server forgot the session: %v", err)
	}
	select {
	case <-old.Done():
	default:
		t.Error("the forgotten session did not end")
	}
	if g.Initializes() != 2 {
		t.Errorf("%d initialize requests, want 2", g.Initializes())
	}
}

// TestOnlyAPoolThatHearsEventsListens: a 2026-07-28 server that announces
// list changes gets a subscriptions/listen stream from a pool that has
// someone to tell (the controller's), and none from one that has not (the
// catalog's), which would hold a socket and its buffers per server for
// nothing.
func TestOnlyAPoolThatHearsEventsListens(t *testing.T) {
	for _, tc := range []struct {
		name      string
		onEvent   func(string)
		listeners int64
	}{
		{"without OnEvent", nil, 0},
		{"with OnEvent", func(string) {}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP, ListChanged: true})
			srv.AddTools("echo")
			p := &Pool{OnEvent: tc.onEvent}
			t.Cleanup(p.CloseAll)
			s, closeAfter, err := p.Get(context.Background(), "ns/srv", Target{URL: srv.URL(), Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if closeAfter {
				t.Fatal("the pool did not hold the session")
			}
			if got := s.Info().ProtocolVersion; got != "2026-07-28" {
				t.Fatalf("negotiated %q, want 2026-07-28", got)
			}
			if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{}); err != nil {
				t.Fatal(err)
			}
			// Connect waits for a stream it opens to be answered, so the
			// count is settled once Get returned.
			if got := srv.Listeners(); got != tc.listeners {
				t.Errorf("the server holds %d listening streams, want %d", got, tc.listeners)
			}
			if got := s.Listening(); got != (tc.listeners == 1) {
				t.Errorf("Listening() = %v", got)
			}
		})
	}
}

// silentServer accepts connections, reads what comes and never answers
// until hangUp; accepted counts the connections it took.
type silentServer struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func startSilent(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); s.hangUp() })
	return s
}

func (s *silentServer) url() string { return "http://" + s.ln.Addr().String() + "/mcp" }

func (s *silentServer) hangUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// TestCallersShareOneConnectAttempt: callers that find a connect under way
// for their server wait for it, each no longer than its own deadline, and
// get its failure, instead of each connecting in turn after it (a server
// that never answers would cost the k-th caller k timeouts, holding the
// catalog's slots for that server all the while).
func TestCallersShareOneConnectAttempt(t *testing.T) {
	silent := startSilent(t)
	p := &Pool{}
	t.Cleanup(p.CloseAll)
	target := Target{URL: silent.url(), Timeout: time.Minute, Fingerprint: "v1"}
	errs := make(chan error, 3)
	get := func(ctx context.Context) {
		_, _, err := p.Get(ctx, "ns/srv", target)
		errs <- err
	}
	waiters := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		if a, ok := p.connecting["ns/srv"]; ok {
			return a.waiters
		}
		return -1
	}

	go get(context.Background())
	waitFor(t, "the first caller's connect to reach the server", func() bool { return silent.accepted.Load() == 1 })
	go get(context.Background())
	hurried, cancel := context.WithCancel(context.Background())
	go get(hurried)
	waitFor(t, "two callers to wait for the connect under way", func() bool { return waiters() == 2 })

	cancel()
	var hurriedErr error
	select {
	case hurriedErr = <-errs:
	case <-time.After(20 * time.Second):
		t.Fatal("a caller whose context ended still waits for another's connect")
	}
	if KindOf(hurriedErr) != ErrTimeout || !errors.Is(hurriedErr, context.Canceled) {
		t.Errorf("the caller that gave up got %v, want a Timeout carrying its own context's end", hurriedErr)
	}
	if silent.accepted.Load() != 1 {
		t.Fatal("the connect under way was not left alone")
	}

	silent.hangUp()
	first, second := <-errs, <-errs
	if first == nil || second == nil || first.Error() != second.Error() {
		t.Errorf("the server's failure was not shared: %v / %v", first, second)
	}
	if n := silent.accepted.Load(); n != 1 {
		t.Errorf("the server saw %d connects, want the one both callers shared", n)
	}
	if connecting := p.connectsUnderWay(); connecting != 0 {
		t.Errorf("%d connects left behind", connecting)
	}
}

// TestADropWhileConnectingIsNotUndone: a server deleted (Drop) while a
// caller connects to it must not have the new session held afterwards,
// where nothing would ever drop it again.
func TestADropWhileConnectingIsNotUndone(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
	srv.AddTools("echo")
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	url := front(t, srv.URL(), func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		once.Do(func() { close(arrived); <-release })
		pass.ServeHTTP(w, r)
	}, nil)

	p := &Pool{}
	t.Cleanup(p.CloseAll)
	type got struct {
		s          *Session
		closeAfter bool
		err        error
	}
	done := make(chan got, 1)
	go func() {
		s, closeAfter, err := p.Get(context.Background(), "ns/srv", Target{URL: url, Timeout: 20 * time.Second})
		done <- got{s, closeAfter, err}
	}()
	<-arrived
	p.Drop("ns/srv")
	close(release)
	g := <-done
	if g.err != nil {
		t.Fatal(g.err)
	}
	defer g.s.Close()
	if !g.closeAfter || p.Held("ns/srv") {
		t.Errorf("the session of a server dropped while connecting is held (closeAfter=%v, held=%v)", g.closeAfter, p.Held("ns/srv"))
	}
}

// TestA404To2026CallIsItsAnswer: 2026-07-28 has no session a server could
// forget, so a 404 to tools/call is that call's answer: it fails that call
// alone, once, and is never sent again as if undelivered (the tool may
// have run).
func TestA404To2026CallIsItsAnswer(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
	srv.AddTools("echo")
	var calls atomic.Int64
	url := front(t, srv.URL(), func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			calls.Add(1)
			http.Error(w, "no such tool here", http.StatusNotFound)
			return
		}
		pass.ServeHTTP(w, r)
	}, nil)

	p := &Pool{}
	t.Cleanup(p.CloseAll)
	target := Target{URL: url, Timeout: 20 * time.Second}
	var s *Session
	err := p.Do(context.Background(), "ns/srv", target, func(got *Session) error {
		s = got
		_, err := got.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{})
		return err
	})
	if s.Info().ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", s.Info().ProtocolVersion)
	}
	if KindOf(err) != ErrHTTPStatus || !strings.Contains(err.Error(), "404") {
		t.Errorf("got %v, want the server's HTTP 404", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the call was sent %d times, want once", n)
	}
	select {
	case <-s.Done():
		t.Error("one call's 404 ended the session every other caller shares")
	default:
	}
}

// TestDropPrefixDropsEveryCallersSession: a deleted server's sessions,
// one per caller, all go; another server's stay.
func TestDropPrefixDropsEveryCallersSession(t *testing.T) {
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
	srv.AddTools("echo")
	p := &Pool{}
	t.Cleanup(p.CloseAll)
	target := Target{URL: srv.URL(), Timeout: 20 * time.Second}
	keys := []string{"ns/srv\x00alice", "ns/srv\x00bob", "ns/srv-2\x00alice", "ns/srv"}
	for _, key := range keys {
		if _, closeAfter, err := p.Get(context.Background(), key, target); err != nil || closeAfter {
			t.Fatalf("%q: closeAfter=%v, %v", key, closeAfter, err)
		}
	}
	p.DropPrefix("ns/srv\x00")
	for key, held := range map[string]bool{keys[0]: false, keys[1]: false, keys[2]: true, keys[3]: true} {
		if p.Held(key) != held {
			t.Errorf("%q held = %v, want %v", key, p.Held(key), held)
		}
	}
}
