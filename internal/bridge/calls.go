package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

const (
	// maxCalls bounds the requests in flight to the child from all clients.
	maxCalls = 4096
	// progressQueue bounds the progress notifications waiting for a caller
	// that is slow to read them; more are dropped (progress is advisory).
	progressQueue = 64
)

// call is one request in flight to the child. Its id is the bridge's own,
// unique for the bridge's lifetime (across restarts too, so a late answer
// from a dead child can never match a new request), and doubles as its
// progress token towards the child.
type call struct {
	id       int64
	session  *session        // nil for the bridge's own requests
	request  message         // as the client sent it, under the client's id
	token    json.RawMessage // the client's progressToken; nil when it asked for none
	reply    chan reply      // receives exactly one reply, from whoever removes the call
	progress chan []byte     // progress notifications, already addressed to the client
	// written is set once the request went into the child's stdin. A
	// request not written when the child exits goes to the next child; one
	// written may have been read and acted on, so it is never sent twice.
	written atomic.Bool
	// parked (guarded by upstream.mu) says the child exited before the
	// request was written: the call stays in upstream.calls, where a
	// cancel or its session's end finds it, until resend takes it.
	parked bool
	// asks carries the child's requests relayed to this call's client, and
	// the child's cancellations of them, already addressed to the client
	// (relay.go). It is nil unless the call may ask (mayAsk) and its
	// client can be sent requests while it runs.
	asks chan []byte
	// relays (guarded by upstream.mu) counts the relayed requests waiting
	// for this call's client.
	relays int
}

// forward sends a client's request to the child, waiting (bounded) for the
// child to be ready. It returns the call to await, or the reply when the
// request could not be sent. canAsk says the client can be sent requests
// while the call runs.
func (u *upstream) forward(ctx context.Context, s *session, m message, canAsk bool) (*call, *reply) {
	for {
		if _, r := u.waitReady(ctx); r != nil {
			return nil, r
		}
		c, proc, msg, r := u.register(s, m, canAsk)
		if r != nil {
			return nil, r
		}
		if c == nil {
			continue // the child went down after waitReady: wait for the next
		}
		// A child that exited first never got the request: setDown, which
		// follows every exit, hands it to the next child.
		if err := proc.send(ctx, msg, &c.written); err != nil && !errors.Is(err, errExited) {
			u.finish(c.id, errorReply(codeServerExited, "could not send the request to the MCP server: %v", err))
		}
		return c, nil
	}
}

// register gives a request its id and encodes it for the child. It returns no
// call when the child is not ready.
func (u *upstream) register(s *session, m message, canAsk bool) (*call, *child, []byte, *reply) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.init == nil || u.proc == nil {
		return nil, nil, nil, nil
	}
	if len(u.calls) >= maxCalls {
		r := errorReply(codeOverloaded, "%d requests are in flight to the MCP server, the most the bridge takes", maxCalls)
		return nil, nil, nil, &r
	}
	params, err := u.paramsFor(s, m)
	if err != nil {
		r := errorReply(codeInvalidParams, "%v", err)
		return nil, nil, nil, &r
	}
	u.lastID++
	c := &call{id: u.lastID, session: s, request: m, reply: make(chan reply, 1)}
	if canAsk && mayAsk(m.Method) {
		c.asks = make(chan []byte, askQueue)
	}
	if c.token = wire.ProgressTokenOf(params); c.token != nil {
		c.progress = make(chan []byte, progressQueue)
		if params, err = wire.WithRequestProgressToken(params, json.RawMessage(strconv.FormatInt(c.id, 10))); err != nil {
			r := errorReply(codeInvalidParams, "%v", err)
			return nil, nil, nil, &r
		}
	}
	u.calls[c.id] = c
	return c, u.proc, encodeRequest(c.id, m.Method, params), nil
}

