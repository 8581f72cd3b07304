//go:build unix

package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// recordingServer answers every request on 127.0.0.1 with answer (or,
// when it is empty, closes the connection unanswered) and keeps the bytes
// of each request as they arrived.
type recordingServer struct {
	ln     net.Listener
	answer string
	mu     sync.Mutex
	seen   [][]byte
}

func startRecordingServer(t testing.TB, answer string) *recordingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &recordingServer{ln: ln, answer: answer}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				srv.serve(conn)
			}()
		}
	}()
	return srv
}

// serve reads requests off conn until it closes: the client sends one and
// waits for its answer, so what the reader took is that request alone.
func (s *recordingServer) serve(conn net.Conn) {
	defer conn.Close()
	var raw bytes.Buffer
	br := bufio.NewReader(io.TeeReader(conn, &raw))
	for {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		s.mu.Lock()
		s.seen = append(s.seen, bytes.Clone(raw.Bytes()))
		s.mu.Unlock()
		raw.Reset()
		if s.answer == "" {
			return
		}
		if _, err := io.WriteString(conn, s.answer); err != nil {
			return
		}
	}
}

func (s *recordingServer) url(path string) string { return "http://" + s.ln.Addr().String() + path }

// last is the last request the server read.
func (s *recordingServer) last(t *testing.T) []byte {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		t.Fatal("the server read no request")
	}
	return s.seen[len(s.seen)-1]
}

// directTo is the direct path of client's POSTs to target, which the
// test needs to have one.
func directTo(t *testing.T, client *http.Client, target string) *directPost {
	t.Helper()
	d := newDirectPost(client, target)
	if d == nil {
		t.Fatalf("no direct path for %s", target)
	}
	return d
}

// jsonAnswer is a JSON answer to op-1.
var jsonAnswer = func() string {
	const answer = `{"jsonrpc":"2.0","id":"op-1","result":{}}`
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
}()

