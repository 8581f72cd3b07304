package mcpclient

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Transport names an MCP transport over HTTP.
type Transport string

const (
	// TransportAuto tries Streamable HTTP and falls back to SSE.
	TransportAuto Transport = "Auto"
	// TransportSSE is the 2024-11-05 HTTP+SSE transport.
	TransportSSE Transport = "SSE"
	// TransportStreamableHTTP is the 2025-03-26 Streamable HTTP transport.
	TransportStreamableHTTP Transport = "StreamableHTTP"
)

// Endpoint is everything needed to reach one MCP server.
type Endpoint struct {
	// URL of the MCP endpoint (the /sse stream for SSE servers).
	URL string
	// Transport to use; empty means TransportAuto.
	Transport Transport
	// Headers sent on every request. Their values are treated as secrets:
	// they never appear in errors.
	Headers map[string]string
	// TLS configures certificate verification; nil uses the system roots.
	TLS *tls.Config
	// Timeout bounds connecting, each request and the wait for response
	// headers.
	Timeout time.Duration
	// Egress, if set, limits the addresses dialed.
	Egress *EgressPolicy
	// MaxResponseBytes caps the body of each answer to a POST, JSON or
	// event stream, and each event of a long-lived GET stream (default
	// 16 MiB), so a broken or hostile server cannot exhaust memory.
	MaxResponseBytes int64
}

// DefaultMaxResponseBytes is the cap on one answer's body.
const DefaultMaxResponseBytes = 16 << 20

// errResponseTooLarge marks an answer cut at MaxResponseBytes.
var errResponseTooLarge = errors.New("response too large")

// redactedURL is the endpoint as errors may show it: no user info, no query.
func (e Endpoint) redactedURL() string {
	u, err := url.Parse(e.URL)
	if err != nil {
		return "the configured URL"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

func (e Endpoint) timeout() time.Duration {
	if e.Timeout <= 0 {
		return 30 * time.Second
	}
	return e.Timeout
}

// httpClient builds the client one session uses. It has no overall timeout
// because SSE streams live as long as the session; the dial, TLS handshake
// and response headers are bounded instead, and every request carries a
// context deadline.
func (e Endpoint) httpClient(status *statusRecorder) *http.Client {
	timeout := e.timeout()
	base := &http.Transport{
		// No proxy: the egress policy must see the server's own address.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: e.Egress.control}).DialContext,
		TLSClientConfig:       e.TLS,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: &statusRecordingTransport{next: base, status: status, maxBody: e.maxResponseBytes()},
		// Redirects could carry our headers to another host; MCP endpoints
		// do not redirect, so refuse to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// statusRecorder remembers the last HTTP error status a server answered,
// and whether an answer passed the size cap, so that a failure can be
// reported as "HTTP 403" or "too large" whatever error text the MCP library
// wrapped around it (or dropped).
type statusRecorder struct {
	code     atomic.Int32
	tooLarge atomic.Bool
	// listenerLost, when set, hears that the listening stream (GET),
	// once open, could not be opened again: the server is unreachable or
	// forgot the session. A stream that never opened is the library's to
	// retry or give up on (servers may not offer one).
	listenerLost func(error)
	listening    atomic.Bool
}

func (s *statusRecorder) last() int { return int(s.code.Load()) }

// reset forgets what an earlier request saw.
func (s *statusRecorder) reset() {
	s.code.Store(0)
	s.tooLarge.Store(false)
}

type statusRecordingTransport struct {
	next    http.RoundTripper
	status  *statusRecorder
	maxBody int64
}

func (t *statusRecordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if req.Method == http.MethodGet && t.status.listenerLost != nil {
		switch {
		case err == nil && resp.StatusCode < 300:
			t.status.listening.Store(true)
		case !t.status.listening.Load():
		case err != nil && req.Context().Err() == nil:
			t.status.listenerLost(err)
		case err == nil && resp.StatusCode == http.StatusNotFound:
			t.status.listenerLost(errSessionForgotten)
		}
	}
	if err != nil {
		return resp, err
	}
	if resp.StatusCode >= 300 && req.Method != http.MethodDelete {
		t.status.code.Store(int32(resp.StatusCode))
	}
	switch {
	case req.Method == http.MethodPost:
		resp.Body = &cappedBody{body: resp.Body, left: t.maxBody, status: t.status}
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		// A GET stream lives as long as the session; each event on it is
		// read whole by the library, so each is capped.
		resp.Body = &eventCappedBody{body: resp.Body, max: t.maxBody, status: t.status}
	}
	return resp, nil
}

func (e Endpoint) maxResponseBytes() int64 {
	if e.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return e.MaxResponseBytes
}

// cappedBody fails a read past its limit instead of buffering on.
type cappedBody struct {
	body   io.ReadCloser
	left   int64
	status *statusRecorder
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.status.tooLarge.Store(true)
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.body.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.body.Close() }

// eventCappedBody fails a read once one server-sent event (the bytes
// between blank lines) grows past max.
type eventCappedBody struct {
	body   io.ReadCloser
	max    int64
	status *statusRecorder
	// inEvent counts the bytes of the event being read; lineStart is true
	// after a newline, so a second one in a row ends the event.
	inEvent   int64
	lineStart bool
}

func (c *eventCappedBody) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n' && c.lineStart:
			c.inEvent = 0
		case b == '\n':
			c.lineStart = true
		case b != '\r':
			c.lineStart = false
			c.inEvent++
		}
	}
	if c.inEvent > c.max {
		c.status.tooLarge.Store(true)
		return 0, errResponseTooLarge
	}
	return n, err
}

func (c *eventCappedBody) Close() error { return c.body.Close() }
