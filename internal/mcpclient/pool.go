package mcpclient

import (
	"context"
	"sync"
	"time"
)

// Pool holds long-lived sessions keyed by the caller's name for a server
// and a fingerprint of its endpoint: a changed endpoint (spec, Secret)
// makes a new fingerprint, which closes the old session. It is safe for
// concurrent use.
type Pool struct {
	// Hold decides which sessions are kept after use; the others are the
	// caller's to Close. Nil keeps all.
	Hold func(ServerInfo) bool
	// OnEvent, if set, is called (never blocking the MCP library) when a
	// held server says its tools changed or a held session is lost.
	OnEvent func(key string)

	mu       sync.Mutex
	sessions map[string]pooled
	// connecting serializes connects per key, so concurrent callers share
	// one session instead of racing to open several.
	connecting map[string]*sync.Mutex
}

type pooled struct {
	fingerprint string
	session     *Session
}

// Get returns the held session for key if it still matches the
// fingerprint and is alive; otherwise it connects anew. The second result
// is true when the session is not held and the caller must Close it.
func (p *Pool) Get(ctx context.Context, key string, ep Endpoint, fingerprint string) (*Session, bool, error) {
	if s, ok := p.held(key, fingerprint); ok {
		return s, false, nil
	}
	lock := p.connectLock(key)
	lock.Lock()
	defer lock.Unlock()
	if s, ok := p.held(key, fingerprint); ok {
		return s, false, nil
	}
	p.Drop(key)

	session, err := Connect(ctx, ep, func() { p.event(key) })
	if err != nil {
		return nil, false, err
	}
	if p.Hold != nil && !p.Hold(session.Info()) {
		return session, true, nil
	}
	p.mu.Lock()
	p.sessions[key] = pooled{fingerprint: fingerprint, session: session}
	p.mu.Unlock()
	go p.watchLoss(key, session, time.Now())
	return session, false, nil
}

// held returns the live session for key with this fingerprint.
func (p *Pool) held(key, fingerprint string) (*Session, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions == nil {
		p.sessions = map[string]pooled{}
		p.connecting = map[string]*sync.Mutex{}
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

func (p *Pool) connectLock(key string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.connecting[key]
	if !ok {
		l = &sync.Mutex{}
		p.connecting[key] = l
	}
	return l
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

// watchLoss forgets a held session whose stream was lost and says so, so
// that the next use reconnects (and a controller can report the server
// down at once).
func (p *Pool) watchLoss(key string, session *Session, opened time.Time) {
	<-session.Done()
	p.mu.Lock()
	h, ok := p.sessions[key]
	stillHeld := ok && h.session == session
	if stillHeld {
		delete(p.sessions, key)
	}
	p.mu.Unlock()
	if !stillHeld {
		return
	}
	time.Sleep(lossDamping - time.Since(opened))
	p.event(key)
}

// Drop closes and forgets the session of key, if any.
func (p *Pool) Drop(key string) {
	p.mu.Lock()
	h, ok := p.sessions[key]
	delete(p.sessions, key)
	p.mu.Unlock()
	if ok {
		h.session.Close()
	}
}

// Held reports whether a session is held for key.
func (p *Pool) Held(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.sessions[key]
	return ok
}

// CloseAll ends every held session.
func (p *Pool) CloseAll() {
	p.mu.Lock()
	held := p.sessions
	p.sessions = map[string]pooled{}
	p.mu.Unlock()
	for _, h := range held {
		h.session.Close()
	}
}