// paramsFor rewrites what must change for the child to be shared. A client's
// log level is its own: the session keeps it to filter by, and the child is
// asked for the most verbose level any client wants. Callers hold u.mu.
func (u *upstream) paramsFor(s *session, m message) (json.RawMessage, error) {
	if m.Method != string(mcp.MethodSetLogLevel) {
		return m.Params, nil
	}
	var p struct {
		Level string `json:"level"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || wire.LogLevelRank(p.Level) < 0 {
		return nil, errors.New("logging/setLevel needs a level such as \"info\"")
	}
	s.setLogLevel(p.Level)
	if u.logLevel == "" || wire.LogLevelRank(p.Level) < wire.LogLevelRank(u.logLevel) {
		u.logLevel = p.Level
	}
	level, _ := wire.Marshal(u.logLevel)
	return wire.SetMember(m.Params, "level", level)
}

// registerOwn registers a request of the bridge's own, sent whether or not
// the child is ready (initialize).
func (u *upstream) registerOwn() *call {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.lastID++
	c := &call{id: u.lastID, reply: make(chan reply, 1)}
	u.calls[c.id] = c
	return c
}

// finish hands a call its reply, if it is still waiting for one.
func (u *upstream) finish(id int64, r reply) bool {
	u.mu.Lock()
	c, ok := u.calls[id]
	delete(u.calls, id)
	delete(u.lingering, id) // answered: the child is done with it
	u.mu.Unlock()
	if ok {
		c.reply <- r
	}
	return ok
}

// await waits for a call's reply, following the request to the next child
// if the one it was queued for exited before it was written. When ctx ends first
// the call is cancelled towards the child; the reply is then a timeout
// error, or none (false) when the client went away.
func (u *upstream) await(ctx context.Context, c *call) (reply, bool) {
	for {
		var r reply
		select {
		case r = <-c.reply:
		case <-ctx.Done():
			if u.abandon(c, "the client stopped waiting") {
				return u.stoppedWaiting(ctx)
			}
			r = <-c.reply // answered meanwhile
		}
		if !r.resend {
			return r, true
		}
		var ok bool
		if c, r, ok = u.resend(ctx, c); c == nil {
			return r, ok
		}
	}
}

// resend sends a request that was never written to a child that exited on
// to the next child, waiting for it as a new request does (up to ReadyWait, and within
// the request's own deadline). It returns the call to wait on instead, or,
// with no call, the reply to give (none, false, when the client went away).
func (u *upstream) resend(ctx context.Context, c *call) (*call, reply, bool) {
	u.mu.Lock()
	_, parked := u.calls[c.id]
	delete(u.calls, c.id)
	c.parked = false
	u.mu.Unlock()
	// The child that exited never had the request, but a request of its
	// own may have been relayed for it while it was queued.
	u.endRelays(c, "the MCP server that sent it exited")
	if !parked {
		// Cancelled, or its session ended, while it waited for the next
		// child: whoever took it sends that reply.
		return nil, <-c.reply, true
	}
	if ctx.Err() != nil {
		r, ok := u.stoppedWaiting(ctx)
		return nil, r, ok
	}
	u.log.Debug("Sending a request the exited MCP server never got to the next one",
		"method", c.request.Method, "session", c.session.logID())
	// Only a call that may ask keeps whether its client can be asked.
	next, r := u.forward(ctx, c.session, c.request, c.asks != nil)
	if r != nil {
		return nil, *r, true
	}
	return next, reply{}, true
}

// stoppedWaiting is the reply to a request whose ctx ended: a timeout error,
// or none (false) when the client went away.
func (u *upstream) stoppedWaiting(ctx context.Context) (reply, bool) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errorReply(codeTimeout, "the MCP server did not answer within %s; the request was cancelled", u.opts.RequestTimeout), true
	}
	return reply{}, false
}

// abandon forgets a call no one waits for any more and tells the child, so it
// can stop working on it. It reports false if the call had its reply already.
func (u *upstream) abandon(c *call, reason string) bool {
	u.mu.Lock()
	_, ok := u.calls[c.id]
	delete(u.calls, c.id)
	if ok {
		u.linger(c)
	}
	proc := u.proc
	u.mu.Unlock()
	if ok {
		u.sendBestEffort(proc, cancelled(c.id, reason))
	}
	return ok
}

// cancel handles a client's notifications/cancelled: the child is told with
// the bridge's id for the request, and the waiting request ends.
func (u *upstream) cancel(s *session, params json.RawMessage) {
	requestID := wire.Member(params, "requestId")
	var reason string
	_ = json.Unmarshal(wire.Member(params, "reason"), &reason)
	u.mu.Lock()
	var found *call
	for id, c := range u.calls {
		if c.session == s && wire.SameID(c.request.ID, requestID) {
			found = c
			delete(u.calls, id)
			u.linger(c)
			break
		}
	}
	proc := u.proc
	u.mu.Unlock()
	if found == nil {
		return
	}
	u.sendBestEffort(proc, cancelled(found.id, reason))
	found.reply <- errorReply(codeCancelled, "the request was cancelled by the client")
}

// notify passes a client's notification to the child if one is ready; a
// notification has no answer to fail with.
func (u *upstream) notify(m message) {
	u.mu.Lock()
	proc := u.proc
	ready := u.init != nil
	u.mu.Unlock()
	if ready {
		u.sendBestEffort(proc, encodeNotification(m.Method, m.Params))
	}
}

// endSession cancels the calls of a session that ended.
func (u *upstream) endSession(s *session) {
	u.mu.Lock()
	var gone []*call
	for id, c := range u.calls {
		if c.session == s {
			gone = append(gone, c)
			delete(u.calls, id)
			u.linger(c)
		}
	}
	proc := u.proc
	u.mu.Unlock()
	for _, c := range gone {
		u.sendBestEffort(proc, cancelled(c.id, "the client's session ended"))
		c.reply <- errorReply(codeCancelled, "the session ended")
	}
}

func cancelled(id int64, reason string) []byte {
	params, _ := wire.Marshal(struct {
		RequestID int64  `json:"requestId"`
		Reason    string `json:"reason,omitempty"`
	}{id, reason})
	return encodeNotification(string(mcp.MethodNotificationCancelled), params)
}
