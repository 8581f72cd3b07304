package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources the watch tests' servers offer; secretURI's query stands
// for a secret no error may show.
const (
	watchedURI = "file:///watched.txt"
	otherURI   = "file:///other.txt"
	secretURI  = "file:///missing.txt?token=s3cr3t-t0ken"
)

// watchTimeout bounds every wait of the watch tests: an upper bound, never
// a pause.
const watchTimeout = 20 * time.Second

// watching is one WatchResource running on a goroutine of its own, with
// what it called.
type watching struct {
	subscribed chan struct{}
	updated    chan struct{}
	cancel     context.CancelFunc
	ended      chan struct{}
	err        error
}

// startWatch watches uri on target until the test ends.
func startWatch(t *testing.T, target Target, uri string) *watching {
	t.Helper()
	if target.Timeout == 0 {
		target.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{subscribed: make(chan struct{}, 4), updated: make(chan struct{}, 64), cancel: cancel, ended: make(chan struct{})}
	go func() {
		defer close(w.ended)
		w.err = WatchResource(ctx, target, uri, func() { w.subscribed <- struct{}{} }, func() { w.updated <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.ended:
		case <-time.After(watchTimeout):
			t.Error("WatchResource went on after its context ended")
		}
	})
	return w
}

// awaitSubscribed waits for subscribed, failing when the watch ends first.
func (w *watching) awaitSubscribed(t *testing.T) {
	t.Helper()
	select {
	case <-w.subscribed:
	case <-w.ended:
		t.Fatalf("the watch ended before it was subscribed: %v", w.err)
	case <-time.After(watchTimeout):
		t.Fatal("the subscription was never acknowledged")
	}
}

// awaitUpdated waits for one call of updated.
func (w *watching) awaitUpdated(t *testing.T) {
	t.Helper()
	select {
	case <-w.updated:
	case <-w.ended:
		t.Fatalf("the watch ended before an update: %v", w.err)
	case <-time.After(watchTimeout):
		t.Fatal("no update was heard")
	}
}

// awaitEnd waits for WatchResource to return, and returns what it did.
func (w *watching) awaitEnd(t *testing.T) error {
	t.Helper()
	select {
	case <-w.ended:
		return w.err
	case <-time.After(watchTimeout):
		t.Fatal("WatchResource did not return")
		return nil
	}
}

// heardOnce checks that, after the updates awaited, nothing more was
// called: updated by an update of another resource, subscribed twice.
func (w *watching) heardOnce(t *testing.T) {
	t.Helper()
	if n := len(w.updated); n != 0 {
		t.Errorf("updated was called %d more times than the watched resource changed", n)
	}
	if n := len(w.subscribed); n != 0 {
		t.Errorf("subscribed was called %d more times", n+1)
	}
}

// subscriptionLog counts the subscriptions a server took and ended, by URI.
type subscriptionLog struct {
	mu                       sync.Mutex
	subscribes, unsubscribes map[string]int
}

func newSubscriptionLog() *subscriptionLog {
	return &subscriptionLog{subscribes: map[string]int{}, unsubscribes: map[string]int{}}
}

func (l *subscriptionLog) subscribed(uri string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subscribes[uri]++
}

func (l *subscriptionLog) unsubscribed(uri string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unsubscribes[uri]++
}

func (l *subscriptionLog) count(m map[string]int, uri string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return m[uri]
}

// goSDKWatched is a go-sdk server with two resources, on 127.0.0.1.
type goSDKWatched struct {
	server *sdk.Server
	http   *httptest.Server
	target Target
	subs   *subscriptionLog
	log    *wireLog
}

// goSDKWatchMode is how a go-sdk server is served to a watch.
type goSDKWatchMode string

const (
	// goSDKWatch2025: Streamable HTTP with sessions, 2025-11-25.
	goSDKWatch2025 goSDKWatchMode = "2025-11-25"
	// goSDKWatch2026: stateless, 2026-07-28 only.
	goSDKWatch2026 goSDKWatchMode = "2026-07-28"
	// goSDKWatchSSE: the 2024-11-05 HTTP+SSE transport.
	goSDKWatchSSE goSDKWatchMode = "HTTP+SSE"
	// goSDKWatchStateless2025: stateless Streamable HTTP asked for
	// 2025-11-25, which refuses the listening GET.
	goSDKWatchStateless2025 goSDKWatchMode = "stateless 2025-11-25"
)

// startGoSDKWatched starts a go-sdk server; with subscribe it takes
// subscriptions (SubscribeHandler), refusing any to a resource it does
// not have, else it does not announce resources.subscribe.
func startGoSDKWatched(t *testing.T, mode goSDKWatchMode, subscribe bool) *goSDKWatched {
	t.Helper()
	g := &goSDKWatched{subs: newSubscriptionLog(), log: &wireLog{}}
	opts := &sdk.ServerOptions{}
	if subscribe {
		opts.SubscribeHandler = func(_ context.Context, req *sdk.SubscribeRequest) error {
			if req.Params.URI != watchedURI && req.Params.URI != otherURI && !strings.HasPrefix(req.Params.URI, "file:///r") {
				return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such resource " + req.Params.URI}
			}
			g.subs.subscribed(req.Params.URI)
			return nil
		}
		opts.UnsubscribeHandler = func(_ context.Context, req *sdk.UnsubscribeRequest) error {
			g.subs.unsubscribed(req.Params.URI)
			return nil
		}
	}
	if mode == goSDKWatch2026 {
		opts.SupportedProtocolVersions = []string{"2026-07-28"}
	}
	g.server = sdk.NewServer(&sdk.Implementation{Name: "gosdk-watched", Version: "1.0.0"}, opts)
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "text"}}}, nil
	}
	g.server.AddResource(&sdk.Resource{URI: watchedURI, Name: "watched"}, read)
	g.server.AddResource(&sdk.Resource{URI: otherURI, Name: "other"}, read)
	serve := func(*http.Request) *sdk.Server { return g.server }
	mux, path := http.NewServeMux(), "/mcp"
	switch mode {
	case goSDKWatchSSE:
		path = "/sse"
		handler := sdk.NewSSEHandler(serve, nil)
		mux.Handle("/sse", g.log.record(handler))
		g.target.Transport = TransportSSE
	case goSDKWatch2026, goSDKWatchStateless2025:
		mux.Handle(path, g.log.record(sdk.NewStreamableHTTPHandler(serve, &sdk.StreamableHTTPOptions{Stateless: true})))
	default:
		mux.Handle(path, g.log.record(sdk.NewStreamableHTTPHandler(serve, nil)))
	}
	if mode == goSDKWatchStateless2025 {
		g.target.Revision = "2025-11-25"
	}
	g.http = serveHTTP(t, mux)
	g.target.URL = g.http.URL + path
	return g
}

