package mcpclient

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Pool holds long-lived sessions keyed by the caller's name for a server.
// A session is replaced only when it cannot serve anyone any more: its
// target's fingerprint changed (spec, Secret), it ended (its stream broke,
// the server forgot it), or its owner dropped it. One request's failure
// never ends a session, and a replaced session finishes the requests it
// carries before it closes. It is safe for concurrent use.
type Pool struct {
	// Hold decides which sessions are kept after use; the others are the
	// caller's to Close. Nil keeps all.
	Hold func(ServerInfo) bool
	// OnEvent, if set, is called (never blocking the MCP library) when a
	// held server says its tools, prompts or resources changed or a held
	// session is lost. A pool without it asks no server for list changes:
	// in 2026-07-28 that is a subscriptions/listen stream per server, a
	// socket at both ends and its buffers held for nothing.
	OnEvent func(key string)
	// Owner names the pool's user in HeldSessions.
	Owner string

	mu       sync.Mutex
	sessions map[string]pooled
	// connecting holds the connect under way per key, so concurrent
	// callers share one session instead of racing to open several. An
	// entry lives only while its connect does.
	connecting map[string]*connectAttempt
}

type pooled struct {
	fingerprint string
	session     *Session
}

// connectAttempt is one connect under way for a key. Callers that want
// the same key meanwhile wait for it, each no longer than its own context,
// instead of connecting again one after another: a server that never
// answers costs every caller one timeout, not one per caller ahead of it.
type connectAttempt struct {
	fingerprint string
	done        chan struct{}
	// waiters counts the callers waiting on it (tests read it).
	waiters int
	// err is the connect's failure; shared says it was the server's, not
	// the context of the caller that connected, so the waiters may have it
	// too.
	err    error
	shared bool
	// dropped: Drop ran while connecting, so the session is not held.
	dropped bool
}

// Get returns the held session for key if it still matches the target's
// fingerprint and is alive; otherwise it connects anew, or waits for the
// connect another caller has under way. The second result is true when
// the session is not held and the caller must Close it.
func (p *Pool) Get(ctx context.Context, key string, t Target) (*Session, bool, error) {
	for {
		s, a, lead := p.join(key, t.Fingerprint)
		switch {
		case s != nil:
			return s, false, nil
		case lead:
			return p.connect(ctx, key, t, a)
		}
		select {
		case <-a.done:
		case <-ctx.Done():
			p.leave(a)
			return nil, false, &Error{Kind: ErrTimeout, Err: ctx.Err(),
				Message: fmt.Sprintf("%s: the call ended while waiting for the connection to the server", t.redactedURL())}
		}
		p.leave(a)
		if a.err != nil && a.shared && a.fingerprint == t.Fingerprint {
			return nil, false, a.err
		}
		// Connected (held, or the other caller's to use alone), or failed
		// for a reason of the other caller's: look again.
	}
}

// join returns the live session held for key with this fingerprint, or
// the connect under way for key to wait for, or a new one for the caller
// to lead (true).
func (p *Pool) join(key, fingerprint string) (*Session, *connectAttempt, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.liveLocked(key, fingerprint); ok {
		return s, nil, false
	}
	if a, ok := p.connecting[key]; ok {
		a.waiters++
		return nil, a, false
	}
	a := &connectAttempt{fingerprint: fingerprint, done: make(chan struct{})}
	p.connecting[key] = a
	return nil, a, true
}

func (p *Pool) leave(a *connectAttempt) {
	p.mu.Lock()
	a.waiters--
	p.mu.Unlock()
}

// connect opens the session of an attempt the caller leads and tells its
// waiters how it went.
func (p *Pool) connect(ctx context.Context, key string, t Target, a *connectAttempt) (*Session, bool, error) {
	p.release(key) // a session held for key is of another fingerprint, or dead
	var onListChanged func()
	if p.OnEvent != nil {
		onListChanged = func() { p.event(key) }
	}
	session, err := Connect(ctx, t, onListChanged)
	hold := err == nil && (p.Hold == nil || p.Hold(session.Info()))
	p.mu.Lock()
	delete(p.connecting, key)
	a.err, a.shared = err, ctx.Err() == nil
	hold = hold && !a.dropped
	if hold {
		p.sessions[key] = pooled{fingerprint: t.Fingerprint, session: session}
	}
	p.mu.Unlock()
	close(a.done)
	switch {
	case err != nil:
		return nil, false, err
	case !hold:
		return session, true, nil
	}
	p.counted(1)
	go p.watchLoss(key, session, time.Now())
	return session, false, nil
}

