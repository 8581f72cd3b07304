package mcpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
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
	// tap, when set, hears the notifications on this request's answer
	// stream.
	tap func(method string, params json.RawMessage)
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

// streamWatch hears about a session's stream for notifications: the GET
// of Streamable HTTP before 2026-07-28, the subscriptions/listen stream in
// 2026-07-28. listening says the server will send list changes on it; once
// it was open, failing to open the GET again means the server is
// unreachable or forgot the session. A stream that never opened is the
// library's to retry or give up on (servers may not offer one).
type streamWatch struct {
	lost      func(error)
	listening atomic.Bool
	// settled is closed once the stream's first attempt has an outcome.
	settled    chan struct{}
	settleOnce sync.Once
	// version is the negotiated revision, for the GET's
	// MCP-Protocol-Version header; versionKnown is closed once it is set.
	version      atomic.Value
	versionKnown chan struct{}
	versionOnce  sync.Once
}

func newStreamWatch() *streamWatch {
	return &streamWatch{settled: make(chan struct{}), versionKnown: make(chan struct{})}
}

func (w *streamWatch) settle() { w.settleOnce.Do(func() { close(w.settled) }) }

// knowVersion records the negotiated revision.
func (w *streamWatch) knowVersion(v string) {
	w.version.Store(v)
	w.versionOnce.Do(func() { close(w.versionKnown) })
}

func (w *streamWatch) observe(req *http.Request, resp *http.Response, err error) {
	if w == nil {
		return
	}
	defer w.settle()
	switch {
	case err == nil && resp.StatusCode < 300:
		w.listening.Store(true)
	case w.lost == nil || !w.listening.Load():
	case err != nil && req.Context().Err() == nil:
		w.lost(err)
	case err == nil && resp.StatusCode == http.StatusNotFound:
		w.lost(errSessionForgotten)
	}
}

// withVersion gives a GET the MCP-Protocol-Version header the library may
// not have set yet: its listening stream can start before it records the
// version initialize negotiated.
func (w *streamWatch) withVersion(req *http.Request) *http.Request {
	if w == nil || req.Header.Get("MCP-Protocol-Version") != "" {
		return req
	}
	select {
	case <-w.versionKnown:
	case <-time.After(time.Second):
		return req
	case <-req.Context().Done():
		return req
	}
	v, _ := w.version.Load().(string)
	if v == "" || v == mcp.ProtocolVersion20241105 {
		return req
	}
	req = req.Clone(req.Context())
	req.Header.Set("MCP-Protocol-Version", v)
	return req
}

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
// plain-HTTP server are made on the caller's goroutine (inline.go).
func (t Target) httpClient(watch *streamWatch, listening bool) *http.Client {
	var base *http.Transport
	shared := false
	if listening && t.TLS == nil && strings.HasPrefix(t.URL, "http://") {
		base, shared = listeningTransports.get(t.Egress, t.timeout())
	} else {
		base = newBaseTransport(t.Egress, t.TLS, t.timeout(), strings.HasPrefix(t.URL, "https://"), listening)
	}
	var next http.RoundTripper = base
	if inlineSupported && !shared && strings.HasPrefix(t.URL, "http://") {
		next = newInlineTransport(base)
	}
	return &http.Client{
		Transport: &recordingTransport{next: next, shared: shared, watch: watch, maxBody: t.maxResponseBytes()},
		// Redirects could carry our headers to another host; MCP endpoints
		// do not redirect, so refuse to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

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
		IdleConnTimeout:       90 * time.Second,
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
	return t.answered(req.Context(), req, resp), nil
}

// traced says ctx carries a trace to pass on in a request's headers.
func traced(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsValid() }

// injectTrace puts W3C trace context in header, for servers that read it
// there.
func injectTrace(ctx context.Context, header http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(header))
}

// answered fills the exchange ctx carries with resp, req's answer, and
// caps resp's body.
func (t *recordingTransport) answered(ctx context.Context, req *http.Request, resp *http.Response) *http.Response {
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
	case req.Method == http.MethodPost:
		resp.Body = &cappedBody{body: resp.Body, left: t.maxBody, ex: ex}
		if stream && ex != nil && ex.tap != nil {
			resp.Body = &tappedBody{body: resp.Body, tap: ex.tap}
		}
	}
	return resp
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

// Answers to requests that arrive on a long-lived event stream (the
// legacy SSE transport) and grow past the cap are replaced by this
// JSON-RPC error, which request turns back into errResponseTooLarge.
const (
	codeAnswerTooLarge    = -32099
	messageAnswerTooLarge = "mcp-operator: the answer passed the size cap and was dropped"
)

// eventCappedBody keeps each server-sent event (the bytes up to a blank
// line) of a long-lived stream within max. An event is handed on only
// once it ends (the library buffers it whole anyway); one that grows past
// max is dropped unread, and when it answered one of the operator's
// requests it is replaced by an error for that request alone, so that an
// oversized answer fails its own call and not the stream, with every
// other call on it.
type eventCappedBody struct {
	body io.ReadCloser
	max  int64
	ex   *exchange

	ready     []byte // what Read hands on next
	event     []byte // the event being read, held back
	over      bool   // the event passed max and is being skipped
	head      []byte // the first bytes of a skipped event
	tail      []byte // its last bytes
	skipped   int64  // bytes of it skipped so far
	lineStart bool
	chunk     []byte
	filled    bool // the last read filled chunk
	err       error
}