// updated says the resource at uri changed, as a server author does.
func (g *goSDKWatched) updated(t *testing.T, uri string) {
	t.Helper()
	if err := g.server.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
}

// breakOff stops the server at once: no new connection is taken, and
// those open (the streams) are closed.
func breakOff(srv *httptest.Server) {
	_ = srv.Listener.Close()
	srv.CloseClientConnections()
}

// TestWatchResourceHearsTheWatchedResource: against go-sdk servers of
// every revision (an implementation nobody here wrote), a watch is
// subscribed, hears each update of its resource, and on its context's end
// returns nil and the server ends the subscription.
func TestWatchResourceHearsTheWatchedResource(t *testing.T) {
	for _, mode := range []goSDKWatchMode{goSDKWatch2025, goSDKWatch2026, goSDKWatchSSE} {
		t.Run(string(mode), func(t *testing.T) {
			g := startGoSDKWatched(t, mode, true)
			w := startWatch(t, g.target, watchedURI)
			w.awaitSubscribed(t)
			if n := g.subs.count(g.subs.subscribes, watchedURI); n != 1 {
				t.Fatalf("the server took %d subscriptions, want 1", n)
			}
			// go-sdk tells only the subscribers of a resource (an update of
			// another that reaches the watch is TestWatchResourceAgainstMCPGo's).
			g.updated(t, otherURI)
			g.updated(t, watchedURI)
			w.awaitUpdated(t)
			g.updated(t, watchedURI)
			w.awaitUpdated(t)
			w.heardOnce(t)

			switch mode {
			case goSDKWatch2026:
				params, header := g.log.last(t, "subscriptions/listen")
				var got struct {
					Meta          map[string]json.RawMessage `json:"_meta"`
					Notifications map[string]json.RawMessage `json:"notifications"`
				}
				if err := json.Unmarshal(params, &got); err != nil {
					t.Fatal(err)
				}
				if string(got.Notifications["resourceSubscriptions"]) != `["`+watchedURI+`"]` || len(got.Notifications) != 1 ||
					string(got.Meta[mcp.MetaKeyProtocolVersion]) != `"2026-07-28"` {
					t.Errorf("subscriptions/listen asked %s", params)
				}
				if header.Get("Mcp-Method") != "subscriptions/listen" || header.Get("MCP-Protocol-Version") != "2026-07-28" {
					t.Errorf("subscriptions/listen carried Mcp-Method %q, version %q", header.Get("Mcp-Method"), header.Get("MCP-Protocol-Version"))
				}
				if g.log.asked("resources/subscribe") != 0 {
					t.Error("a 2026-07-28 server was sent resources/subscribe")
				}
			default:
				if params, _ := g.log.last(t, "resources/subscribe"); !strings.Contains(string(params), `"uri":"`+watchedURI+`"`) {
					t.Errorf("resources/subscribe asked %s", params)
				}
			}

			w.cancel()
			if err := w.awaitEnd(t); err != nil {
				t.Fatalf("a watch whose context ended returned %v", err)
			}
			// In 2026-07-28 the end of the stream is the unsubscribe, which
			// the server hears when it notices.
			waitFor(t, "the server to end the subscription", func() bool { return g.subs.count(g.subs.unsubscribes, watchedURI) == 1 })
			if mode != goSDKWatch2026 && g.log.asked("resources/unsubscribe") != 1 {
				t.Errorf("resources/unsubscribe sent %d times", g.log.asked("resources/unsubscribe"))
			}
			w.heardOnce(t)
		})
	}
}

