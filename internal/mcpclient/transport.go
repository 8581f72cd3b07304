package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errResponseTooLarge marks an answer cut at MaxResponseBytes.
var errResponseTooLarge = errors.New("response too large")

// maxErrorBody is how much of a failed answer's body is kept to explain it.
const maxErrorBody = 512

// exchange is what one request saw on the wire: the status of an answer
// that was not a success, the start of its body, and whether the answer
// passed the size cap. It travels in the request's context, as
// net/http/httptrace's hooks do, so that concurrent requests on one session
// never read each other's outcome.
type exchange struct {
	status   atomic.Int32
	tooLarge atomic.Bool
	mu       sync.Mutex
	body     string
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// exchangeOf returns the request's exchange; a request without one (a
// session's own streams after connecting) records nothing.
func exchangeOf(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

func (ex *exchange) lastStatus() int {
	if ex == nil {
		return 0
	}
	return int(ex.status.Load())
}

func (ex *exchange) overCap() bool { return ex != nil && ex.tooLarge.Load() }

// errorBody is the start of the body of the answer that failed, if any.
func (ex *exchange) errorBody() string {
	if ex == nil {
		return ""
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.body
}

// record keeps the status of an answer that was not a success and the
// start of its body, which the MCP library may drop; the body is handed on
// whole.
func (ex *exchange) record(resp *http.Response) {
	ex.status.Store(int32(resp.StatusCode))
	prefix, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ex.mu.Lock()
	ex.body = string(prefix)
	ex.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(prefix), resp.Body), resp.Body}
}

// streamWatch hears about a session's listening stream (the GET of
// Streamable HTTP): once it was open, failing to open it again means the
// server is unreachable or forgot the session. A stream that never opened
// is the library's to retry or give up on (servers may not offer one).
type streamWatch struct {
	lost      func(error)
	listening atomic.Bool
}

func (w *streamWatch) observe(req *http.Request, resp *http.Response, err error) {
	if w == nil || w.lost == nil {
		return
	}
	switch {
	case err == nil && resp.StatusCode < 300:
		w.listening.Store(true)
	case !w.listening.Load():
	case err != nil && req.Context().Err() == nil:
		w.lost(err)
	case err == nil && resp.StatusCode == http.StatusNotFound:
		w.lost(errSessionForgotten)
	}
}

// httpClient builds the client one session uses. It has no overall timeout
// because event streams live as long as the session; the dial, TLS
// handshake and response headers are bounded instead, and every request
// carries a context deadline.
func (t Target) httpClient(watch *streamWatch) *http.Client {
	timeout := t.timeout()
	base := &http.Transport{
		// No proxy: the egress policy must see the server's own address.
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: t.Egress.control}).DialContext,
		TLSClientConfig:       t.TLS,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: &recordingTransport{next: base, watch: watch, maxBody: t.maxResponseBytes()},
		// Redirects could carry our headers to another host; MCP endpoints
		// do not redirect, so refuse to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// recordingTransport fills each request's exchange and caps every answer.
type recordingTransport struct {
	next    http.RoundTripper
	watch   *streamWatch
	maxBody int64
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if req.Method == http.MethodGet {
		t.watch.observe(req, resp, err)
	}
	if err != nil {
		return resp, err
	}
	ex := exchangeOf(req.Context())
	if resp.StatusCode >= 300 && req.Method != http.MethodDelete && ex != nil {
		ex.record(resp)
	}
	switch {
	case req.Method == http.MethodPost:
		resp.Body = &cappedBody{body: resp.Body, left: t.maxBody, ex: ex}
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		// A GET stream lives as long as the session; each event on it is
		// read whole by the library, so each is capped.
		resp.Body = &eventCappedBody{body: resp.Body, max: t.maxBody, ex: ex}
	}
	return resp, nil
}

// cappedBody fails a read past its limit instead of buffering on.
type cappedBody struct {
	body io.ReadCloser
	left int64
	ex   *exchange
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.ex != nil {
			c.ex.tooLarge.Store(true)
		}
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
	body io.ReadCloser
	max  int64
	ex   *exchange
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
		if c.ex != nil {
			c.ex.tooLarge.Store(true)
		}
		return 0, errResponseTooLarge
	}
	return n, err
}

func (c *eventCappedBody) Close() error { return c.body.Close() }
