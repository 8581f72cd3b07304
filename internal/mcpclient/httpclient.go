package mcpclient

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolmesh/mcp-operator/internal/mcpclient/internal/inline"
)

// listeningBufferSize is the read and write buffer of each connection of
// a session opened to hear list changes (the controller's, one per server
// that announces them). Such a session's connection mostly waits on its
// stream for an event of a hundred bytes, and net/http's default of 4 KiB
// each way, held for as long as the stream, is most of what a server
// costs the manager. Larger reads and writes go past the buffer.
const listeningBufferSize = 1 << 10

// httpClient builds the client one session uses. It has no overall timeout
// because event streams live as long as the session; the dial, TLS
// handshake and response headers are bounded instead, and every request
// carries a context deadline. listening says the session is opened to hold
// a stream for list changes; such sessions to plain-HTTP servers share
// their connection pool (see shared.go). The other sessions' POSTs to a
// plain-HTTP server are made on the caller's goroutine (package inline).
// With Credentials every request is authorized (authorizingTransport);
// opening is the context the session is opened with, whose values stand
// in for those of the session's own requests.
func (t Target) httpClient(opening context.Context, watch *streamWatch, listening bool) *http.Client {
	var base *http.Transport
	shared := false
	if listening && t.TLS == nil && strings.HasPrefix(t.URL, "http://") {
		base, shared = listeningTransports.get(t.Egress, t.timeout())
	} else {
		base = newBaseTransport(t.Egress, t.TLS, t.timeout(), strings.HasPrefix(t.URL, "https://"), listening)
	}
	var next http.RoundTripper = base
	if inline.Supported && !shared && strings.HasPrefix(t.URL, "http://") {
		next = inline.New(base)
	}
	if t.Credentials != nil {
		// Under the recording: a stream that cannot be authorized again
		// is lost as one the server refused would be.
		transport := &authorizingTransport{next: next, creds: t.Credentials}
		if t.Credentials.PerCaller() {
			// Only a session of one caller (or of discovery) needs who
			// opened it; a shared session keeps no caller's context.
			transport.session = context.WithoutCancel(opening)
		}
		next = transport
	}
	return &http.Client{
		Transport: &recordingTransport{next: next, shared: shared, watch: watch, maxBody: t.maxResponseBytes()},
		// Redirects could carry our headers to another host; MCP endpoints
		// do not redirect, so refuse to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// IdleConnTimeout is how long a session's pool keeps a connection nobody
// uses. A burst of calls to a server leaves up to MaxIdleConnsPerHost
// connections behind, a descriptor and two goroutines each at both ends;
// net/http's default of 90 s kept them past the minute in which the
// manager is to be back where it was after a burst (issue 45), and a
// server called less often than this pays one dial.
const IdleConnTimeout = 30 * time.Second

// newBaseTransport is the connection pool under a session's client. It
// holds nothing of any one server beyond what its arguments say, so that
// sessions may share it.
func newBaseTransport(egress *EgressPolicy, tlsConfig *tls.Config, timeout time.Duration, https, listening bool) *http.Transport {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: egress.control}
	base := &http.Transport{
		// No proxy: the egress policy must see the server's own address.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err := egress.checkName(addr); err != nil {
				return nil, err
			}
			return dialer.DialContext(ctx, network, addr)
		},
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       IdleConnTimeout,
		// HTTP/2 needs TLS here (no h2c): set up for every session it
		// cost each one 1.2 KiB of protocol tables it could not use.
		ForceAttemptHTTP2: https,
	}
	if listening {
		base.ReadBufferSize, base.WriteBufferSize = listeningBufferSize, listeningBufferSize
	}
	return base
}

// recordingTransport fills each request's exchange and caps every answer.
type recordingTransport struct {
	next http.RoundTripper
	// shared says next is a pool other sessions use, whose idle
	// connections it closes itself (see shared.go).
	shared  bool
	watch   *streamWatch
	maxBody int64
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// connections underneath, when they are the session's own.
func (t *recordingTransport) CloseIdleConnections() {
	if t.shared {
		return
	}
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		req = t.watch.withVersion(req)
	}
	if traced(req.Context()) {
		req = req.Clone(req.Context())
		injectTrace(req.Context(), req.Header)
	}
	resp, err := t.next.RoundTrip(req)
	if req.Method == http.MethodGet {
		t.watch.observe(req, resp, err)
	}
	if err != nil {
		return resp, err
	}
	return t.recordAnswer(req.Context(), req, resp), nil
}

// traced says ctx carries a trace to pass on in a request's headers.
func traced(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsValid() }

// injectTrace puts W3C trace context in header, for servers that read it
// there.
func injectTrace(ctx context.Context, header http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(header))
}

// recordAnswer fills the exchange ctx carries with resp, req's answer, and
// caps resp's body.
func (t *recordingTransport) recordAnswer(ctx context.Context, req *http.Request, resp *http.Response) *http.Response {
	ex := exchangeOf(ctx)
	if resp.StatusCode >= 300 && req.Method != http.MethodDelete && ex != nil {
		ex.record(resp)
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	switch {
	case stream && (req.Method == http.MethodGet || req.Header.Get("Mcp-Method") == "subscriptions/listen"):
		// A listening stream lives as long as the session; each event on it
		// is read whole, so each is capped.
		resp.Body = &eventCappedBody{body: resp.Body, max: t.maxBody, ex: ex}
		if ex != nil && ex.ask != nil {
			// A call's stream resumed (Last-Event-ID) after it broke: the
			// server's requests for the call may come here now.
			resp.Body = &tappedBody{body: resp.Body, ask: ex.ask}
		}
	case req.Method == http.MethodPost:
		resp.Body = &cappedBody{body: resp.Body, left: t.maxBody, ex: ex}
		if stream && ex != nil && (ex.tap != nil || ex.ask != nil) {
			resp.Body = &tappedBody{body: resp.Body, tap: ex.tap, ask: ex.ask}
		}
	}
	return resp
}