// TestWatchResourceNeedsSubscriptions: a server that does not announce
// resources.subscribe, or keeps no stream for what it would say, fails
// the watch at once, saying so, recognisably; subscribed is not called.
func TestWatchResourceNeedsSubscriptions(t *testing.T) {
	for _, tt := range []struct {
		mode      goSDKWatchMode
		subscribe bool
		says      string
	}{
		{goSDKWatch2025, false, "it did not announce resources.subscribe"},
		{goSDKWatch2026, false, "it did not announce resources.subscribe"},
		{goSDKWatchSSE, false, "it did not announce resources.subscribe"},
		{goSDKWatchStateless2025, true, "it keeps no stream open for its notifications"},
	} {
		t.Run(fmt.Sprintf("%s, subscribe %v", tt.mode, tt.subscribe), func(t *testing.T) {
			g := startGoSDKWatched(t, tt.mode, tt.subscribe)
			w := startWatch(t, g.target, watchedURI)
			err := w.awaitEnd(t)
			if !errors.Is(err, ErrNotSubscribable) || KindOf(err) != ErrProtocol ||
				!strings.Contains(err.Error(), "does not offer resource subscriptions: "+tt.says) {
				t.Fatalf("got %v (%s), want ErrNotSubscribable saying %q", err, KindOf(err), tt.says)
			}
			if len(w.subscribed) != 0 {
				t.Error("subscribed was called")
			}
			if g.log.asked("resources/subscribe")+g.log.asked("subscriptions/listen") != 0 {
				t.Error("a subscription was asked for all the same")
			}
		})
	}
}