// Do runs fn on the session for key. A failure that certainly happened
// before the server saw the request (see NotDelivered) is tried once more,
// on a fresh session if the old one ended; any other failure is fn's to
// report, since the server may have acted on it. A request that could not
// be authorized is not tried again: a new session gets no other token.
func (p *Pool) Do(ctx context.Context, key string, t Target, fn func(*Session) error) error {
	for attempt := 0; ; attempt++ {
		s, closeAfter, err := p.Get(ctx, key, t)
		if err == nil {
			err = fn(s)
			if closeAfter {
				s.Close()
			}
		}
		if err == nil || attempt > 0 || !NotDelivered(err) || authFailure(err) {
			return err
		}
	}
}

// liveLocked returns the live session held for key with this
// fingerprint; p.mu is held.
func (p *Pool) liveLocked(key, fingerprint string) (*Session, bool) {
	if p.sessions == nil {
		p.sessions = map[string]pooled{}
		p.connecting = map[string]*connectAttempt{}
	}
	h, ok := p.sessions[key]
	if !ok || h.fingerprint != fingerprint {
		return nil, false
	}
	select {
	case <-h.session.Done():
		return nil, false
	default:
		return h.session, true
	}
}

func (p *Pool) event(key string) {
	if p.OnEvent != nil {
		go p.OnEvent(key)
	}
}

// lossDamping is how soon after a session opened its loss may be reported:
// a server that drops every stream at once makes its owner reconnect every
// few seconds, not in a busy loop.
const lossDamping = 5 * time.Second

// watchLoss forgets a held session that ended, if it is still the one
// held (a newer one is left alone), and says so, so that the next use
// reconnects and a controller can report the server down at once.
func (p *Pool) watchLoss(key string, session *Session, opened time.Time) {
	<-session.Done()
	p.mu.Lock()
	h, ok := p.sessions[key]
	stillHeld := ok && h.session == session
	if stillHeld {
		delete(p.sessions, key)
	}
	p.mu.Unlock()
	if stillHeld {
		p.counted(-1)
	}
	session.retire()
	if !stillHeld {
		return
	}
	time.Sleep(lossDamping - time.Since(opened))
	p.event(key)
}

// Drop forgets the session of key, if any; it closes once the requests it
// carries have ended, without Drop waiting on it (see retire). A connect
// under way for key is not held when done.
func (p *Pool) Drop(key string) {
	p.mu.Lock()
	if a, connecting := p.connecting[key]; connecting {
		a.dropped = true
	}
	p.mu.Unlock()
	p.release(key)
}

// DropPrefix drops the sessions of every key that starts with prefix (a
// deleted server's sessions, one per caller), as Drop does each.
func (p *Pool) DropPrefix(prefix string) {
	p.mu.Lock()
	var keys []string
	for key := range p.sessions {
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
	}
	for key, a := range p.connecting {
		if strings.HasPrefix(key, prefix) {
			a.dropped = true
		}
	}
	p.mu.Unlock()
	for _, key := range keys {
		p.release(key)
	}
}

// release forgets and retires the session held for key, if any.
func (p *Pool) release(key string) {
	if s := p.take(key); s != nil {
		s.retire()
	}
}

// take forgets the session held for key and returns it, nil when none.
func (p *Pool) take(key string) *Session {
	p.mu.Lock()
	h, ok := p.sessions[key]
	delete(p.sessions, key)
	p.mu.Unlock()
	if !ok {
		return nil
	}
	p.counted(-1)
	return h.session
}

// HeldSessions counts the sessions pools hold open to MCP servers, by
// owner. Its user registers it (this package knows no metrics registry).
var HeldSessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "mcp_upstream_sessions",
	Help: "Sessions this replica holds open to MCP servers, by owner: controller (discovery and list_changed) or catalog (tool calls).",
}, []string{"owner"})

func (p *Pool) counted(delta int) {
	if p.Owner != "" {
		HeldSessions.WithLabelValues(p.Owner).Add(float64(delta))
	}
}

// Held reports whether a session is held for key.
func (p *Pool) Held(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.sessions[key]
	return ok
}

// connectsUnderWay reports how many keys have a connect under way, for
// tests that check nothing is left behind.
func (p *Pool) connectsUnderWay() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.connecting)
}

// CloseAll ends every held session at once, requests in flight included:
// the owner is shutting down.
func (p *Pool) CloseAll() {
	p.mu.Lock()
	held := p.sessions
	p.sessions = map[string]pooled{}
	p.mu.Unlock()
	p.counted(-len(held))
	for _, h := range held {
		h.session.Close()
	}
}
