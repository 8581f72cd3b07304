package mcpclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// inlineTransport makes a 2026-07-28 session's requests to a plain-HTTP
// server on the caller's goroutine: it writes the request and reads the
// answer itself, over connections it keeps, with net/http's own request
// writer (Request.Write) and response reader (ReadResponse).
//
// net/http's Transport hands every request on a kept connection to two
// goroutines of that connection, one writing it and one reading the
// answer, and the answer back to the caller: three handoffs a request,
// each of which may wake a thread. Measured from outside on the two-core
// benchmark machine (test/bench, latency rounds of 2,000 calls, this
// change made alone), those handoffs were about 100 µs of the catalog's
// added latency a /mcp tools/call (the bare proxy's whole hop costs
// 450–600 µs) and took /mcp from 1.10–1.22× the bare proxy's added p50
// to 0.91–1.07×. A kept connection also holds no goroutine while idle.
//
// What it gives up, against net/http: HTTP/2 and TLS (https targets keep
// net/http, which negotiates both), gzip (not asked for), and noticing a
// server's close of an idle connection while it waits: a kept connection
// is checked just before reuse instead (alive), and a request whose write
// fails on a kept connection is sent once more on a new one, as net/http
// does when nothing reached the server. Everything else, GETs, the
// subscriptions/listen stream and every request of a legacy session, goes
// to next.
type inlineTransport struct {
	next *http.Transport
	// dial is next's, with the egress policy.
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	headerTimeout time.Duration
	idleTimeout   time.Duration
	maxIdle       int

	mu   sync.Mutex
	idle []*inlineConn
}

func newInlineTransport(next *http.Transport) *inlineTransport {
	return &inlineTransport{next: next, dial: next.DialContext, headerTimeout: next.ResponseHeaderTimeout,
		idleTimeout: next.IdleConnTimeout, maxIdle: next.MaxIdleConnsPerHost}
}

// inlineConn is one kept connection.
type inlineConn struct {
	conn net.Conn
	addr string
	br   *bufio.Reader
	bw   *bufio.Writer
	// idleSince is when it was put back.
	idleSince time.Time
	// mu orders abort against the read deadline's changes, so that a
	// cancel is never undone by clearing the response-header deadline.
	mu      sync.Mutex
	aborted bool
}

// aLongTimeAgo is a deadline that has passed: it ends a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

// abort ends whatever the connection is doing, for good: its request was
// cancelled.
func (pc *inlineConn) abort() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.aborted = true
	_ = pc.conn.SetDeadline(aLongTimeAgo)
}

func (pc *inlineConn) readDeadline(t time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !pc.aborted {
		_ = pc.conn.SetReadDeadline(t)
	}
}

// errWriteFailed marks a request whose write failed: the server cannot
// have read all of it, so it did not act on it.
type errWriteFailed struct{ err error }

func (e errWriteFailed) Error() string { return e.err.Error() }
func (e errWriteFailed) Unwrap() error { return e.err }