// TestWatchResourceSaysWhyTheServerRefused: a subscription the server
// refuses ends the watch with the server's JSON-RPC error, as RPCErrorOf
// reads it, without the resource's URI (its query may be a secret).
func TestWatchResourceSaysWhyTheServerRefused(t *testing.T) {
	for _, mode := range []goSDKWatchMode{goSDKWatch2025, goSDKWatch2026, goSDKWatchSSE} {
		t.Run(string(mode), func(t *testing.T) {
			g := startGoSDKWatched(t, mode, true)
			w := startWatch(t, g.target, secretURI)
			err := w.awaitEnd(t)
			code, message, ok := RPCErrorOf(err)
			if !ok || code != jsonrpc.CodeInvalidParams || !strings.Contains(message, "no such resource") {
				t.Fatalf("got %v: want the server's JSON-RPC error", err)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(message, "s3cr3t") {
				t.Errorf("the error names the resource's URI: %v", err)
			}
			if len(w.subscribed) != 0 {
				t.Error("subscribed was called")
			}
		})
	}
}

// TestWatchResourceEndsWithItsStream: a server that goes away mid-watch
// ends it with an error that says the subscription ended, not a hang.
func TestWatchResourceEndsWithItsStream(t *testing.T) {
	for _, mode := range []goSDKWatchMode{goSDKWatch2025, goSDKWatch2026, goSDKWatchSSE} {
		t.Run(string(mode), func(t *testing.T) {
			g := startGoSDKWatched(t, mode, true)
			w := startWatch(t, g.target, watchedURI)
			w.awaitSubscribed(t)
			breakOff(g.http)
			err := w.awaitEnd(t)
			if KindOf(err) != ErrUnreachable || !strings.Contains(err.Error(), "the subscription ended") {
				t.Fatalf("got %v (%s), want the subscription ended", err, KindOf(err))
			}
		})
	}
}

// TestWatchesRunSideBySide: many watches at once, of several resources on
// two servers, each hear their own resource's updates and nothing else.
func TestWatchesRunSideBySide(t *testing.T) {
	servers := []*goSDKWatched{startGoSDKWatched(t, goSDKWatch2025, true), startGoSDKWatched(t, goSDKWatch2026, true)}
	const resources, perResource = 3, 2
	watches := map[*goSDKWatched][][]*watching{}
	for _, g := range servers {
		for r := range resources {
			uri := fmt.Sprintf("file:///r%d", r)
			var ws []*watching
			for range perResource {
				ws = append(ws, startWatch(t, g.target, uri))
			}
			watches[g] = append(watches[g], ws)
		}
	}
	for _, byResource := range watches {
		for _, ws := range byResource {
			for _, w := range ws {
				w.awaitSubscribed(t)
			}
		}
	}
	for _, g := range servers {
		for r := range resources {
			// Resource r changes r+1 times.
			for range r + 1 {
				g.updated(t, fmt.Sprintf("file:///r%d", r))
			}
		}
	}
	for _, byResource := range watches {
		for r, ws := range byResource {
			for _, w := range ws {
				for range r + 1 {
					w.awaitUpdated(t)
				}
			}
		}
	}
	// One more update each: every watch hears exactly one more.
	for _, g := range servers {
		for r := range resources {
			g.updated(t, fmt.Sprintf("file:///r%d", r))
		}
	}
	for _, byResource := range watches {
		for _, ws := range byResource {
			for _, w := range ws {
				w.awaitUpdated(t)
				w.heardOnce(t)
				w.cancel()
				if err := w.awaitEnd(t); err != nil {
					t.Errorf("a watch ended with %v", err)
				}
			}
		}
	}
}

// mcpGoWatched is an mcp-go server that takes resource subscriptions. mcp-go
// keeps no record of who subscribed to what (a ClientSession of one's own
// may), so its hooks keep it here, and updated tells each subscriber as a
// server author would: to the session that subscribed (2025-11-25), on the
// subscriptions/listen stream that named the resource (2026-07-28).
type mcpGoWatched struct {
	srv    *server.MCPServer
	target Target
	subs   *subscriptionLog
	log    *wireLog
	fence  *streamFence

	mu sync.Mutex
	// sessions are the ids of the sessions subscribed to each URI; listens
	// the contexts of the subscriptions/listen requests that named it.
	sessions map[string][]string
	listens  map[string][]context.Context
}

func startMCPGoWatched(t *testing.T, revision string) *mcpGoWatched {
	t.Helper()
	m := &mcpGoWatched{subs: newSubscriptionLog(), log: &wireLog{}, fence: &streamFence{},
		sessions: map[string][]string{}, listens: map[string][]context.Context{}}
	hooks := &server.Hooks{}
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		m.mu.Lock()
		m.sessions[req.Params.URI] = append(m.sessions[req.Params.URI], server.ClientSessionFromContext(ctx).SessionID())
		m.mu.Unlock()
		m.subs.subscribed(req.Params.URI)
	})
	hooks.AddAfterUnsubscribe(func(_ context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		m.subs.unsubscribed(req.Params.URI)
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, uri := range req.Params.Notifications.ResourceSubscriptions {
			m.listens[uri] = append(m.listens[uri], ctx)
			m.subs.subscribed(uri)
		}
	})
	hooks.AddAfterSubscriptionsListen(func(_ context.Context, _ any, req *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		for _, uri := range req.Params.Notifications.ResourceSubscriptions {
			m.subs.unsubscribed(uri)
		}
	})
	m.srv = server.NewMCPServer("mcpgo-watched", "1.0.0", server.WithResourceCapabilities(true, false), server.WithHooks(hooks))
	read := func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "text"}}, nil
	}
	m.srv.AddResource(mcp.NewResource(watchedURI, "watched"), read)
	m.srv.AddResource(mcp.NewResource(otherURI, "other"), read)
	mux := http.NewServeMux()
	mux.Handle("/mcp", m.fence.wrap(m.log.record(server.NewStreamableHTTPServer(m.srv, server.WithEndpointPath("/mcp")))))
	m.target = Target{URL: serveHTTP(t, mux).URL + "/mcp", Revision: revision}
	return m
}

