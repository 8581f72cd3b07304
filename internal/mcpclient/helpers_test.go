package mcpclient

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// mcpToolWithoutSchema is a tool whose inputSchema is sent as JSON null.
func mcpToolWithoutSchema(name string) mcp.Tool {
	return mcp.Tool{Name: name, RawInputSchema: []byte("null")}
}

// waitFor polls cond until it holds, failing the test after 20 s: a real
// signal, not a fixed sleep.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// front serves in front of a real server at backend: handle answers each
// request, passing it on through pass when it likes; connState, if set,
// hears the front's client connections. It returns the URL of the
// backend's endpoint through the front, which stops with the test.
func front(t *testing.T, backend string, handle func(w http.ResponseWriter, r *http.Request, pass http.Handler),
	connState func(net.Conn, http.ConnState)) string {
	t.Helper()
	proxy, path := proxyTo(t, backend)
	// The proxy passes the request's body on while it streams the answer
	// back. Without full duplex, net/http's HTTP/1 server closes an unread
	// body when the answer's header goes out; the proxy's transport, still
	// reading the body for its end, then fails the request and closes the
	// backend connection. A subscriptions/listen stream (a POST answered
	// with a stream) died that way now and then, a few ms after it opened.
	// Only what goes through the proxy runs full duplex: a handler that
	// answers itself keeps net/http's watch for the caller going away,
	// which begins once the body has been read.
	pass := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, pass) }))
	srv.Config.ConnState = connState
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + path
}

// proxyTo is a reverse proxy to the server of the endpoint at backend,
// which streams answers as they come, and the endpoint's path.
func proxyTo(t *testing.T, backend string) (*httputil.ReverseProxy, string) {
	t.Helper()
	target, err := neturl.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.FlushInterval = -1
	return proxy, target.Path
}

// answeringCalls fronts a real 2026-07-28 server at backend and answers
// each tools/call with answer, given the request's id; the rest goes on to
// the server. connState, if set, hears the front's client connections.
func answeringCalls(t *testing.T, backend string, answer func(w http.ResponseWriter, id string), connState func(net.Conn, http.ConnState)) string {
	t.Helper()
	return front(t, backend, func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		if r.Header.Get("Mcp-Method") != "tools/call" {
			pass.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		answer(w, string(req.ID))
	}, connState)
}