func (t *inlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Scheme != "http" || req.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen) {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	addr := canonicalAddr(req.URL)
	pc, reused, err := t.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	resp, err := t.exchange(ctx, pc, req)
	var notSent errWriteFailed
	if err != nil && reused && errors.As(err, &notSent) && req.GetBody != nil && ctx.Err() == nil {
		// The server closed the kept connection between the check and
		// the write: once more, on a new one.
		if req.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
		if pc, err = t.dialConn(ctx, addr); err != nil {
			return nil, err
		}
		resp, err = t.exchange(ctx, pc, req)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// exchange writes req on pc and reads the answer's head; the body is
// read by the caller, and pc goes back to be kept when the body is read
// to its end and closed.
func (t *inlineTransport) exchange(ctx context.Context, pc *inlineConn, req *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, pc.abort)
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = pc.conn.Close()
		if ctx.Err() != nil {
			// As net/http reports a cancelled request: the cause.
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	err := req.Write(pc.bw)
	if err == nil {
		err = pc.bw.Flush()
	}
	if err != nil {
		return fail(errWriteFailed{err})
	}
	if t.headerTimeout > 0 {
		pc.readDeadline(time.Now().Add(t.headerTimeout))
	}
	resp, err := http.ReadResponse(pc.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		// An interim answer (103 Early Hints): the answer follows.
		resp, err = http.ReadResponse(pc.br, req)
	}
	if err != nil {
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() && ctx.Err() == nil {
			err = errHeaderTimeout
		}
		return fail(err)
	}
	if t.headerTimeout > 0 {
		pc.readDeadline(time.Time{})
	}
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	resp.Body = &inlineBody{body: resp.Body, t: t, pc: pc, ctx: ctx, stop: stop, keep: keep}
	return resp, nil
}

// errHeaderTimeout is net/http's error for a server that did not answer
// within ResponseHeaderTimeout, a timeout as net.Error tells.
var errHeaderTimeout error = &headerTimeoutError{}

type headerTimeoutError struct{}

func (*headerTimeoutError) Error() string   { return "net/http: timeout awaiting response headers" }
func (*headerTimeoutError) Timeout() bool   { return true }
func (*headerTimeoutError) Temporary() bool { return true }

// get returns a kept connection to addr that is still open, or a new one.
// The most recently kept goes first: its buffers are the likeliest to be
// in the caches.
func (t *inlineTransport) get(ctx context.Context, addr string) (*inlineConn, bool, error) {
	for {
		t.mu.Lock()
		n := len(t.idle)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		pc := t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		if pc.addr == addr && time.Since(pc.idleSince) < t.idleTimeout && pc.br.Buffered() == 0 && alive(pc.conn) {
			return pc, true, nil
		}
		_ = pc.conn.Close()
	}
	pc, err := t.dialConn(ctx, addr)
	return pc, false, err
}

func (t *inlineTransport) dialConn(ctx context.Context, addr string) (*inlineConn, error) {
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &inlineConn{conn: conn, addr: addr, br: bufio.NewReader(conn), bw: bufio.NewWriter(conn)}, nil
}

// put keeps a connection whose answer was read to its end, up to
// maxIdle of them.
func (t *inlineTransport) put(pc *inlineConn) {
	pc.idleSince = time.Now()
	t.mu.Lock()
	if len(t.idle) < t.maxIdle {
		t.idle = append(t.idle, pc)
		pc = nil
	}
	t.mu.Unlock()
	if pc != nil {
		_ = pc.conn.Close()
	}
}

// CloseIdleConnections closes the kept connections, and next's.
func (t *inlineTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, pc := range idle {
		_ = pc.conn.Close()
	}
	t.next.CloseIdleConnections()
}

// inlineBody is an answer's body on a kept connection. Reads and Close
// may come from different goroutines (post's finish closes from a timer).
type inlineBody struct {
	body io.ReadCloser
	t    *inlineTransport
	pc   *inlineConn
	ctx  context.Context
	stop func() bool
	keep bool

	mu     sync.Mutex
	ended  bool
	closed bool
}

func (b *inlineBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.mu.Lock()
		b.ended = true
		b.mu.Unlock()
	case err != nil && b.ctx.Err() != nil:
		err = context.Cause(b.ctx)
	}
	return n, err
}

// Close keeps the connection when the body was read to its end and
// nothing cancelled the request; otherwise it closes the connection,
// which also ends a read blocked on it (an event stream that stays open).
func (b *inlineBody) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	ended := b.ended
	b.mu.Unlock()
	if !ended {
		_ = b.pc.conn.Close()
	}
	_ = b.body.Close()
	// stop first: a request cancelled meanwhile left its connection
	// aborted, which must not be kept.
	if b.stop() && ended && b.keep {
		b.t.put(b.pc)
		return nil
	}
	_ = b.pc.conn.Close()
	return nil
}

// canonicalAddr is the host and port of a plain-HTTP URL.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
