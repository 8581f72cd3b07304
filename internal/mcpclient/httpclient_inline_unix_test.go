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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/mcpclient/internal/inline"
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

// jsonAnswer is a JSON answer to op-1.
var jsonAnswer = func() string {
	const answer = `{"jsonrpc":"2.0","id":"op-1","result":{}}`
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
}()

// TestInlineRetriesARequestThatNeverLeft: a kept connection whose write
// fails before a byte of the next request went out (a server's close that
// alive could not see) costs that request nothing: it goes once more on a
// new connection.
func TestInlineRetriesARequestThatNeverLeft(t *testing.T) {
	srv := startRecordingServer(t, jsonAnswer)
	target := srv.url("/mcp")
	client := Target{URL: target}.httpClient(context.Background(), newStreamWatch(), false)
	defer client.CloseIdleConnections()
	requireInline(t, client)
	// The same transport over a base whose dials the test can break.
	base := newBaseTransport(nil, nil, Target{URL: target}.timeout(), false, false)
	var dials []*failingConn
	dial := base.DialContext
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		fc := &failingConn{Conn: conn}
		dials = append(dials, fc)
		return fc, nil
	}
	client.Transport.(*recordingTransport).next = inline.New(base)
	post := func(body string) error {
		resp, err := client.Do(postRequest(t, target, body, http.Header{"Content-Type": jsonMediaType}))
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
}

// TestACancelledRequestIsNeverSent: a request whose caller has already
// gone does not reach the server over a kept connection (where the write
// would race the abort), and fails with the context's error.
func TestACancelledRequestIsNeverSent(t *testing.T) {
	srv := startRecordingServer(t, jsonAnswer)
	target := srv.url("/mcp")
	client := Target{URL: target}.httpClient(context.Background(), newStreamWatch(), false)
	defer client.CloseIdleConnections()
	requireInline(t, client)
	body := `{"jsonrpc":"2.0","id":"op-1","method":"ping"}`
	// answered makes a request that is answered, and keeps its
	// connection: the server has recorded every request written before
	// it on that connection by the time its answer is read.
	answered := func() {
		t.Helper()
		resp, err := client.Do(postRequest(t, target, body, http.Header{"Content-Type": jsonMediaType}))
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
		_, err := client.Do(postRequest(t, target, body, http.Header{"Content-Type": jsonMediaType}).WithContext(cancelled))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled request failed with %v, want context.Canceled", err)
		}
	}
	answered()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if want := rounds + 1; len(srv.seen) != want {
		t.Errorf("the server read %d requests, want the %d answered ones alone", len(srv.seen), want)
	}
}

// requireInline fails the test unless client's POSTs go out on the
// inline transport, which the test needs.
func requireInline(t *testing.T, client *http.Client) {
	t.Helper()
	record, ok := client.Transport.(*recordingTransport)
	if !ok {
		t.Fatalf("client's transport is %T", client.Transport)
	}
	if _, ok := record.next.(*inline.Transport); !ok {
		t.Fatalf("no inline transport under %T", record.next)
	}
}

// postRequest is a request as a 2026-07-28 session makes it (newPost).
func postRequest(t *testing.T, url, body string, header http.Header) *http.Request {
	t.Helper()
	r, err := newPost(context.Background(), url, []byte(body), header)
	if err != nil {
		t.Fatal(err)
	}
	return r
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