// updated tells the subscribers of subscribedTo that uri changed: uri
// differs for an update a server sends its subscriber about something
// else.
func (m *mcpGoWatched) updated(t *testing.T, subscribedTo, uri string) {
	t.Helper()
	m.mu.Lock()
	sessions, listens := slices.Clone(m.sessions[subscribedTo]), slices.Clone(m.listens[subscribedTo])
	m.mu.Unlock()
	params := map[string]any{"uri": uri}
	for _, id := range sessions {
		if err := m.srv.SendNotificationToSpecificClient(id, mcp.MethodNotificationResourceUpdated, params); err != nil {
			t.Fatal(err)
		}
	}
	for _, ctx := range listens {
		if err := m.srv.SendNotificationToClient(ctx, mcp.MethodNotificationResourceUpdated, params); err != nil {
			t.Fatal(err)
		}
	}
	if len(sessions)+len(listens) == 0 {
		t.Fatalf("nobody subscribed to %s", subscribedTo)
	}
}

// streamFence watches a server's streams for notifications (the listening
// GET, subscriptions/listen): it counts those opened and the resource
// updates written on them, and ends them on demand, after what was written.
// A client reads a stream to its end before it notices the end: once the
// end is noticed, every update written was heard, or left unheard.
type streamFence struct {
	opened, written atomic.Int64
	mu              sync.Mutex
	ends            []context.CancelFunc
}

func (f *streamFence) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Header.Get("Mcp-Method") != "subscriptions/listen" {
			next.ServeHTTP(w, r)
			return
		}
		ctx, end := context.WithCancel(r.Context())
		defer end()
		f.mu.Lock()
		f.ends = append(f.ends, end)
		f.mu.Unlock()
		f.opened.Add(1)
		next.ServeHTTP(countingWriter{ResponseWriter: w, written: &f.written}, r.WithContext(ctx))
	})
}

// end ends the streams open, as their server may.
func (f *streamFence) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, end := range f.ends {
		end()
	}
	f.ends = nil
}