// The chunk a held stream is read through is small while the stream waits
// (a manager holds one stream per server that announces list changes, and
// the chunk for as long as it waits) and grows while reads fill it, for a
// legacy SSE stream carrying large answers.
const (
	idleChunk = 512
	maxChunk  = 32 << 10
)

// size picks the chunk for the next read: twice the last one when that
// read filled it; back to idleChunk only once the stream is between
// events, since reads of a large event come in pieces of any size (a TLS
// record, a proxy's flush) and shrinking on each would allocate a chunk
// per read.
func (c *eventCappedBody) size() {
	between := len(c.event) == 0 && !c.over
	switch {
	case c.chunk == nil || (!c.filled && between && len(c.chunk) > idleChunk):
		c.chunk = make([]byte, idleChunk)
	case c.filled && len(c.chunk) < maxChunk:
		c.chunk = make([]byte, 2*len(c.chunk))
	}
}

// keepEnds is how much of each end of a skipped event is kept to find
// its id: servers write the id before the result (mcp-go) or after it
// (the TypeScript SDK).
const keepEnds = 512

// skipLimit is how many times the cap an event may run on, skipped,
// before the stream is given up.
const skipLimit = 4

func (c *eventCappedBody) Read(p []byte) (int, error) {
	for len(c.ready) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		c.size()
		n, err := c.body.Read(c.chunk)
		c.filled = n == len(c.chunk)
		c.take(c.chunk[:n])
		if c.err != nil {
			return 0, c.err
		}
		if err != nil {
			// What is held of an unfinished event goes on, as the stream
			// itself would have; the reader sees the error after it.
			if !c.over {
				c.ready = append(c.ready, c.event...)
			}
			c.event, c.err = nil, err
		}
	}
	n := copy(p, c.ready)
	c.ready = c.ready[n:]
	return n, nil
}

// take sorts incoming bytes into events.
func (c *eventCappedBody) take(b []byte) {
	for len(b) > 0 && c.err == nil {
		end := c.eventEnd(b)
		part := b
		if end >= 0 {
			part = b[:end+1]
		}
		c.hold(part)
		b = b[len(part):]
		if end >= 0 {
			c.finish()
		}
	}
}

// eventEnd is the index in b of the newline that ends the current event
// (the second of two in a row, carriage returns aside), or -1.
func (c *eventCappedBody) eventEnd(b []byte) int {
	for i, ch := range b {
		switch {
		case ch == '\n' && c.lineStart:
			c.lineStart = false
			return i
		case ch == '\n':
			c.lineStart = true
		case ch != '\r':
			c.lineStart = false
		}
	}
	return -1
}

func (c *eventCappedBody) hold(part []byte) {
	if !c.over && int64(len(c.event)+len(part)) <= c.max {
		c.event = append(c.event, part...)
		return
	}
	if !c.over {
		c.over = true
		c.head = append([]byte(nil), c.event[:min(len(c.event), keepEnds)]...)
		c.tail = append(c.tail[:0], c.event[max(0, len(c.event)-keepEnds):]...)
		c.event = nil
		if c.ex != nil {
			c.ex.tooLarge.Store(true)
		}
	}
	c.skipped += int64(len(part))
	if c.skipped > skipLimit*c.max {
		// An event this long is a stream stuck in one event, not an answer:
		// every later answer would vanish into it. End the stream.
		c.err = errResponseTooLarge
		return
	}
	c.tail = append(c.tail, part...)
	if len(c.tail) > keepEnds {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-keepEnds:]...)
	}
}

// finish hands on the event that just ended, or the error that stands in
// for a skipped answer.
func (c *eventCappedBody) finish() {
	if !c.over {
		c.ready = append(c.ready, c.event...)
		c.event = c.event[:0]
		return
	}
	if id := answeredID(c.head, c.tail); id != nil {
		c.ready = append(c.ready, fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%q}}\n\n",
			id, codeAnswerTooLarge, messageAnswerTooLarge)...)
	}
	c.over, c.head, c.tail, c.skipped = false, nil, c.tail[:0], 0
}

// answeredID is the operator's request id ("op-N", see request) a
// skipped event answered, nil when its ends name none (a notification, or
// another's id). The head holds the event's fields before the message.
func answeredID(head, tail []byte) json.RawMessage {
	if i := bytes.Index(head, []byte("data:")); i >= 0 {
		head = bytes.TrimLeft(head[i+len("data:"):], " ")
	}
	id := wire.AnsweredID(head, tail)
	var s string
	if json.Unmarshal(id, &s) != nil || !strings.HasPrefix(s, "op-") {
		return nil
	}
	return id
}

func (c *eventCappedBody) Close() error { return c.body.Close() }
