// Package inline makes a session's POSTs to plain-HTTP servers on the
// caller's goroutine, over connections it keeps; everything else goes to
// the net/http Transport under it.
package inline

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

// Transport makes a session's POSTs to a plain-HTTP server on the
// caller's goroutine: it writes the request and reads the answer itself,
// over connections it keeps, writing the request with net/http's
// Request.Write and reading the answer with its response reader
// (ReadResponse): every request of a
// 2026-07-28 session, and every message an older session posts
// (initialize, calls, notifications, answers to the server).
//
// net/http's Transport hands every request on a kept connection to two
// goroutines of that connection, one writing it and one reading the
// answer, and the answer back to the caller: three handoffs a request,
// each of which may wake a thread. Measured from outside on the two-core
// benchmark machine (test/bench, latency rounds of 2,000 calls, with and
// without this transport), those handoffs are about 100 µs of the
// catalog's added latency a /mcp tools/call (the bare proxy's whole hop
// costs 450–600 µs): /mcp's added p50 is 0.91–1.07× the bare proxy's
// with it, 1.10–1.22× without. A kept connection also holds no goroutine while idle.
//
// What it gives up, against net/http: HTTP/2 and TLS (https targets keep
// net/http, which negotiates both), gzip (not asked for), and noticing a
// server's close of an idle connection while it waits: a kept connection
// is checked just before reuse instead (alive, which is why only Unix
// systems use it), and one idle for idleTimeout is closed by a sweep, as
// net/http's are. A request whose write failed before any byte went out
// on a kept connection is sent once more on a new one, as net/http does.
// Everything else, GETs (a legacy session's event streams), DELETEs and
// the subscriptions/listen stream, goes to next.
type Transport struct {
	next *http.Transport
	// dial is next's, with the egress policy.
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	headerTimeout time.Duration
	idleTimeout   time.Duration
	maxIdle       int

	mu   sync.Mutex
	idle []*keptConn
	// closeIdle is set by CloseIdleConnections until the next request:
	// a connection whose answer ends meanwhile is closed, not kept (a
	// closed session's last calls).
	closeIdle bool
	// sweeping says a sweep of idle connections is due.
	sweeping bool
}

// New returns a Transport over next: its dial, response-header timeout,
// idle timeout and idle bound are next's, and what it does not send
// itself goes to next.
func New(next *http.Transport) *Transport {
	t := &Transport{next: next, dial: next.DialContext, headerTimeout: next.ResponseHeaderTimeout,
		idleTimeout: next.IdleConnTimeout, maxIdle: next.MaxIdleConnsPerHost}
	if t.idleTimeout <= 0 {
		t.idleTimeout = 90 * time.Second // net/http's default
	}
	return t
}

// keptConn is one kept connection.
type keptConn struct {
	conn net.Conn
	// written counts the bytes written to conn, to tell a request that
	// never left from one that may have reached the server.
	written *countingWriter
	addr    string
	br      *bufio.Reader
	bw      *bufio.Writer
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
func (pc *keptConn) abort() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.aborted = true
	_ = pc.conn.SetDeadline(aLongTimeAgo)
}

func (pc *keptConn) readDeadline(t time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !pc.aborted {
		_ = pc.conn.SetReadDeadline(t)
	}
}

// countingWriter counts what goes through it to its connection.
type countingWriter struct {
	conn net.Conn
	n    int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.conn.Write(p)
	w.n += int64(n)
	return n, err
}

// errNothingWritten marks a request whose write failed before any of its
// bytes went out: the server never saw it.
type errNothingWritten struct{ err error }

func (e errNothingWritten) Error() string { return e.err.Error() }
func (e errNothingWritten) Unwrap() error { return e.err }

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Scheme != "http" || listenStream(req.Header) {
		return t.next.RoundTrip(req)
	}
	return t.send(req.Context(), req, canonicalAddr(req.URL))
}