// countingWriter counts the resource updates written through it.
type countingWriter struct {
	http.ResponseWriter
	written *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.written.Add(int64(bytes.Count(p[:n], []byte(mcp.MethodNotificationResourceUpdated))))
	return n, err
}

func (c countingWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

func (c countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestWatchResourceAgainstMCPGo: against mcp-go servers of both kinds of
// revision, a watch hears the updates of its resource and nothing of
// another the server tells it about, on the same stream; a listening GET
// the server ends is opened again and the watch goes on (2025-11-25), a
// subscriptions/listen stream the server ends ends the watch (2026-07-28);
// the watch ends the subscription with its context.
func TestWatchResourceAgainstMCPGo(t *testing.T) {
	for _, revision := range []string{"2025-11-25", RevisionStateless} {
		t.Run(revision, func(t *testing.T) {
			m := startMCPGoWatched(t, revision)
			w := startWatch(t, m.target, watchedURI)
			w.awaitSubscribed(t)
			if revision == RevisionStateless && m.log.asked("resources/subscribe") != 0 {
				t.Error("a 2026-07-28 server was sent resources/subscribe")
			}
			for range 2 {
				m.updated(t, watchedURI, otherURI)
				m.updated(t, watchedURI, watchedURI)
			}
			// Every update written, the stream ends: once the client
			// noticed, it has heard all it will of them.
			waitFor(t, "the server to write the updates", func() bool { return m.fence.written.Load() == 4 })
			m.fence.end()
			if revision == RevisionStateless {
				err := w.awaitEnd(t)
				if KindOf(err) != ErrUnreachable || !strings.Contains(err.Error(), "the subscription ended") {
					t.Errorf("got %v (%s), want the subscription ended", err, KindOf(err))
				}
			} else {
				waitFor(t, "the listening GET to open again", func() bool { return m.fence.opened.Load() == 2 })
			}
			if n := len(w.updated); n != 2 {
				t.Fatalf("updated was called %d times, want 2: once each the watched resource changed", n)
			}
			<-w.updated
			<-w.updated
			if revision != RevisionStateless {
				m.updated(t, watchedURI, watchedURI)
				w.awaitUpdated(t)
				w.cancel()
				if err := w.awaitEnd(t); err != nil {
					t.Fatalf("a watch whose context ended returned %v", err)
				}
			}
			waitFor(t, "the server to end the subscription", func() bool { return m.subs.count(m.subs.unsubscribes, watchedURI) == 1 })
			w.heardOnce(t)
		})
	}
}

// TestWatchResourceNeedsTheResourceAcknowledged: a 2026-07-28 server's
// subscriptions/listen stream that does not name the resource in its
// acknowledgement, or acknowledges nothing in time, ends the watch saying
// so. A front answers the stream; the rest is a real go-sdk server's.
func TestWatchResourceNeedsTheResourceAcknowledged(t *testing.T) {
	for _, tt := range []struct {
		name string
		ack  string
		kind ErrorKind
		says string
	}{
		{"the resource left out", `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["` + otherURI + `"]}}}`,
			ErrProtocol, "did not accept the subscription to the resource"},
		{"no acknowledgement", "", ErrTimeout, "did not acknowledge the subscription within 3s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGoSDKWatched(t, goSDKWatch2026, true)
			release := make(chan struct{})
			url := front(t, g.target.URL, func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
				if r.Header.Get("Mcp-Method") != "subscriptions/listen" {
					pass.ServeHTTP(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				if tt.ack != "" {
					_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", tt.ack)
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}, nil)
			t.Cleanup(func() { close(release) }) // before the front closes
			w := startWatch(t, Target{URL: url, Timeout: 3 * time.Second}, watchedURI)
			err := w.awaitEnd(t)
			if KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("got %v (%s), want %s saying %q", err, KindOf(err), tt.kind, tt.says)
			}
			if len(w.subscribed) != 0 {
				t.Error("subscribed was called")
			}
		})
	}
}
