package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/mcpclient/internal/inline"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// connCounts follows a front's client connections.
type connCounts struct {
	opened, closed atomic.Int64
}

func (c *connCounts) hear(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
	}
}

// closableFront is a plain reverse proxy in front of backend whose client
// connections the test can close, as a server's idle timeout does.
func closableFront(t *testing.T, backend string, counts *connCounts) (*httptest.Server, string) {
	t.Helper()
	proxy, path := proxyTo(t, backend)
	srv := httptest.NewUnstartedServer(proxy)
	srv.Config.ConnState = counts.hear
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, srv.URL + path
}

// echoSession connects a session at revision ("" for the newest) to an
// mcp-go server with the tool "echo", through a closable front whose
// connections counts follows.
func echoSession(t *testing.T, revision string, timeout time.Duration) (*Session, *httptest.Server, *connCounts) {
	t.Helper()
	srv := startServer(t, testmcp.Options{Transport: testmcp.StreamableHTTP})
	srv.AddTools("echo")
	counts := &connCounts{}
	front, url := closableFront(t, srv.URL(), counts)
	s := connectT(t, Target{URL: url, Timeout: timeout, Revision: revision}, nil)
	want := revision
	if want == "" {
		want = RevisionStateless
	}
	if got := s.Info().ProtocolVersion; got != want {
		t.Fatalf("the session speaks %s, want %s", got, want)
	}
	return s, front, counts
}

// TestAConnectionTheServerClosedIsNotReused: a 2026-07-28 session keeps
// its connection between calls; when the server closes it meanwhile
// (Node's servers do after 5 s idle), the next call goes out on a new
// one and succeeds, rather than failing on the closed one.
func TestAConnectionTheServerClosedIsNotReused(t *testing.T) {
	s, front, counts := echoSession(t, "", 10*time.Second)
	call := func(message string) {
		t.Helper()
		result, err := s.CallTool(context.Background(), "echo", json.RawMessage(fmt.Sprintf(`{"message":%q}`, message)), CallOptions{})
		if err != nil {
			t.Fatalf("call %s: %v", message, err)
		}
		if len(result.Content) != 1 || !strings.Contains(string(result.Content[0]), message) {
			t.Fatalf("call %s answered %s", message, result.Content)
		}
	}
	call("first")
	before := counts.opened.Load()
	call("second")
	if n := counts.opened.Load() - before; n != 0 {
		t.Fatalf("a second call right after the first opened %d connections, want the kept one", n)
	}
	for round := range 3 {
		front.CloseClientConnections()
		waitFor(t, "the front to close its connections", func() bool { return counts.closed.Load() == counts.opened.Load() })
		opened := counts.opened.Load()
		call(fmt.Sprintf("after close %d", round))
		if n := counts.opened.Load() - opened; n != 1 {
			t.Errorf("round %d: the call after the server closed the connection opened %d, want 1", round, n)
		}
	}
}

// TestACancelledCallLeavesNoConnectionBehind: cancelling a call ends its
// request at once, reads as the cancel (not as a timeout), and the
// connection it was on is closed, never reused for another answer.
func TestACancelledCallLeavesNoConnectionBehind(t *testing.T) {
	g := startGoSDK(t, testmcp.GoSDKOnly2026)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	defer close(release)
	g.AddWaitTool(release, started)
	var counts connCounts
	_, url := closableFront(t, g.URL(), &counts)
	s := connectT(t, Target{URL: url, Timeout: time.Minute}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "wait", json.RawMessage(`{}`), CallOptions{})
		done <- err
	}()
	<-started
	closedBefore := counts.closed.Load()
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || KindOf(err) == ErrTimeout {
		t.Fatalf("the cancelled call failed with %v (%s), want the cancel", err, KindOf(err))
	}
	waitFor(t, "the cancelled call's connection to close", func() bool { return counts.closed.Load() > closedBefore })
	result, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"message":"after"}`), CallOptions{})
	if err != nil || len(result.Content) != 1 || !strings.Contains(string(result.Content[0]), "after") {
		t.Fatalf("the call after a cancel: %s, %v", result.Content, err)
	}
}

// TestConcurrentCallsOnOneSessionGetTheirOwnAnswers: calls made at once
// on one 2026-07-28 session each get their own answer, and the
// connections they opened are kept and reused, not one per call.
func TestConcurrentCallsOnOneSessionGetTheirOwnAnswers(t *testing.T) {
	s, _, counts := echoSession(t, "", 30*time.Second)
	const callers, calls = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, callers*calls)
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				message := fmt.Sprintf("caller %d call %d", c, i)
				result, err := s.CallTool(context.Background(), "echo", json.RawMessage(fmt.Sprintf(`{"message":%q}`, message)), CallOptions{})
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s: %w", message, err)
				case len(result.Content) != 1 || !strings.Contains(string(result.Content[0]), `\"`+message+`\"`):
					errs <- fmt.Errorf("%s was answered %s", message, result.Content)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// One per caller, and the connect's own, when every connection is
	// kept between calls; twice that leaves room for a busy machine
	// (drainAndClose drops a connection whose end is late), and none per call.
	if n := counts.opened.Load(); n > 2*callers {
		t.Errorf("%d calls by %d callers opened %d connections", callers*calls, callers, n)
	}
}

// TestEverySessionReusesItsConnection: sequential calls of a session of
// either style go out on the connection the last one left, including a
// legacy session's, whose transport (mcp-go's) cancels each request's
// context before it closes the answer's body.
func TestEverySessionReusesItsConnection(t *testing.T) {
	for _, revision := range []string{"2025-11-25", ""} {
		t.Run("revision "+revision, func(t *testing.T) {
			s, _, counts := echoSession(t, revision, 10*time.Second)
			tr, ok := s.http.Transport.(*recordingTransport).next.(*inline.Transport)
			if !ok {
				t.Fatal("the session's POSTs do not go out inline")
			}
			kept := tr.Kept
			// Connecting ends with a notification for legacy sessions
			// (initialized), answered 202 with no body: its connection
			// is kept too.
			if n := kept(); n != 1 {
				t.Fatalf("%d connections kept after connecting, want 1", n)
			}
			before := counts.opened.Load()
			const calls = 10
			for i := range calls {
				if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), CallOptions{}); err != nil {
					t.Fatal(err)
				}
				if n := kept(); n != 1 {
					t.Fatalf("call %d: %d connections kept, want 1", i, n)
				}
			}
			if n := counts.opened.Load() - before; n > 1 {
				t.Errorf("%d calls opened %d connections, want the kept one", calls, n)
			}
		})
	}
}