// send makes req, a POST, to addr, under ctx.
func (t *Transport) send(ctx context.Context, req *http.Request, addr string) (*http.Response, error) {
	// A request already cancelled is not sent, as net/http's Transport
	// does not send it: on a kept connection the write would otherwise
	// race the abort that context.AfterFunc starts on another goroutine,
	// and mostly win (the tool would run for a caller that has gone).
	err := context.Cause(ctx)
	var pc *keptConn
	var reused bool
	if err == nil {
		pc, reused, err = t.get(ctx, addr)
	}
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.sendOn(ctx, pc, req)
	var notSent errNothingWritten
	if err != nil && reused && errors.As(err, &notSent) && req.GetBody != nil && ctx.Err() == nil {
		// The kept connection failed before a byte of the request went
		// out: once more, on a new one. (A server's close shows in the
		// read instead, which alive makes rare, and fails the request
		// as it does with net/http.)
		retry := *req
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
		if pc, err = t.dialConn(ctx, addr); err != nil {
			_ = retry.Body.Close()
			return nil, err
		}
		resp, err = t.sendOn(ctx, pc, &retry)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// sendOn writes req on pc and reads the answer's head; the body is
// read by the caller, and pc goes back to be kept when the body is read
// to its end and closed.
func (t *Transport) sendOn(ctx context.Context, pc *keptConn, req *http.Request) (*http.Response, error) {
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
	before := pc.written.n
	err := req.Write(pc.bw)
	if err == nil {
		err = pc.bw.Flush()
	}
	if err != nil {
		if pc.written.n == before {
			return fail(errNothingWritten{err})
		}
		// A server may answer (413, 401) and close before it read the
		// whole request: its answer, if it came, says more than the
		// write's error. net/http waits as long for it.
		pc.readDeadline(time.Now().Add(earlyAnswerWait))
		if resp, rerr := http.ReadResponse(pc.br, req); rerr == nil && resp.StatusCode >= 200 {
			pc.readDeadline(time.Time{})
			resp.Body = &answerBody{body: resp.Body, t: t, pc: pc, ctx: ctx, stop: stop, keep: false}
			return resp, nil
		}
		return fail(err)
	}
	if t.headerTimeout > 0 {
		pc.readDeadline(time.Now().Add(t.headerTimeout))
	}
	resp, err := http.ReadResponse(pc.br, req)
	for interim := 0; err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols; interim++ {
		// An interim answer (103 Early Hints): the answer follows. As
		// many as net/http takes, so that a server cannot keep the
		// request going with them.
		if interim == maxInterimAnswers {
			err = errors.New("too many interim (1xx) answers")
			break
		}
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
	if resp.Body == http.NoBody {
		// Nothing to read (a notification's 202): the connection is
		// free now; mcp-go closes such bodies unread.
		if stop() && keep {
			t.put(pc)
		} else {
			_ = pc.conn.Close()
		}
		return resp, nil
	}
	resp.Body = &answerBody{body: resp.Body, t: t, pc: pc, ctx: ctx, stop: stop, keep: keep}
	return resp, nil
}

// earlyAnswerWait is how long an answer is waited for after a request's
// write failed part of the way (net/http's 50 ms).
const earlyAnswerWait = 50 * time.Millisecond

// maxInterimAnswers is how many 1xx answers net/http's Transport reads
// before an answer (max1xxResponses).
const maxInterimAnswers = 5

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
func (t *Transport) get(ctx context.Context, addr string) (*keptConn, bool, error) {
	for {
		t.mu.Lock()
		t.closeIdle = false
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

func (t *Transport) dialConn(ctx context.Context, addr string) (*keptConn, error) {
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	written := &countingWriter{conn: conn}
	return &keptConn{conn: conn, written: written, addr: addr, br: bufio.NewReader(conn), bw: bufio.NewWriter(written)}, nil
}

// put keeps a connection whose answer was read to its end, up to
// maxIdle of them, and has a sweep close it once idle for idleTimeout.
func (t *Transport) put(pc *keptConn) {
	t.mu.Lock()
	// Taken under the lock, so that the stack is ordered by it (sweep).
	pc.idleSince = time.Now()
	if len(t.idle) < t.maxIdle && !t.closeIdle {
		t.idle = append(t.idle, pc)
		pc = nil
		if !t.sweeping {
			t.sweeping = true
			time.AfterFunc(t.idleTimeout, t.sweep)
		}
	}
	t.mu.Unlock()
	if pc != nil {
		_ = pc.conn.Close()
	}
}

// sweep closes the connections idle for idleTimeout (the oldest are at
// the bottom of the stack, which reuse takes from the top) and comes
// back when the oldest left is due.
func (t *Transport) sweep() {
	now := time.Now()
	t.mu.Lock()
	due := 0
	for due < len(t.idle) && now.Sub(t.idle[due].idleSince) >= t.idleTimeout {
		due++
	}
	old := append([]*keptConn(nil), t.idle[:due]...)
	t.idle = append(t.idle[:0], t.idle[due:]...)
	clear(t.idle[len(t.idle):cap(t.idle)])
	t.sweeping = len(t.idle) > 0
	if t.sweeping {
		time.AfterFunc(t.idleTimeout-now.Sub(t.idle[0].idleSince), t.sweep)
	}
	t.mu.Unlock()
	for _, pc := range old {
		_ = pc.conn.Close()
	}
}

// Kept is how many connections are kept for reuse, for tests that check
// a session's calls go out on the connection the last one left.
func (t *Transport) Kept() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.idle)
}

// CloseIdleConnections closes the kept connections, and next's; a
// connection whose answer ends before the next request is closed too.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.closeIdle = true
	t.mu.Unlock()
	for _, pc := range idle {
		_ = pc.conn.Close()
	}
	t.next.CloseIdleConnections()
}

// answerBody is an answer's body on a kept connection. Reads and Close
// may come from different goroutines (drainAndClose closes from a timer).
type answerBody struct {
	body io.ReadCloser
	t    *Transport
	pc   *keptConn
	ctx  context.Context
	stop func() bool
	keep bool

	mu sync.Mutex
	// ended says the body was read to its end; clean, that the cancel
	// was let go of then, before it ran.
	ended, clean bool
	closed       bool
}

func (b *answerBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		// The exchange is over: a cancel from now on has nothing left to
		// end on this connection (mcp-go's transport cancels a request's
		// context before it closes the body).
		b.mu.Lock()
		if !b.ended {
			b.ended, b.clean = true, b.stop()
		}
		b.mu.Unlock()
	case err != nil && b.ctx.Err() != nil:
		err = context.Cause(b.ctx)
	}
	return n, err
}

// Close keeps the connection when the body was read to its end before
// any cancel; otherwise it closes the connection, which also ends a read
// blocked on it (an event stream that stays open).
func (b *answerBody) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	ended, clean := b.ended, b.clean
	b.mu.Unlock()
	if !ended {
		_ = b.pc.conn.Close()
		b.stop()
	}
	_ = b.body.Close()
	if clean && b.keep {
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

// listenStream says a request with header opens the subscriptions/listen
// stream, which lives as long as the session: net/http's to hold, not the
// Transport's.
func listenStream(header http.Header) bool {
	return header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen)
}