// TestDirectPostWritesWhatClientDoWould: a session's request made by
// directPost reaches the server as the same bytes http.Client.Do sends
// for it, for the URLs and headers sessions have, and its answer comes
// back the same way, capped.
func TestDirectPostWritesWhatClientDoWould(t *testing.T) {
	previous := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(previous) })
	traceID, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	spanID, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	tracedCtx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))

	const call = `{"jsonrpc":"2.0","id":"op-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	header := func() http.Header {
		return http.Header{"Content-Type": jsonMediaType, "Accept": acceptAnswers, "Mcp-Protocol-Version": modernVersion,
			"Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}, "Authorization": {"Bearer t0ken"}}
	}
	srv := startRecordingServer(t, jsonAnswer)
	for _, tt := range []struct {
		name string
		path string
		body string
		ctx  context.Context
	}{
		{"a session's call", "/mcp", call, context.Background()},
		{"a path to escape, a query and a fragment", "/a%20b/mcp?x=1&y=two#part", call, context.Background()},
		{"an empty path", "", call, context.Background()},
		{"a trace to pass on", "/mcp", call, tracedCtx},
		{"an empty body", "/mcp", "", context.Background()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			target := srv.url(tt.path)
			client := Target{URL: target}.httpClient(newStreamWatch(), false)
			defer client.CloseIdleConnections()
			d := directTo(t, client, target)
			resp, err := d.post(tt.ctx, []byte(tt.body), header())
			if err != nil {
				t.Fatal(err)
			}
			directBody, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if _, capped := resp.Body.(*cappedBody); !capped {
				t.Errorf("the answer's body is a %T, not capped", resp.Body)
			}
			direct := srv.last(t)

			req, err := newPost(tt.ctx, target, []byte(tt.body), header())
			if err != nil {
				t.Fatal(err)
			}
			resp, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			viaClient, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if sent := srv.last(t); !bytes.Equal(direct, sent) {
				t.Errorf("directPost sent\n%q\nhttp.Client sent\n%q", direct, sent)
			}
			if !bytes.Equal(directBody, viaClient) {
				t.Errorf("directPost read %q, http.Client %q", directBody, viaClient)
			}
			if tt.ctx == tracedCtx && !bytes.Contains(direct, []byte("Traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n")) {
				t.Errorf("no traceparent header in\n%q", direct)
			}
		})
	}
}

// TestDirectPostFailsAsClientDoWould: a request that fails on the way
// fails with http.Client's *url.Error, word for word, so that classify
// reads it the same.
func TestDirectPostFailsAsClientDoWould(t *testing.T) {
	refused := func(t *testing.T) Target {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		return Target{URL: "http://" + ln.Addr().String() + "/mcp"}
	}
	hangsUp := func(t *testing.T) Target {
		// Reads the request, then closes the connection unanswered.
		srv := startRecordingServer(t, "")
		return Target{URL: srv.url("/mcp")}
	}
	emptyPortDenied := func(*testing.T) Target {
		// The URL an error names drops the empty port, as NewRequest's
		// does; the egress policy fails the dial before it leaves.
		return Target{URL: "http://127.0.0.1:/mcp", Egress: &EgressPolicy{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
	}
	for _, tt := range []struct {
		name   string
		target func(*testing.T) Target
		kind   ErrorKind
		says   string
	}{
		{"a refused connection", refused, ErrUnreachable, "refused the connection"},
		{"a connection closed without an answer", hangsUp, ErrUnreachable, "closed the connection before answering"},
		{"a denied dial to a URL with an empty port", emptyPortDenied, ErrEgressDenied, "egress policy denies"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target(t)
			client := target.httpClient(newStreamWatch(), false)
			defer client.CloseIdleConnections()
			d := directTo(t, client, target.URL)
			body := []byte(`{"jsonrpc":"2.0","id":"op-1","method":"ping"}`)
			_, directErr := d.post(context.Background(), body, http.Header{"Content-Type": jsonMediaType})
			req, err := newPost(context.Background(), target.URL, body, http.Header{"Content-Type": jsonMediaType})
			if err != nil {
				t.Fatal(err)
			}
			_, clientErr := client.Do(req)
			if directErr == nil || clientErr == nil {
				t.Fatalf("directPost: %v, http.Client: %v; want both to fail", directErr, clientErr)
			}
			var urlErr, clientURLErr *url.Error
			if !errors.As(directErr, &urlErr) || !errors.As(clientErr, &clientURLErr) || urlErr.Op != "Post" || urlErr.URL != clientURLErr.URL {
				t.Errorf("directPost's error %#v is not http.Client's *url.Error %#v", directErr, clientErr)
			}
			if directErr.Error() != clientErr.Error() {
				t.Errorf("directPost failed with %q, http.Client with %q", directErr, clientErr)
			}
			got := classify(directErr, target, "calling", nil)
			if got.Kind != tt.kind || !strings.Contains(got.Message, tt.says) {
				t.Errorf("classified as %s %q, want %s saying %q", got.Kind, got.Message, tt.kind, tt.says)
			}
		})
	}
}

// TestDirectPostRetriesARequestThatNeverLeft: a kept connection whose
// write fails before a byte of the next request went out (a server's
// close that alive could not see) costs that request nothing: it goes
// once more on a new connection, on both of a session's paths.
func TestDirectPostRetriesARequestThatNeverLeft(t *testing.T) {
	for _, path := range []string{"directPost", "http.Client"} {
		t.Run(path, func(t *testing.T) {
			srv := startRecordingServer(t, jsonAnswer)
			target := srv.url("/mcp")
			client := Target{URL: target}.httpClient(newStreamWatch(), false)
			defer client.CloseIdleConnections()
			d := directTo(t, client, target)
			var dials []*failingConn
			dial := d.inline.dial
			d.inline.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				fc := &failingConn{Conn: conn}
				dials = append(dials, fc)
				return fc, nil
			}
			post := func(body string) error {
				var resp *http.Response
				var err error
				if path == "directPost" {
					resp, err = d.post(context.Background(), []byte(body), http.Header{"Content-Type": jsonMediaType})
				} else {
					resp, err = client.Do(postRequest(t, target, body, http.Header{"Content-Type": jsonMediaType}))
				}
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if _, err := io.ReadAll(resp.Body); err != nil {
					return err
				}
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			}
			if err := post(`{"jsonrpc":"2.0","id":"op-1","method":"ping"}`); err != nil {
				t.Fatal(err)
			}
			if len(dials) != 1 {
				t.Fatalf("%d connections for one request", len(dials))
			}
			dials[0].broken.Store(true)
			second := `{"jsonrpc":"2.0","id":"op-2","method":"ping"}`
			if err := post(second); err != nil {
				t.Fatalf("the request the kept connection could not write failed: %v", err)
			}
			if len(dials) != 2 {
				t.Errorf("%d connections, want the kept one and one new", len(dials))
			}
			if !bytes.HasSuffix(srv.last(t), []byte(second)) {
				t.Errorf("the server's last request is\n%s\nwant the second one, whole", srv.last(t))
			}
		})
	}
}

// TestACancelledRequestIsNeverSent: a request whose caller has already
// gone does not reach the server, on either of a session's paths, over a
// kept connection (where the write would race the abort), and fails as
// http.Client fails it.
func TestACancelledRequestIsNeverSent(t *testing.T) {
	srv := startRecordingServer(t, jsonAnswer)
	target := srv.url("/mcp")
	client := Target{URL: target}.httpClient(newStreamWatch(), false)
	defer client.CloseIdleConnections()
	d := directTo(t, client, target)
	body := []byte(`{"jsonrpc":"2.0","id":"op-1","method":"ping"}`)
	// answered makes a request that is answered, and keeps its
	// connection: the server has recorded every request written before
	// it on that connection by the time its answer is read.
	answered := func() {
		t.Helper()
		resp, err := d.post(context.Background(), body, http.Header{"Content-Type": jsonMediaType})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	const rounds = 20
	for range rounds {
		answered()
		_, directErr := d.post(cancelled, body, http.Header{"Content-Type": jsonMediaType})
		answered()
		_, clientErr := client.Do(postRequest(t, target, string(body), http.Header{"Content-Type": jsonMediaType}).WithContext(cancelled))
		if !errors.Is(directErr, context.Canceled) || !errors.Is(clientErr, context.Canceled) || directErr.Error() != clientErr.Error() {
			t.Fatalf("directPost failed with %v, http.Client with %v; want both context.Canceled, worded alike", directErr, clientErr)
		}
	}
	answered()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if want := 2*rounds + 1; len(srv.seen) != want {
		t.Errorf("the server read %d requests, want the %d answered ones alone", len(srv.seen), want)
	}
}

// failingConn fails every write, having written nothing, once broken.
type failingConn struct {
	net.Conn
	broken atomic.Bool
}

func (c *failingConn) Write(p []byte) (int, error) {
	if c.broken.Load() {
		return 0, errors.New("write: broken pipe")
	}
	return c.Conn.Write(p)
}

// TestDirectPostOnlyWhereItKeepsEverything: on systems with the inline
// transport, a 2026-07-28 session to a
// plain-HTTP server takes the direct path; https, a URL with user info
// (which http.Client sends as Basic credentials) and a listening
// session's shared pool keep http.Client.
func TestDirectPostOnlyWhereItKeepsEverything(t *testing.T) {
	for _, tt := range []struct {
		name      string
		url       string
		listening bool
		direct    bool
	}{
		{"plain HTTP", "http://127.0.0.1:8080/mcp", false, true},
		{"plain HTTP, port-less", "http://mcp.example/mcp", false, true},
		{"https", "https://127.0.0.1:8443/mcp", false, false},
		{"user info", "http://user:secret@127.0.0.1:8080/mcp", false, false},
		{"a listening session's shared pool", "http://127.0.0.1:8080/mcp", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := Target{URL: tt.url}.httpClient(newStreamWatch(), tt.listening)
			defer client.CloseIdleConnections()
			if got := newDirectPost(client, tt.url) != nil; got != tt.direct {
				t.Errorf("direct path: %v, want %v", got, tt.direct)
			}
		})
	}
	// What is sent and the address dialed are http.NewRequest's and
	// inlineTransport's, for URLs no test server can have.
	for _, target := range []string{"http://mcp.example/mcp", "http://mcp.example:/mcp", "http://mcp.example:9000/mcp",
		"http://[::1]:8080/mcp", "http://[::1]:/mcp", "http://[::1]/mcp"} {
		d := newDirectPost(Target{URL: target}.httpClient(newStreamWatch(), false), target)
		if d == nil {
			t.Errorf("no direct path for %s", target)
			continue
		}
		req := postRequest(t, target, "{}", http.Header{"Content-Type": jsonMediaType})
		var want, got bytes.Buffer
		if err := req.Write(&want); err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriter(&got)
		if err := writeRequest(bw, d.request([]byte("{}"), http.Header{"Content-Type": jsonMediaType})); err != nil || bw.Flush() != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || d.addr != canonicalAddr(req.URL) {
			t.Errorf("%s: sends\n%q\ndialing %q, want\n%q\ndialing %q", target, got.String(), d.addr, want.String(), canonicalAddr(req.URL))
		}
	}

}

// TestASessionPostsDirectlyButForTheListenStream: a 2026-07-28 session's
// requests leave by directPost, never through its http.Client, except a
// subscriptions/listen stream, which inlineTransport leaves to net/http.
func TestASessionPostsDirectlyButForTheListenStream(t *testing.T) {
	g := startGoSDK(t, testmcp.GoSDKOnly2026)
	s := connectT(t, Target{URL: g.URL()}, nil)
	if s.direct == nil {
		t.Fatalf("a 2026-07-28 session to %s does not post directly", g.URL())
	}
	viaClient := &refusingTransport{}
	s.http.Transport = viaClient
	if _, err := s.CallTool(context.Background(), "echo", []byte(`{"m":"hi"}`), CallOptions{}); err != nil {
		t.Fatalf("a call failed: %v", err)
	}
	if n := viaClient.requests.Load(); n != 0 {
		t.Fatalf("%d requests of a call went through http.Client", n)
	}
	header := http.Header{"Content-Type": jsonMediaType, mcp.HeaderMethod: {string(mcp.MethodSubscriptionsListen)}}
	if _, err := s.send(context.Background(), []byte(`{"jsonrpc":"2.0","id":"op-1","method":"subscriptions/listen"}`), header); !errors.Is(err, errRefused) {
		t.Errorf("a listen request failed with %v, not through http.Client", err)
	}
	if n := viaClient.requests.Load(); n != 1 {
		t.Errorf("%d listen requests went through http.Client, want 1", n)
	}
}

// refusingTransport counts the requests it is given and fails them.
type refusingTransport struct{ requests atomic.Int32 }

var errRefused = errors.New("refused by the test's transport")

func (r *refusingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.requests.Add(1)
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, errRefused
}
